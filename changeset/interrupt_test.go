package changeset

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/testutil"
)

const helperEnv = "SYSPROF_CHANGESET_HELPER"

// TestHelperProcess is not a test: the child of TestKilledRunFound (a sysprof that begins a
// run, writes into its layer and waits to be killed).
func TestHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) != "begin" {
		return
	}
	w := os.Getenv("SYSPROF_TEST_WORK")
	r, err := Begin(Run{Command: []string{"make"}, WorkDir: w})
	if err == nil {
		_, err = r.AddStage(Rules{Dir: w, Tree: w, Keep: []string{w + "/**"}}, os.Getuid(), os.Getgid())
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(r.Stages[0].Upper, "out.txt"), []byte("survived\n"), 0o644)
	}
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	b, _ := json.Marshal(r.ID)
	fmt.Printf("ready %s\n", b)
	select {}
}

// TestKilledRunFound: a sysprof killed with SIGKILL mid-run leaves its run findable (List says
// interrupted), and its changes apply.
func TestKilledRunFound(t *testing.T) {
	state := filepath.Join(t.TempDir(), "runs")
	t.Setenv("SYSPROF_STATE_DIR", state)
	w := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), helperEnv+"=begin", "SYSPROF_TEST_WORK="+w)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if !strings.HasPrefix(line, "ready ") {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("helper: %q %v", line, err)
	}
	var id string
	_ = json.Unmarshal([]byte(strings.TrimPrefix(strings.TrimSpace(line), "ready ")), &id)

	runs, err := List()
	if err != nil || len(runs) != 1 || runs[0].State != StateRunning {
		t.Fatalf("while its sysprof lives: %v %v, want one running run", runs, err)
	}
	if _, err := runs[0].Apply(ApplyAll, nil); err == nil {
		t.Fatal("applied a run whose sysprof is alive")
	}
	if err := cmd.Process.Signal(unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	runs, err = List()
	if err != nil || len(runs) != 1 || runs[0].ID != id || runs[0].State != StateInterrupted || runs[0].Alive() {
		t.Fatalf("after kill -9: %+v %v, want run %s interrupted", runs, err, id)
	}
	changes, err := runs[0].Scan()
	if err != nil || len(changes) != 1 || changes[0].Rel != "out.txt" {
		t.Fatalf("changes of the interrupted run: %+v %v", changes, err)
	}
	res, err := runs[0].Apply(ApplyLearned, nil)
	if err != nil || len(res.Applied) != 1 {
		t.Fatalf("apply: %+v %v", res, err)
	}
	if b, _ := os.ReadFile(filepath.Join(w, "out.txt")); string(b) != "survived\n" {
		t.Fatalf("out.txt = %q", b)
	}
}

const nsEnv = "SYSPROF_CHANGESET_IN_NS"

// inMountNS reruns the calling test alone in a private mount namespace of its own and returns
// false in the parent; it returns true in that child, which may mount what it likes.
func inMountNS(t *testing.T) bool {
	t.Helper()
	if os.Getenv(nsEnv) == t.Name() {
		return true
	}
	testutil.RequireRoot(t)
	cmd := exec.Command("unshare", "-m", "--propagation", "private", os.Args[0], "-test.run=^"+t.Name()+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), nsEnv+"="+t.Name())
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("in a mount namespace: %v\n%s", err, out)
	}
	return false
}

// TestApplyFullDisk: a disk that fills up mid-apply leaves nothing half-applied: each change is
// there whole or not at all, no temporary file is left, the result says what was applied and
// what is left, and the rest applies once there is room.
func TestApplyFullDisk(t *testing.T) {
	if !inMountNS(t) {
		return
	}
	r, w := newRun(t, nil, []string{"**"})
	if err := unix.Mount("tmpfs", w, "tmpfs", 0, "size=512k,mode=755"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(w, unix.MNT_DETACH) })
	up := r.Stages[0].Upper
	write(t, filepath.Join(up, "a"), strings.Repeat("a", 100<<10), 0o644)
	write(t, filepath.Join(up, "b"), strings.Repeat("b", 1<<20), 0o644)
	write(t, filepath.Join(up, "c"), "c\n", 0o644)
	res, err := r.Apply(ApplyLearned, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Applied) != 1 || res.Applied[0].Rel != "a" || len(res.Held) != 2 || len(res.Errors) == 0 {
		t.Fatalf("on a full disk: %+v, want a applied, b and c held, an error", res)
	}
	ents, _ := os.ReadDir(w)
	if len(ents) != 1 || ents[0].Name() != "a" {
		t.Fatalf("host holds %v, want only a (no half-written b, no temporary file)", ents)
	}
	if m := scan(t, r); len(m) != 2 {
		t.Fatalf("left in the changeset: %v, want b and c", keys(m))
	}
	if err := unix.Mount("tmpfs", w, "tmpfs", unix.MS_REMOUNT, "size=8m"); err != nil {
		t.Fatal(err)
	}
	res, err = r.Apply(ApplyLearned, nil)
	if err != nil || len(res.Applied) != 2 || len(res.Errors) > 0 {
		t.Fatalf("with room again: %+v %v", res, err)
	}
	if b, _ := os.ReadFile(filepath.Join(w, "b")); len(b) != 1<<20 {
		t.Fatalf("b has %d bytes", len(b))
	}
}

