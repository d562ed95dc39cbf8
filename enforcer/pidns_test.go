package enforcer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
	"github.com/sysprof/sysprof/sandbox"
)

// nobodyEnv names a helper of this file that TestMain runs when the test binary is re-executed
// as nobody (the ordinary-user half of a test).
const nobodyEnv = "SYSPROF_TEST_AS_NOBODY"

var nobodyHelpers = map[string]func(victim, work string) error{
	"processes": processChecks,
	"proc":      procChecks,
	"init":      initChecks,
}

// processBox is a 0755 directory nobody can use: the victim and a work tree with a writable
// out/ (owned by uid, gid).
func processBox(t *testing.T, uid, gid int) (victim, work string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "sysprof-pidns-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	victim = filepath.Join(dir, "escape")
	if err := copyFile(testutil.BuildC(t, "escape/escape.c"), victim, 0o755); err != nil {
		t.Fatal(err)
	}
	work = filepath.Join(dir, "work")
	boundOut(t, work, filepath.Join(dir, "out"), uid, gid)
	return victim, work
}

// asNobody runs the named helper in a copy of the test binary as uid 65534.
func asNobody(t *testing.T, helper, victim, work string) {
	t.Helper()
	self, _ := os.Executable()
	bin := filepath.Join(filepath.Dir(victim), "enforcer.test")
	if err := copyFile(self, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), nobodyEnv+"="+helper, "SYSPROF_TEST_VICTIM="+victim, "SYSPROF_TEST_WORK="+work, "HOME="+filepath.Dir(victim))
	cmd.Dir = work
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
}

func processProfile(victim string) *policy.Profile {
	ld, _ := filepath.EvalSymlinks("/lib64/ld-linux-x86-64.so.2")
	p := victimProfile()
	p.Syscalls.Allow = append(p.Syscalls.Allow, victimForkSyscalls()...)
	p.Syscalls.Allow = append(p.Syscalls.Allow, policy.Syscall{Name: "setsid"}, policy.Syscall{Name: "pipe"}, policy.Syscall{Name: "pipe2"})
	p.Filesystem = policy.Filesystem{
		Read:  []policy.PathRule{{Path: "/usr"}, {Path: "/etc"}, {Path: "/proc"}, {Path: "$WORKDIR"}},
		Write: []policy.PathRule{{Path: filepath.Join(filepath.Dir(victim), "out")}, {Path: "/dev/null"}}, // processBox's out/
		Exec:  []policy.PathRule{{Path: victim}, {Path: ld}},
	}
	return p
}

