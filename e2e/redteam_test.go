package e2e

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
)

// The red team (issue 23): a profile learned from an ordinary tool's work (testdata/redteam's
// probe reading and writing files, running sh, asking its limits, signalling itself), then
// attacks by the same binary under that profile, as root and as an ordinary user. Each attack
// must be (a) blocked: the probe's line for it is not "ACTION: ok", and (b) on the record: a
// denial of the report names it, or, as an ordinary user for a kind the kernel refuses
// without a record, the report lists that kind as not observable.

// redteamAttack is one attack of the probe.
type redteamAttack struct {
	action  string // the probe's argument
	line    string // the probe's output line that says it was blocked
	syscall string // the denial that records it (a syscall refused by the filter)
	path    string // or: the file denial that records it (as root)
	// endpoint: or the network denial that records it (a host unix socket: "unix:PATH").
	endpoint string
	// unobservable: the report's entry that covers it as an ordinary user (a file denial).
	unobservable string
	// what: the syscall denial's What names this too (an attribute, a mode).
	what string
}

// redteamAttacks are the attacks on the host and on the sandbox itself (PID 1 is the init
// stage, which must stay out of reach).
var redteamAttacks = []redteamAttack{
	{action: "ptrace=1", line: "ptrace: EPERM", syscall: "ptrace"},
	{action: "vmwrite=1", line: "vmwrite: EPERM", syscall: "process_vm_writev"},
	{action: "pidfd-getfd=1", line: "pidfd-getfd: EPERM", syscall: "pidfd_open"},
	{action: "procmem=1", line: "procmem: E", path: "/proc/1/mem", unobservable: "file denials"},
	{action: "prlimit-init", line: "prlimit-init: EPERM", syscall: "prlimit64"},
	{action: "prlimit-read=1", line: "prlimit-read: EPERM", syscall: "prlimit64"},
	{action: "userfaultfd", line: "userfaultfd: EPERM", syscall: "userfaultfd"},
	{action: "bpf", line: "bpf: EPERM", syscall: "bpf"},
	{action: "perf", line: "perf: EPERM", syscall: "perf_event_open"},
	{action: "add_key", line: "add_key: EPERM", syscall: "add_key"},
	{action: "keyctl", line: "keyctl: EPERM", syscall: "keyctl"},
	{action: "clone3-userns", line: "clone3-userns: ENOSYS", syscall: "clone3", unobservable: "clone3 asking for new namespaces"},
	{action: "open_tree", line: "open_tree: EPERM", syscall: "open_tree"},
	{action: "fsopen", line: "fsopen: EPERM", syscall: "fsopen"},
	{action: "personality", line: "personality: EPERM", syscall: "personality"},
	{action: "tiocsti=0", line: "tiocsti: EPERM", syscall: "ioctl"},
	{action: "tioclinux=0", line: "tioclinux: EPERM", syscall: "ioctl"},
	{action: "inotify=/", line: "inotify: EPERM", syscall: "inotify_init1"},
	{action: "sched", line: "sched: EPERM", syscall: "sched_setscheduler"},
	{action: "nice", line: "nice: EPERM", syscall: "setpriority"},
	{action: "abstract=sysprof-redteam", line: "abstract: EPERM", syscall: "socket"},
	{action: "link=in.txt,hard", line: "link: EPERM", syscall: "link"},
	{action: "symlink=/etc/shadow,soft", line: "symlink: EPERM", syscall: "symlink"},
}