// TestAsOrdinaryUser: an ordinary user's run (no root anywhere) begins, finds its layers a
// place, and applies a hand-made changeset with the same protections: the set-user-ID bit it
// may set on its own file is stripped, a symlink out of the tree is refused, the rest applies.
func TestAsOrdinaryUser(t *testing.T) {
	if os.Getenv(helperEnv) == "nobody" {
		asNobody(t)
		return
	}
	testutil.RequireRoot(t)
	dir, err := os.MkdirTemp("", "changeset-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	bin := filepath.Join(dir, "changeset.test")
	if err := copyExe(os.Args[0], bin); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o755); err != nil || os.Chmod(dir, 0o755) != nil || os.Chown(home, 65534, 65534) != nil {
		t.Fatalf("setup: %v", err)
	}
	cmd := exec.Command(bin, "-test.run=^TestAsOrdinaryUser$", "-test.v")
	cmd.Dir = home
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "TMPDIR=" + home, helperEnv + "=nobody", "CI=" + os.Getenv("CI")}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestAsOrdinaryUser") {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
}

func copyExe(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o755)
}

func asNobody(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Fatal("the helper runs as root")
	}
	home := os.Getenv("HOME")
	w := filepath.Join(home, "w")
	write(t, filepath.Join(w, "src.c"), "int main;\n", 0o644)
	time.Sleep(20 * time.Millisecond)
	r, err := Begin(Run{Command: []string{"make"}, WorkDir: w})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(r.Dir(), filepath.Join(home, ".local/state/sysprof/runs")+"/") {
		t.Errorf("run directory %s is not in the user's state directory", r.Dir())
	}
	s, err := r.AddStage(Rules{Dir: w, Tree: w, Keep: []string{w + "/build/**"}, ExecOK: []string{w + "/build"}}, os.Getuid(), os.Getgid())
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(s.Upper, "build/app"), "#!/bin/sh\n", 0o755)
	if err := os.Chmod(filepath.Join(s.Upper, "build/app"), 0o755|os.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(s.Upper, "build/ok.o"), "o\n", 0o644)
	if err := os.Symlink("/etc/shadow", filepath.Join(s.Upper, "build/shadow")); err != nil {
		t.Fatal(err)
	}
	res, err := r.Apply(ApplyAll, []string{filepath.Join(w, "build/app"), filepath.Join(w, "build/shadow")})
	if err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(filepath.Join(w, "build/app"), &st); err != nil || st.Mode&0o6000 != 0 {
		t.Errorf("build/app: mode %o, %v: the set-user-ID bit reached the host", st.Mode&0o7777, err)
	}
	if _, err := os.Lstat(filepath.Join(w, "build/shadow")); err == nil {
		t.Error("a symlink to /etc/shadow reached the host")
	}
	if _, err := os.Stat(filepath.Join(w, "build/ok.o")); err != nil {
		t.Errorf("the ordinary output did not apply: %+v", res)
	}
	// A directory the command made unreadable does not stop the rest from applying.
	locked := filepath.Join(s.Upper, "build/locked")
	write(t, filepath.Join(locked, "x"), "x\n", 0o644)
	write(t, filepath.Join(s.Upper, "build/after.o"), "o\n", 0o644)
	if err := os.Chmod(locked, 0); err != nil {
		t.Fatal(err)
	}
	res, err = r.Apply(ApplyLearned, nil)
	if err != nil {
		t.Fatalf("apply with an unreadable directory: %v", err)
	}
	if _, err := os.Stat(filepath.Join(w, "build/after.o")); err != nil {
		t.Errorf("build/after.o not applied beside an unreadable directory: %+v", res)
	}
	_ = os.Chmod(locked, 0o755) // for the test's cleanup
	// A new read-only directory with files (Go's module cache extracts 0555 directories):
	// the files go in, then the directory gets its mode.
	ro := filepath.Join(s.Upper, "build/mod@v1")
	write(t, filepath.Join(ro, "sub", "a.go"), "package a\n", 0o444)
	for _, d := range []string{filepath.Join(ro, "sub"), ro} {
		if err := os.Chmod(d, 0o555); err != nil {
			t.Fatal(err)
		}
	}
	res, err = r.Apply(ApplyLearned, nil)
	if err != nil || len(res.Errors) > 0 {
		t.Fatalf("apply of a read-only directory: %v %v", err, res.Errors)
	}
	if st, err := os.Stat(filepath.Join(w, "build/mod@v1/sub")); err != nil || st.Mode().Perm() != 0o555 {
		t.Errorf("build/mod@v1/sub: %v %v, want 0555", st, err)
	}
	if _, err := os.Stat(filepath.Join(w, "build/mod@v1/sub/a.go")); err != nil {
		t.Errorf("the read-only directory's file did not apply: %+v", res)
	}
	_ = os.Chmod(ro, 0o755)
	_ = os.Chmod(filepath.Join(ro, "sub"), 0o755)
	for _, d := range []string{"build/mod@v1", "build/mod@v1/sub"} {
		_ = os.Chmod(filepath.Join(w, d), 0o755) // for the test's cleanup
	}
	if err := r.Finish(); err != nil {
		t.Fatal(err)
	}
	if runs, _ := List(); len(runs) != 1 || runs[0].State != StateFinished {
		t.Errorf("the held symlink's run: %+v", runs)
	}
}