// TestDaemonDiesWithRun: a setsid, double-forked daemon the command leaves behind is killed when
// the command exits (the PID namespace dies with its PID 1), and host processes are invisible;
// the command's own child that exits normally works and its exit status is the run's. Root and
// ordinary user.
func TestDaemonDiesWithRun(t *testing.T) {
	testutil.RequireRoot(t)
	t.Run("root", func(t *testing.T) {
		victim, work := processBox(t, 0, 0)
		if err := processChecks(victim, work); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("ordinary user", func(t *testing.T) {
		victim, work := processBox(t, 65534, 65534)
		asNobody(t, "processes", victim, work)
	})
}

func processChecks(victim, work string) error {
	fifo := filepath.Join(work, "out", "fifo")
	os.Remove(fifo)
	if err := unix.Mkfifo(fifo, 0o666); err != nil {
		return err
	}
	os.Chmod(fifo, 0o666)
	// Open for reading without blocking: EOF comes once every writer (the daemon) is gone.
	r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer r.Close()
	host := fmt.Sprintf("/proc/%d/status", os.Getpid())
	var out strings.Builder
	_, code, err := Run(context.Background(), Options{Profile: processProfile(victim), Dir: work, Stdout: &out, Stderr: &out,
		Command: []string{victim, "daemon=out/fifo", "fork", "write=out/child.txt", "read=" + host, "read=/proc/self/status", "exit=7"}})
	if err != nil || code != 7 {
		return fmt.Errorf("run: exit %d (want the command's 7), err %v\n%s", code, err, out.String())
	}
	var errs []error
	if want := "daemon: ok\nwrite: ok\nread: ENOENT\nread: ok\n"; out.String() != want {
		errs = append(errs, fmt.Errorf("output %q, want %q (daemon started, child wrote, sysprof's own pid invisible, own /proc readable)", out.String(), want))
	}
	// The daemon wrote nothing: a read returns EOF once it is dead, or waits while it lives.
	r.SetReadDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.ReadAll(r); err != nil {
		errs = append(errs, fmt.Errorf("the daemon survived the run (it still holds the FIFO open): %w", err))
	}
	return errors.Join(errs...)
}

// TestProcSysReadOnly: whatever the profile says, /proc/sys stays read-only (uid 0 needs no
// capability to write /proc/sys/kernel/core_pattern, whose "|program" runs as host root),
// while a learned write to /proc/self/oom_score_adj works, for the command and its child, and
// for that file only: its own /proc/self/timerslack_ns and the init stage's oom_score_adj stay
// read-only. The victim writes each file's own content back, harmless should it get through.
// Root and ordinary user.
func TestProcSysReadOnly(t *testing.T) {
	testutil.RequireRoot(t)
	t.Run("root", func(t *testing.T) {
		victim, work := processBox(t, 0, 0)
		if err := procChecks(victim, work); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("ordinary user", func(t *testing.T) {
		victim, work := processBox(t, 65534, 65534)
		asNobody(t, "proc", victim, work)
	})
}

func procChecks(victim, work string) error {
	p := processProfile(victim)
	p.Filesystem.Write = append(p.Filesystem.Write, policy.PathRule{Path: "/proc/self/oom_score_adj"}, policy.PathRule{Path: "/proc/sys/kernel/core_pattern"})
	var out strings.Builder
	_, code, err := Run(context.Background(), Options{Profile: p, Dir: work, Stdout: &out, Stderr: &out,
		Command: []string{victim, "rewrite=/proc/self/oom_score_adj", "rewrite=/proc/sys/kernel/core_pattern",
			"rewrite=/proc/self/timerslack_ns", "rewrite=/proc/1/oom_score_adj", "fork", "rewrite=/proc/self/oom_score_adj"}})
	if err != nil || code != 0 {
		return fmt.Errorf("run: exit %d err %v\n%s", code, err, out.String())
	}
	lines := strings.Split(out.String(), "\n")
	if len(lines) < 5 || lines[0] != "rewrite: ok" || lines[4] != "rewrite: ok" {
		return fmt.Errorf("the learned /proc/self/oom_score_adj write failed (command and its child):\n%s", out.String())
	}
	for i, what := range map[int]string{1: "/proc/sys/kernel/core_pattern", 2: "/proc/self/timerslack_ns (its own, not learned)", 3: "/proc/1/oom_score_adj (the init stage's)"} {
		if got := lines[i]; got != "rewrite: EROFS" && got != "rewrite: EACCES" {
			return fmt.Errorf("%s write: %s, want EROFS or EACCES\n%s", what, got, out.String())
		}
	}
	return nil
}

// TestCommandHostUID: as root the command is never host root unless the profile asks. Plain
// root is uid 0 only inside its user namespace: its host uid is sandbox.RootUID (the uid_map),
// yet root's files are its own (it reads a file in a root-owned 0700 directory, and what it
// writes is owned by 0 on disk) through the idmapped replica of the host's mounts. Under sudo
// it is the invoking user; with hostRoot it is host root with no user namespace. The report
// says which.
func TestCommandHostUID(t *testing.T) {
	testutil.RequireRoot(t)
	hostNS, err := os.Readlink("/proc/self/ns/user")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		sudo       bool
		hostRoot   bool
		uid        int    // owner of the work tree, and on disk of what the command writes
		uidMap     string // the command's /proc/self/uid_map: who uid 0 (or the user) is outside
		ownUserNS  bool
		identModel string
	}{
		{"root", false, false, 0, fmt.Sprintf("0 %d 1", sandbox.RootUID), true, "root-idmap"},
		{"sudo", true, false, 65534, "65534 65534 1", true, "sudo"},
		// Root's own tree under sudo: the command is root's (the unsandboxed one is root).
		{"sudo, root's tree", true, false, 0, fmt.Sprintf("0 %d 1", sandbox.RootUID), true, "root-idmap"},
		{"hostRoot", false, true, 0, "0 0 4294967295", false, "host-root"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.sudo {
				t.Setenv("SUDO_UID", "65534")
				t.Setenv("SUDO_GID", "65534")
			} else {
				t.Setenv("SUDO_UID", "")
				t.Setenv("SUDO_GID", "")
			}
			victim, work := processBox(t, tc.uid, tc.uid)
			if err := os.Chown(work, tc.uid, tc.uid); err != nil { // the user's own tree
				t.Fatal(err)
			}
			// A directory only its owner may enter, like root's $HOME.
			private := filepath.Join(work, "private")
			if err := os.Mkdir(private, 0o700); err != nil {
				t.Fatal(err)
			}
			testutil.WriteFile(t, filepath.Join(private, "conf"), "owner only\n", 0o600)
			if err := os.Chown(filepath.Join(private, "conf"), tc.uid, tc.uid); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(private, tc.uid, tc.uid); err != nil {
				t.Fatal(err)
			}
			p := processProfile(victim)
			p.HostRoot = tc.hostRoot
			var out strings.Builder
			rep, code, err := Run(context.Background(), Options{Profile: p, Dir: work, Stdout: &out, Stderr: &out,
				Command: []string{victim, "write=out/f", "readlink=/proc/self/ns/user", "cat=/proc/self/uid_map", "cat=private/conf"}})
			if err != nil || code != 0 {
				t.Fatalf("run: exit %d err %v\n%s", code, err, out.String())
			}
			var st unix.Stat_t
			if err := unix.Stat(filepath.Join(work, "out", "f"), &st); err != nil {
				t.Fatalf("the command's file: %v\n%s", err, out.String())
			}
			if int(st.Uid) != tc.uid || int(st.Gid) != tc.uid {
				t.Errorf("the command's file is owned by host uid/gid %d/%d, want %d", st.Uid, st.Gid, tc.uid)
			}
			lines := strings.Split(out.String(), "\n")
			if len(lines) < 5 {
				t.Fatalf("output %q", out.String())
			}
			ns := strings.TrimPrefix(lines[1], "readlink: ")
			if (ns != hostNS) != tc.ownUserNS {
				t.Errorf("command's user namespace %q, host's %q: want own namespace %v", ns, hostNS, tc.ownUserNS)
			}
			if got := strings.Join(strings.Fields(strings.TrimSuffix(strings.TrimPrefix(lines[2], "cat: ["), "]")), " "); got != tc.uidMap {
				t.Errorf("the command's uid_map is %q, want %q: who it is on the host", got, tc.uidMap)
			}
			if lines[3] != "cat: [owner only]" {
				t.Errorf("a file in its owner's 0700 directory: %q, want it readable (the owner's own)", lines[3])
			}
			want := identity(tc.hostRoot, work, nil).Detail()
			found := false
			for _, l := range rep.Layers {
				found = found || l.Name == LayerUserNS && l.Detail == want && l.State == report.LayerApplied
			}
			for _, n := range rep.Notes {
				found = found || n == "uid: "+want
			}
			if !found || identity(tc.hostRoot, work, nil).Model != tc.identModel {
				t.Errorf("report does not say %q (%s): %+v %v", want, tc.identModel, rep.Layers, rep.Notes)
			}
		})
	}
}

// TestInitStageUnreachable: PID 1 of the sandbox (the init stage, whose other threads hold no
// filter, no Landlock and, as root, capabilities in its user namespace) cannot be attached to,
// read or have its fds taken by the command, even with the syscalls allowed: it is not dumpable
// (Landlock's ptrace scope does not help: PID 1's main thread is in the command's domain). The command's own /proc entries stay readable. Root and ordinary user.
// Yama is off meanwhile (yamaPtraceOff), so that dumpability alone answers the attach.
func TestInitStageUnreachable(t *testing.T) {
	testutil.RequireRoot(t)
	yamaPtraceOff(t)
	t.Run("root", func(t *testing.T) {
		victim, work := processBox(t, 0, 0)
		if err := initChecks(victim, work); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("ordinary user", func(t *testing.T) {
		victim, work := processBox(t, 65534, 65534)
		asNobody(t, "init", victim, work)
	})
}

// yamaPtraceOff sets Yama's ptrace_scope to 0 for the test's duration (restored after): at 1
// or more Yama alone refuses an attach to an ancestor, and the ptrace checks would pass with
// the init stage still dumpable. Without Yama there is nothing to do.
func yamaPtraceOff(t *testing.T) {
	const knob = "/proc/sys/kernel/yama/ptrace_scope"
	b, err := os.ReadFile(knob)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	if err != nil {
		t.Fatalf("read %s: %v", knob, err)
	}
	old := strings.TrimSpace(string(b))
	if old == "0" {
		return
	}
	if err := os.WriteFile(knob, []byte("0"), 0o644); err != nil {
		// 3 cannot be lowered until a reboot: the check cannot tell dumpable from not.
		testutil.RequireNoErr(t, "set Yama ptrace_scope to 0 (it is "+old+")", err)
	}
	t.Cleanup(func() {
		if err := os.WriteFile(knob, []byte(old), 0o644); err != nil {
			t.Errorf("restore Yama ptrace_scope %s: %v", old, err)
		}
	})
}

func initChecks(victim, work string) error {
	p := processProfile(victim)
	for _, s := range []string{"ptrace", "process_vm_readv", "pidfd_open", "pidfd_getfd"} {
		p.Syscalls.Allow = append(p.Syscalls.Allow, policy.Syscall{Name: s})
	}
	var out strings.Builder
	// An attach that gets through leaves PID 1 stopped: the deadline ends that run.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, code, err := Run(ctx, Options{Profile: p, Dir: work, Stdout: &out, Stderr: &out,
		Command: []string{victim, "ptrace=1", "vmread=1", "read=/proc/1/environ", "read=/proc/1/mem", "read=/proc/self/environ", "ok"}})
	if err != nil || code != 0 {
		return fmt.Errorf("run: exit %d err %v\n%s", code, err, out.String())
	}
	if want := "ptrace: EPERM\nvmread: EPERM\nread: EACCES\nread: EACCES\nread: ok\nok\n"; out.String() != want {
		return fmt.Errorf("output %q, want %q", out.String(), want)
	}
	return nil
}