// redteam3Attacks are the next round's classes (issue 23, a fresh red team): namespaces and
// mounts from inside (a new user namespace gives back every capability; umount takes a hidden
// secret's cover away), the kernel surface a dev tool never needs (io_uring, request_key,
// fanotify, the kernel log, modules, port I/O, device nodes), the host's IPC (SysV shared
// memory, POSIX message queues, a daemon's socket by path) and the init stage's environment.
// Each must be refused whatever the learned profile allows (see TestRedTeamRealisticProfile),
// so none of them names a call the profiles learn.
var redteam3Attacks = []redteamAttack{
	{action: "unshare=10000000", line: "unshare: EPERM", syscall: "unshare"},
	{action: "io_uring", line: "io_uring: EPERM", syscall: "io_uring_setup"},
	{action: "request_key", line: "request_key: EPERM", syscall: "request_key"},
	{action: "mount=/tmp", line: "mount: EPERM", syscall: "mount"},
	{action: "umount=$HOME/.ssh", line: "umount: EPERM", syscall: "umount2"},
	{action: "move_mount=/tmp", line: "move_mount: EPERM", syscall: "move_mount"},
	{action: "pivot_root=/tmp", line: "pivot_root: EPERM", syscall: "pivot_root"},
	{action: "fanotify=/", line: "fanotify: EPERM", syscall: "fanotify_init"},
	{action: "syslog", line: "syslog: EPERM", syscall: "syslog"},
	{action: "finit_module", line: "finit_module: EPERM", syscall: "finit_module"},
	{action: "iopl", line: "iopl: EPERM", syscall: "iopl"},
	{action: "mknod=mem", line: "mknod: EPERM", syscall: "mknodat"},
	{action: "shmget=5359", line: "shmget: EPERM", syscall: "shmget"},
	{action: "mq_open=/sysprof-rt", line: "mq_open: EPERM", syscall: "mq_open"},
	{action: "environ=1", line: "environ: EACCES", path: "/proc/1/environ", unobservable: "file denials"},
}

// redteam4Attacks are the fourth round's classes (issue 23): the host's kernel knobs that run a
// program of the attacker's as root later (core_pattern, modprobe, sysrq), the host's cgroup
// tree, protected files changed without an open for writing (rename or exchange over git's
// config: a read-only bind answers EBUSY; a back-dated time, an extended attribute, a mode, an
// unnamed O_TMPFILE given a hook's name by linkat), a file opened by its handle ("shocker"),
// and the calls no dev tool makes (vhangup of the user's terminal, chroot, process accounting,
// swap). plantRepo makes the work tree's .git they aim at.
var redteam4Attacks = []redteamAttack{
	{action: "write=/proc/sys/kernel/core_pattern", line: "write: E", path: "/proc/sys/kernel/core_pattern", unobservable: "file denials"},
	{action: "write=/proc/sys/kernel/randomize_va_space", line: "write: E", path: "/proc/sys/kernel/randomize_va_space", unobservable: "file denials"},
	{action: "write=/proc/sys/vm/drop_caches", line: "write: E", path: "/proc/sys/vm/drop_caches", unobservable: "file denials"},
	{action: "write=/sys/fs/cgroup/cgroup.procs", line: "write: E", path: "/sys/fs/cgroup/cgroup.procs", unobservable: "file denials"},
	{action: "rename=in.txt,$WORKDIR/.git/config", line: "rename: E", syscall: "rename", path: "$WORKDIR/.git/config", unobservable: "file denials"},
	{action: "renamex=in.txt,$WORKDIR/.git/config", line: "renamex: E", syscall: "renameat2", path: "$WORKDIR/.git/config", unobservable: "file denials"},
	{action: "utime=$WORKDIR/.git/config", line: "utime: E", syscall: "utimensat", path: "$WORKDIR/.git/config", unobservable: "file denials"},
	{action: "xattr=$WORKDIR/.git/config,user.sysprof", line: "xattr: E", syscall: "setxattr", path: "$WORKDIR/.git/config", unobservable: "file denials"},
	{action: "chmod=$WORKDIR/.git/hooks/pre-commit.sample", line: "chmod: E", syscall: "chmod", path: "$WORKDIR/.git/hooks/pre-commit.sample", unobservable: "file denials"},
	{action: "tmplink=/tmp,$WORKDIR/.git/hooks/pre-commit", line: "tmplink: E", syscall: "linkat", path: "$WORKDIR/.git/hooks/pre-commit|/tmp", unobservable: "file denials"},
	{action: "handle=/etc/hostname", line: "handle: EPERM", syscall: "name_to_handle_at"},
	{action: "vhangup", line: "vhangup: EPERM", syscall: "vhangup"},
	{action: "chroot=/tmp", line: "chroot: EPERM", syscall: "chroot"},
	{action: "acct=/tmp/acct", line: "acct: EPERM", syscall: "acct"},
	{action: "swapon=/tmp/swap", line: "swapon: EPERM", syscall: "swapon"},
}