// TestHelperApplyKilled is not a test: the child of TestApplyKilled (a `sysprof changes apply`
// killed with SIGKILL after its second change).
func TestHelperApplyKilled(t *testing.T) {
	if os.Getenv(helperEnv) != "apply-kill" {
		return
	}
	r, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	testHookBeforeMove = func(int, string) {
		if n++; n == 3 {
			_ = unix.Kill(os.Getpid(), unix.SIGKILL)
			select {}
		}
	}
	_, _ = r.Apply(ApplyLearned, nil)
	t.Fatal("not killed")
}

// TestApplyKilled: an apply killed mid-way leaves every change whole on one side (applied, or
// still in the changeset), and the next apply finishes the rest.
func TestApplyKilled(t *testing.T) {
	r, w := newRun(t, nil, []string{"**"})
	for i := range 6 {
		write(t, filepath.Join(r.Stages[0].Upper, fmt.Sprintf("d/f%d", i)), strings.Repeat("x", 1000+i), 0o644)
	}
	if err := r.Finish(); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperApplyKilled$")
	cmd.Env = append(os.Environ(), helperEnv+"=apply-kill")
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("helper: %v, want killed by SIGKILL", err)
	}
	ents, _ := os.ReadDir(filepath.Join(w, "d"))
	if len(ents) != 2 {
		t.Fatalf("after the kill the host holds %d files, want the 2 applied before it", len(ents))
	}
	o, err := Open(r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if m := scan(t, o); len(m) != 4 { // the directory was made by the first apply
		t.Fatalf("left in the changeset: %v, want the 4 not applied", keys(m))
	}
	res, err := o.Apply(ApplyLearned, nil)
	if err != nil || len(res.Applied) != 4 || len(res.Conflicts) > 0 {
		t.Fatalf("the second apply: %v %+v", err, res)
	}
	for i := range 6 {
		if b, err := os.ReadFile(filepath.Join(w, fmt.Sprintf("d/f%d", i))); err != nil || len(b) != 1000+i {
			t.Errorf("d/f%d: %d bytes, %v", i, len(b), err)
		}
	}
}