// plantRepo gives b's work tree the .git redteam4Attacks aim at (a config, a sample hook).
func plantRepo(t *testing.T, b *testutil.Box) {
	t.Helper()
	testutil.WriteFile(t, filepath.Join(b.Work, ".git", "config"), "[core]\n", 0o644)
	testutil.WriteFile(t, filepath.Join(b.Work, ".git", "hooks", "pre-commit.sample"), "#!/bin/sh\n", 0o644)
}

// expandAttack replaces $HOME and $WORKDIR in an attack's argument with b's.
func expandAttack(b *testutil.Box, action string) string {
	return strings.NewReplacer("$HOME", b.Home, "$WORKDIR", b.Work).Replace(action)
}

// checkAttacks holds the probe's output r and its report rp to attacks: each blocked (its line
// printed) and on the record (a denial, or, as an ordinary user, its kind listed unobservable).
func checkAttacks(t *testing.T, b *testutil.Box, r testutil.Result, rp *report.Report, attacks []redteamAttack, ordinary bool) {
	t.Helper()
	for _, a := range attacks {
		name, _, _ := strings.Cut(a.action, "=")
		if !strings.Contains(r.Stdout, "\n"+a.line) {
			got := "(no line)"
			for _, l := range strings.Split(r.Stdout, "\n") {
				if strings.HasPrefix(l, name+":") {
					got = l
				}
			}
			t.Errorf("%s: not blocked: want %q, got %q", a.action, a.line, got)
		}
		// A row may name a syscall and a path: which layer refuses depends on what the profile
		// learned (seccomp when the call was never learned, the mounts when it was).
		paths := strings.Split(expandAttack(b, a.path), "|")
		recorded := slices.ContainsFunc(rp.Denials, func(d report.Denial) bool {
			return a.syscall != "" && d.Kind == report.KindSyscall && d.Syscall == a.syscall && !d.Allowed && strings.Contains(d.What, a.what) ||
				a.endpoint != "" && d.Kind == report.KindNetwork && d.Endpoint == a.endpoint ||
				a.path != "" && d.Kind == report.KindFile && slices.ContainsFunc(paths, func(p string) bool {
					ok, _ := filepath.Match(p, d.Path) // a pid in the path: /proc/*/mem
					return p == d.Path || ok
				})
		})
		switch {
		case recorded:
		case a.unobservable != "" && ordinary:
			if !slices.ContainsFunc(rp.Unobservable, func(u string) bool { return strings.HasPrefix(u, a.unobservable) }) {
				t.Errorf("%s: refused without a record, and the report does not list %q as unobservable: %q", a.action, a.unobservable, rp.Unobservable)
			}
		default:
			t.Errorf("%s: blocked, but not on the record (want a %s%s%s denial)", a.action, a.syscall, a.path, a.endpoint)
		}
	}
	if t.Failed() {
		var lines []string
		for _, d := range rp.Denials {
			lines = append(lines, "  "+testutil.DenialString(d))
		}
		t.Logf("stdout:\n%s\nreport:\n%s", r.Stdout, strings.Join(lines, "\n"))
	}
}