// TestApplyCopyKeepsMetadata: across file systems a change is copied with its mode (no set-id
// bit), owner and mtime (make compares them), and nothing is left behind.
func TestApplyCopyKeepsMetadata(t *testing.T) {
	if !inMountNS(t) {
		return
	}
	r, w := newRun(t, nil, []string{"**"})
	if err := unix.Mount("tmpfs", w, "tmpfs", 0, "size=8m,mode=755"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(w, unix.MNT_DETACH) })
	up := filepath.Join(r.Stages[0].Upper, "bin/tool")
	write(t, up, "#!/bin/sh\n", 0o755)
	if err := os.Chmod(up, 0o755|os.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	if err := os.Lchown(up, 1234, 5678); err != nil {
		t.Fatal(err)
	}
	mtime := time.Date(2001, 2, 3, 4, 5, 6, 7000, time.UTC)
	if err := os.Chtimes(up, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("tool", filepath.Join(r.Stages[0].Upper, "bin/t")); err != nil {
		t.Fatal(err)
	}
	res, err := r.Apply(ApplyAll, []string{filepath.Join(w, "bin/tool")})
	if err != nil || len(res.Applied) != 3 {
		t.Fatalf("apply: %v %+v", err, res)
	}
	var st unix.Stat_t
	if err := unix.Stat(filepath.Join(w, "bin/tool"), &st); err != nil {
		t.Fatal(err)
	}
	if st.Mode&0o7777 != 0o755 || st.Uid != 1234 || st.Gid != 5678 || !time.Unix(st.Mtim.Unix()).Equal(mtime) {
		t.Errorf("copied bin/tool: mode %o uid %d gid %d mtime %v; want 0755 1234 5678 %v", st.Mode&0o7777, st.Uid, st.Gid, time.Unix(st.Mtim.Unix()).UTC(), mtime)
	}
	if t2, err := os.Readlink(filepath.Join(w, "bin/t")); err != nil || t2 != "tool" {
		t.Errorf("bin/t: %q %v", t2, err)
	}
	ents, _ := os.ReadDir(filepath.Join(w, "bin"))
	if len(ents) != 2 {
		t.Errorf("bin holds %v: a temporary file was left", ents)
	}
}

// TestStageCopyingIsBusy: a run whose sysprof is gone but whose sandbox still copies a bounded
// stage's writes out (it holds a lock on the stage's directory) is busy: listed running, not
// applied or dropped, until the copy is done.
func TestStageCopyingIsBusy(t *testing.T) {
	r, _ := newRun(t, nil, []string{"**"})
	fd, err := unix.Open(r.Stages[0].Top, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	r.unlock() // sysprof gone
	runs, err := List()
	if err != nil || len(runs) != 1 || runs[0].State != StateRunning {
		t.Fatalf("while the stage is copied: %+v %v, want the run running", runs, err)
	}
	if _, err := runs[0].Apply(ApplyAll, nil); !errors.Is(err, ErrBusy) {
		t.Fatalf("apply while the stage is copied: %v, want ErrBusy", err)
	}
	unix.Close(fd)
	runs, err = List()
	if err != nil || len(runs) != 1 || runs[0].State != StateInterrupted {
		t.Fatalf("after the copy: %+v %v, want the run interrupted", runs, err)
	}
	if err := runs[0].Drop(); err != nil {
		t.Fatal(err)
	}
}

// TestApplyCopyKeepsHostDefaultACL: across file systems a change is created in the host's
// directory, where it takes the ACL the host's default ACL gives (a team's shared directory):
// that ACL is the host's, not the run's, and stays; the run's own ACLs never cross (copyIn
// copies no xattrs; the same file system's rename strips them: TestApplyACLStripped).
func TestApplyCopyKeepsHostDefaultACL(t *testing.T) {
	if !inMountNS(t) {
		return
	}
	r, w := newRun(t, nil, []string{"**"})
	if err := unix.Mount("tmpfs", w, "tmpfs", 0, "size=8m,mode=755"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(w, unix.MNT_DETACH) })
	if err := os.Mkdir(filepath.Join(w, "shared"), 0o755); err != nil {
		t.Fatal(err)
	}
	// default: user::rwx user:65534:rwx group::r-x mask::rwx other::r-x
	dacl := []byte{2, 0, 0, 0, 1, 0, 7, 0, 0xff, 0xff, 0xff, 0xff, 2, 0, 7, 0, 0xfe, 0xff, 0, 0, 4, 0, 5, 0, 0xff, 0xff, 0xff, 0xff,
		0x10, 0, 7, 0, 0xff, 0xff, 0xff, 0xff, 0x20, 0, 5, 0, 0xff, 0xff, 0xff, 0xff}
	testutil.RequireNoErr(t, "set a default ACL on a tmpfs", unix.Setxattr(filepath.Join(w, "shared"), "system.posix_acl_default", dacl, 0))
	if err := os.Mkdir(filepath.Join(r.Stages[0].Upper, "shared"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(r.Stages[0].Upper, "shared/out"), "x\n", 0o644)
	res, err := r.Apply(ApplyAll, nil)
	if err != nil || len(res.Applied) == 0 {
		t.Fatalf("apply: %v %+v", err, res)
	}
	if n, err := unix.Getxattr(filepath.Join(w, "shared/out"), "system.posix_acl_access", nil); err != nil || n == 0 {
		t.Errorf("shared/out lost the ACL the host's directory gives its files: %v", err)
	}
	for _, c := range res.Applied {
		if c.Stripped != "" {
			t.Errorf("%s: %q: nothing of the run's was removed", c.Path, c.Stripped)
		}
	}
}