// redteamBox builds the probe into a fresh work tree and learns its benign run. The box is
// outside /tmp (under the private /tmp a secret would be absent, not hidden), searchable by
// uid 65534.
func redteamBox(t *testing.T) (b *testutil.Box, root, profile string) {
	t.Helper()
	testutil.RequireRoot(t)
	testutil.RequireTools(t, hostPath, "setpriv")
	root, err := os.MkdirTemp("/var/cache", "sysprof-e2e-redteam-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	b = newBox(t, root, "x", "dev", "work", "")
	data, err := os.ReadFile(testutil.BuildC(t, "redteam/rt.c"))
	if err != nil {
		t.Fatal(err)
	}
	testutil.WriteFile(t, filepath.Join(b.Work, "rt"), string(data), 0o755)
	testutil.WriteFile(t, filepath.Join(b.Work, "in.txt"), "input\n", 0o644)
	profile = filepath.Join(root, "profile.yaml")
	if r := b.Sysprof(t, "learn", "-p", profile, "--", "./rt", "benign"); r.Code != 0 || !strings.Contains(r.Stdout, "benign: ok") {
		t.Fatalf("learn the probe's benign run: %s", r)
	}
	openForNobody(t, root)
	return b, root, profile
}

// asUsers are the two ways enforce runs: as root, and as an ordinary user (nobody).
var asUsers = []struct {
	name string
	wrap []string
}{{"root", nil}, {"ordinary-user", []string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"}}}

// enforceAs runs `sysprof enforce -p profile --report rep -- argv…` in b as the user as names.
func enforceAs(t *testing.T, b *testutil.Box, wrap []string, profile, rep string, argv ...string) testutil.Result {
	t.Helper()
	full := append(slicesClone(wrap), testutil.SysprofBin, "enforce", "-p", profile, "--report", rep, "--")
	return runPerturbed(t, b, perturbation{name: "redteam", stdout: "pipe", stdin: "null"}, append(full, argv...))
}

// TestRedTeamBlockedAndRecorded runs every attack of redteamAttacks in one enforced run per
// user, after the benign work (which must still succeed).
func TestRedTeamBlockedAndRecorded(t *testing.T) {
	b, root, profile := redteamBox(t)
	argv := []string{"./rt", "benign", "fdleak"}
	for _, a := range slices.Concat(redteamAttacks, redteam3Attacks, redteam4Attacks) {
		argv = append(argv, expandAttack(b, a.action))
	}
	argv = append(argv, "prlimit-self", "thread", "benign")
	plantRepo(t, b)
	for _, as := range asUsers {
		t.Run(as.name, func(t *testing.T) {
			if as.wrap != nil {
				chownTree(t, b.Work, 65534)
				chownTree(t, b.Home, 65534)
			}
			rep := filepath.Join(root, as.name+".json")
			r := enforceAs(t, b, as.wrap, profile, rep, argv...)
			if strings.Count(r.Stdout, "benign: ok") != 2 {
				t.Errorf("the benign work did not run before and after the attacks: %s", r)
			}
			if !strings.Contains(r.Stdout, "\nprlimit-self: ok") {
				t.Errorf("prlimit64 on the caller's own pid was refused: %s", r)
			}
			if !strings.Contains(r.Stdout, "\nthread: ok") {
				t.Errorf("a thread (glibc: clone3, then clone) failed: %s", r)
			}
			rp := testutil.ReadReport(t, rep)
			for _, d := range rp.Denials {
				if d.Syscall == "clone3" && !strings.Contains(d.What, "CLONE_NEWUSER") {
					t.Errorf("a clone3 without namespace flags is on the record: %s", testutil.DenialString(d))
				}
			}
			checkAttacks(t, b, r, rp, slices.Concat(redteamAttacks, redteam3Attacks, redteam4Attacks), as.wrap != nil)
			if !strings.Contains(r.Stdout, "\nfdleak: none\n") {
				t.Errorf("the command inherited a descriptor beyond stdio (a listener, a pidfd or a socket of sysprof's would be a way out):\n%s", r.Stdout)
			}
		})
	}
}

// TestRedTeamHostResources: what a run may take of the host's shared resources. No core dump
// leaves the sandbox (RLIMIT_CORE 1: no core file in the work tree's changeset, and no
// core_pattern pipe helper, systemd-coredump or apport, storing the sandbox's memory on the
// host), and the run's tasks, each at its open-file limit, hold at most a quarter of the host's
// file table (fs.file-max: when it is full, no unprivileged program of the host opens a file).
// Neither limit can be raised from inside.
func TestRedTeamHostResources(t *testing.T) {
	b, root, profile := redteamBox(t)
	data, err := os.ReadFile("/proc/sys/fs/file-max")
	if err != nil {
		t.Fatal(err)
	}
	fileMax, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	pids := uint64(loadProfile(t, profile).Limits.Pids)
	for _, as := range asUsers {
		t.Run(as.name, func(t *testing.T) {
			if as.wrap != nil {
				chownTree(t, b.Work, 65534)
				chownTree(t, b.Home, 65534)
			}
			rep := filepath.Join(root, as.name+"-resources.json")
			r := enforceAs(t, b, as.wrap, profile, rep, "./rt", "rlimits", "raise=core", "raise=nofile", "fds", "threads", "core")
			limits := map[string][2]uint64{}
			for _, l := range strings.Split(r.Stdout, "\n") {
				var name string
				var soft, hard uint64
				if n, _ := fmt.Sscanf(l, "rlimit %s %d %d", &name, &soft, &hard); n == 3 {
					limits[strings.TrimSuffix(name, ":")] = [2]uint64{soft, hard}
				}
			}
			if core, ok := limits["core"]; !ok || core[1] > 1 {
				t.Errorf("RLIMIT_CORE in the sandbox is %v, want a hard limit of at most 1:\n%s", core, r.Stdout)
			}
			// Per-user counts shared with the host user's other programs (issue 23, the fourth
			// round): queued signals (sigqueue, timer_create) and message queue bytes.
			if sp, ok := limits["sigpending"]; !ok || sp[1] > 1024 {
				t.Errorf("RLIMIT_SIGPENDING in the sandbox is %v, want a hard limit of at most 1024 (the host user's queued-signal count is shared):\n%s", sp, r.Stdout)
			}
			if mq, ok := limits["msgqueue"]; !ok || mq[1] > 819200/4 {
				t.Errorf("RLIMIT_MSGQUEUE in the sandbox is %v, want at most a quarter of the kernel's default:\n%s", mq, r.Stdout)
			}
			if files, ok := limits["nofile"]; !ok || files[1]*pids > fileMax/4 {
				t.Errorf("RLIMIT_NOFILE in the sandbox is %v: %d tasks hold more than a quarter of the host's file table (%d):\n%s", files, pids, fileMax, r.Stdout)
			}
			var threads uint64
			for _, l := range strings.Split(r.Stdout, "\n") {
				fmt.Sscanf(l, "threads: %d", &threads)
			}
			// The enforced limit: the profile's, at least policy.PidsPerCPU per CPU, plus the
			// init stage's own tasks (16).
			bound := max(pids, policy.PidsPerCPU*uint64(runtime.NumCPU())) + 16
			if threads == 0 || threads > bound {
				t.Errorf("the run started %d threads: want some, and at most the pids limit %d (many threads fill the host's task table)", threads, bound)
			}
			if strings.Count(r.Stdout, "raise: ok") > 1 {
				t.Errorf("a hard limit was raised from inside:\n%s", r.Stdout)
			}
			rp := testutil.ReadReport(t, rep)
			if rp.Changes != nil {
				for _, h := range rp.Changes.Held {
					if filepath.Base(h.Path) == "core" || strings.HasPrefix(filepath.Base(h.Path), "core.") {
						t.Errorf("the crash left a core dump: %s", h.Path)
					}
				}
			}
			if entries, _ := os.ReadDir(b.Work); slices.ContainsFunc(entries, func(e os.DirEntry) bool { return strings.HasPrefix(e.Name(), "core") }) {
				t.Errorf("the crash left a core dump in the work tree")
			}
		})
	}
}

// TestRedTeamForgedOutputCannotHideTheRecord: a command shares its terminal with sysprof, and
// what it prints last may conceal what follows (SGR 8), swallow it into a window title (an
// unterminated OSC) or claim a clean run. Once the command is gone, sysprof resets the terminal
// before its own lines: the real denial table follows the forged line, after the reset.
func TestRedTeamForgedOutputCannotHideTheRecord(t *testing.T) {
	b, root, profile := redteamBox(t)
	forged := `say=sysprof: 0 operation(s) denied\x1b[8m\x1b]2;`
	ptm, pts := testutil.OpenPTY(t)
	cmd, ctx := testutil.Command(t, b.Work, b.Environ(), testutil.SysprofBin, "enforce", "-p", profile, "--report", filepath.Join(root, "forged.json"), "--", "./rt", forged, "bpf")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, pts, pts
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pts.Close()
	var out strings.Builder
	done := make(chan struct{})
	go func() { defer close(done); _, _ = io.Copy(&out, ptm) }()
	err := cmd.Wait()
	<-done
	r := testutil.Finish(t, ctx, cmd, err, "", "")
	got := out.String()
	fake := strings.Index(got, "sysprof: 0 operation(s) denied\x1b[8m\x1b]2;")
	reset := strings.LastIndex(got, report.TerminalReset)
	real := strings.LastIndex(got, "sysprof: 1 operation(s) denied:")
	switch {
	case fake < 0 || real < 0:
		t.Fatalf("the terminal does not show the forged line and the real table (exit %d):\n%q", r.Code, got)
	case reset < fake || reset > real:
		t.Errorf("sysprof's table follows the command's forged output without a terminal reset between them:\n%q", got[fake:])
	}
}

// TestRedTeamHiddenReadsOnTheRecord (issue 23 item 5): a hidden credential file (~/.npmrc,
// ~/.netrc) or project secret (.env) reads as empty; as root each read the learn run did not
// make is a denial naming the file and the binary (the guard watches each hidden file's
// cover), one it made is listed as hidden; as an ordinary user the report says such reads are
// not observable.
func TestRedTeamHiddenReadsOnTheRecord(t *testing.T) {
	b, root, profile := redteamBox(t)
	secrets := map[string]string{
		filepath.Join(b.Home, ".npmrc"): "//registry.example/:_authToken=npm_SECRET\n",
		filepath.Join(b.Home, ".netrc"): "machine example login me password SECRET\n",
		filepath.Join(b.Work, ".env"):   "API_KEY=SECRET\n",
	}
	for p, content := range secrets {
		testutil.WriteFile(t, p, content, 0o644)
	}
	// A tool that reads ~/.npmrc when learned (npm does on every run): that read is information.
	learned := filepath.Join(root, "learned.yaml")
	if r := b.Sysprof(t, "learn", "-p", learned, "--", "./rt", "benign", "read="+filepath.Join(b.Home, ".npmrc")); r.Code != 0 {
		t.Fatalf("learn the reader: %s", r)
	}
	openForNobody(t, root)
	for _, as := range asUsers {
		t.Run(as.name, func(t *testing.T) {
			if as.wrap != nil {
				chownTree(t, b.Work, 65534)
				chownTree(t, b.Home, 65534)
			}
			argv := []string{"./rt"}
			for p := range secrets {
				argv = append(argv, "read="+p)
			}
			rep := filepath.Join(root, as.name+"-hidden.json")
			r := enforceAs(t, b, as.wrap, profile, rep, argv...)
			if strings.Contains(r.Stdout, "read: ok") || strings.Count(r.Stdout, "read: empty") != len(secrets) {
				t.Fatalf("a hidden secret did not read as empty: %s", r)
			}
			rp := testutil.ReadReport(t, rep)
			for p := range secrets {
				recorded := slices.ContainsFunc(rp.Denials, func(d report.Denial) bool {
					return d.Kind == report.KindFile && d.Path == p && d.Access == "read" && filepath.Base(d.Exe) == "rt"
				})
				switch {
				case as.wrap == nil && !recorded:
					t.Errorf("the read of hidden %s is not on the record: %+v", p, rp.Denials)
				case as.wrap != nil && !slices.ContainsFunc(rp.Unobservable, func(u string) bool { return strings.Contains(u, "hidden file") }):
					t.Errorf("as an ordinary user the report does not say reads of hidden files are not observable: %q", rp.Unobservable)
				}
			}
			// The learned reader: listed as hidden, no denial.
			rep = filepath.Join(root, as.name+"-learned.json")
			r = enforceAs(t, b, as.wrap, learned, rep, "./rt", "benign", "read="+filepath.Join(b.Home, ".npmrc"))
			rp = testutil.ReadReport(t, rep)
			if len(rp.Denials) > 0 || !slices.ContainsFunc(rp.Hidden, func(h report.HiddenRead) bool { return strings.HasSuffix(h.Path, ".npmrc") }) {
				t.Errorf("the learned read of ~/.npmrc: want no denial and a hidden entry, got denials %+v, hidden %+v\n%s", rp.Denials, rp.Hidden, r.Stderr)
			}
		})
	}
}

// TestRedTeamLearnWarningsEscaped: learn's warnings and its --explain lines name files the
// command chose (a secret it touched): printed escaped, never raw (a name holding ESC or a bidi
// override must not rewrite what the reviewer reads).
func TestRedTeamLearnWarningsEscaped(t *testing.T) {
	b, root, _ := redteamBox(t)
	name := "id\x1b[2K\u202ex"
	testutil.WriteFile(t, filepath.Join(b.Home, ".ssh", name), "key\n", 0o600)
	r := b.Sysprof(t, "learn", "--explain", "-p", filepath.Join(root, "secret.yaml"), "--", "./rt", "read="+filepath.Join(b.Home, ".ssh", name))
	if r.Code != 0 {
		t.Fatalf("learn: %s", r)
	}
	if rawControl(r.Stderr) {
		t.Errorf("learn's stderr holds raw control or bidi characters:\n%q", r.Stderr)
	}
	if !strings.Contains(r.Stderr, `WARNING: credential store touched`) || !strings.Contains(r.Stderr, `id\x1b\[2K\u202ex`) {
		t.Errorf("learn's warning does not name the secret escaped:\n%s", r.Stderr)
	}
}

// TestRedTeamHostileProfileNamesEscaped: a profile comes with the checkout and is hostile input
// too: a binary it names with ESC and a bidi override is printed escaped in enforce's warning.
func TestRedTeamHostileProfileNamesEscaped(t *testing.T) {
	b, root, profile := redteamBox(t)
	name := "tool\x1bM\u202ex"
	testutil.WriteFile(t, filepath.Join(b.Work, name), "#!/bin/sh\n", 0o755)
	p := loadProfile(t, profile)
	p.Binaries = append(p.Binaries, policy.Binary{Path: "$WORKDIR/" + name, SHA256: strings.Repeat("0", 64)})
	hostile := filepath.Join(root, "hostile.yaml")
	if err := policy.Save(hostile, p); err != nil {
		t.Fatal(err)
	}
	r := b.Sysprof(t, "enforce", "-p", hostile, "--", "./rt", "benign")
	if !strings.Contains(r.Stderr, "changed since learn") {
		t.Fatalf("enforce does not warn about the changed binary: %s", r)
	}
	if rawControl(r.Stderr) {
		t.Errorf("enforce's stderr holds raw control or bidi characters:\n%q", r.Stderr)
	}
}
