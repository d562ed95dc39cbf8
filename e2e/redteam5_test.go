package e2e

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
	"golang.org/x/sys/unix"
)

// The fifth red team (issue 23, "a fresh red team will try new classes"): code run without an
// execve of its path (execveat of a descriptor, fexecve of an O_PATH one, a script written for
// a learned interpreter), code patched in place (this process's text through /proc/self/mem, a
// child running a learned program through /proc/PID/mem), a forged file handle
// (open_by_handle_at with no name_to_handle_at), another process's namespaces, the init stage
// as a target (a signal Go's runtime turns into a crash: the run ended with a traceback on the
// user's terminal), an inherited read-only descriptor opened again for writing through
// /proc/self/fd, and the record when the command ends at once after its attacks (exit_group,
// nothing flushed). The probe is testdata/redteam/rt.c; every run ends with `die`.

// redteam5Attacks run under the probe's learned profile (redteamBox): each must be refused and
// on the record, root and ordinary user. reopen=0 needs stdin to be a host file the user may
// write (enforceStdin).
var redteam5Attacks = []redteamAttack{
	{action: "selfmem", line: "selfmem: E", path: "/proc/self/mem", unobservable: "file denials"},
	{action: "execveat=./evil", line: "execveat: EPERM", syscall: "execveat"},
	{action: "fexecve=./evil", line: "fexecve: EPERM", syscall: "execveat"},
	{action: "shocker", line: "shocker: EPERM", syscall: "open_by_handle_at"},
	{action: "setns=/proc/1/ns/mnt", line: "setns: E", path: "/proc/1/ns/mnt", unobservable: "file denials"},
	{action: "kill=1,6", line: "kill: EPERM", syscall: "kill"},
	{action: "kill=1,11", line: "kill: EPERM", syscall: "kill"},
	{action: "initthreads=6", line: "initthreads: 0 sent", syscall: "tkill"},
	{action: "script=$WORKDIR/x.sh,/bin/sh", line: "script: EACCES", path: "$WORKDIR/x.sh", unobservable: "file denials"},
	{action: "reopen=0", line: "reopen: EACCES", path: "/proc/self/fd/0", unobservable: "file denials"},
	{action: "write=$HOME/.bashrc", line: "write: E", path: "$HOME/.bashrc", unobservable: "file denials"},
	{action: "read=$HOME/.ssh/id_rsa", line: "read: E", path: "$HOME/.ssh/id_rsa", unobservable: "file denials"},
}

// redteam5Deeper run under that profile widened by the calls they need (execveat, pipe2, link):
// what the next layer does when seccomp lets the call through.
var redteam5Deeper = []redteamAttack{
	{action: "execveat=./evil", line: "execveat: EACCES", path: "$WORKDIR/evil", unobservable: "file denials"},
	{action: "fexecve=./evil", line: "fexecve: EACCES", path: "$WORKDIR/evil", unobservable: "file denials"},
	{action: "childmem=/bin/sh", line: "childmem: E", path: "/proc/*/mem", unobservable: "file denials"},
	// A hard link of a hidden secret to a name of the run's (to read it, or to carry it out in
	// the changeset): its cover is a mount of its own.
	{action: "link=$WORKDIR/.env,leaked", line: "link: EXDEV", path: "$WORKDIR/.env", unobservable: "file denials"},
	{action: "link=$HOME/.ssh/id_rsa,leaked-key", line: "link: ENOENT", path: "$HOME/.ssh/id_rsa", unobservable: "file denials"},
}

// enforceStdin is enforceAs with stdin the file at path (opened read-only, as a shell's `<`).
func enforceStdin(t *testing.T, b *testutil.Box, wrap []string, stdin, profile, rep string, argv ...string) testutil.Result {
	t.Helper()
	f, err := os.Open(stdin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	full := append(append(slicesClone(wrap), testutil.SysprofBin, "enforce", "-p", profile, "--report", rep, "--"), argv...)
	cmd, ctx := testutil.Command(t, b.Work, b.Environ(), full...)
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = f, &stdout, &stderr
	err = cmd.Run()
	return testutil.Finish(t, ctx, cmd, err, stdout.String(), stderr.String())
}

// redteam5Box is redteamBox with a program shipped in the work tree (evil: never learned), a
// project secret (.env) and a file the user may write outside the sandbox's writable places
// (the command's stdin).
func redteam5Box(t *testing.T) (b *testutil.Box, root, profile, stdin string) {
	t.Helper()
	b, root, profile = redteamBox(t)
	data, err := os.ReadFile(filepath.Join(b.Work, "rt"))
	if err != nil {
		t.Fatal(err)
	}
	testutil.WriteFile(t, filepath.Join(b.Work, "evil"), string(data), 0o755)
	testutil.WriteFile(t, filepath.Join(b.Work, ".env"), "API_KEY=SECRET\n", 0o644)
	testutil.WriteFile(t, filepath.Join(b.Home, ".ssh", "id_rsa"), "KEY\n", 0o600)
	stdin = filepath.Join(root, "stdin.txt")
	testutil.WriteFile(t, stdin, "input\n", 0o666)
	return b, root, profile, stdin
}

// checkRunEnded: the run went on to its end (the benign work after the attacks, then die) and
// the init stage did not crash.
func checkRunEnded(t *testing.T, r testutil.Result, stdinFile string) {
	t.Helper()
	if !strings.HasSuffix(r.Stdout, "benign: ok\n") || r.Code != 0 {
		t.Errorf("the run did not reach its end (the benign work, then exit 0): exit %d\n%s\nstderr:\n%s", r.Code, r.Stdout, r.Stderr)
	}
	if strings.Contains(r.Stderr, "goroutine ") || strings.Contains(r.Stderr, "PC=0x") {
		t.Errorf("a Go traceback on the terminal: the init stage crashed:\n%s", r.Stderr)
	}
	if got, _ := os.ReadFile(stdinFile); string(got) != "input\n" {
		t.Errorf("the command wrote its read-only stdin through /proc/self/fd/0: %q", got)
	}
}

// TestRedTeam5BlockedAndRecorded runs redteam5Attacks under the learned profile, then
// redteam5Deeper under the widened one, as root and as an ordinary user; each run ends with
// exit_group right after its attacks (die), so a record that waits for an orderly exit misses.
// Under the widened profile too, kill(0) sends SIGABRT, SIGSEGV and SIGBUS to the command's
// process group, the init stage's: the stage must drop them (no record: the filter cannot tell
// whom a group holds, and nothing happened). (tkill of the stage's other threads is refused by
// Landlock's signal scope: they are outside the command's domain.)
func TestRedTeam5BlockedAndRecorded(t *testing.T) {
	b, root, profile, stdin := redteam5Box(t)
	shm := filepath.Join("/dev/shm", filepath.Base(root))
	testutil.WriteFile(t, shm, "host shared memory\n", 0o644)
	t.Cleanup(func() { os.Remove(shm); os.Remove(shm + "-planted") })
	p := loadProfile(t, profile)
	for _, n := range []string{"execveat", "pipe2", "link"} {
		if slices.ContainsFunc(p.Syscalls.Allow, func(s policy.Syscall) bool { return s.Name == n }) {
			t.Fatalf("the probe's benign run learned %s: the learned-profile rows no longer test what they should", n)
		}
		p.Syscalls.Allow = append(p.Syscalls.Allow, policy.Syscall{Name: n})
	}
	wide := filepath.Join(root, "wide.yaml")
	if err := policy.Save(wide, p); err != nil {
		t.Fatal(err)
	}
	for _, as := range asUsers {
		t.Run(as.name, func(t *testing.T) {
			if as.wrap != nil {
				chownTree(t, b.Work, 65534)
				chownTree(t, b.Home, 65534)
				if err := os.Chown(stdin, 65534, 65534); err != nil {
					t.Fatal(err)
				}
			}
			argv := []string{"./rt", "benign"}
			for _, a := range redteam5Attacks {
				argv = append(argv, expandAttack(b, a.action))
			}
			// The host's /dev/shm (another program's shared memory, semaphores): the run has
			// its own; neither the host's file nor a planted one crosses (nothing to record).
			argv = append(argv, "read="+shm, "put="+shm+"-planted")
			rep := filepath.Join(root, as.name+"-rt5.json")
			r := enforceStdin(t, b, as.wrap, stdin, profile, rep, append(argv, "benign", "die")...)
			checkRunEnded(t, r, stdin)
			if strings.Contains(r.Stdout, "\nread: ok") {
				t.Errorf("the host's %s was read in the sandbox", shm)
			}
			if _, err := os.Lstat(shm + "-planted"); err == nil {
				t.Errorf("a file written to the sandbox's /dev/shm reached the host's")
			}
			rp := testutil.ReadReport(t, rep)
			checkAttacks(t, b, r, rp, redteam5Attacks, as.wrap != nil)
			for _, d := range rp.Denials {
				if d.Syscall == "kill" && (d.Change != nil || !strings.HasPrefix(d.Suggest, "none: ") || d.Risk != report.RiskCritical) {
					t.Errorf("a signal to the init stage suggests a profile change (%q, %s): no rule should let the command signal pid 1", d.Suggest, d.Risk)
				}
			}

			argv = []string{"./rt", "benign", "pgkill=6", "pgkill=11", "pgkill=7"}
			for _, a := range redteam5Deeper {
				argv = append(argv, expandAttack(b, a.action))
			}
			rep = filepath.Join(root, as.name+"-rt5-wide.json")
			r = enforceStdin(t, b, as.wrap, stdin, wide, rep, append(argv, "benign", "die")...)
			checkRunEnded(t, r, stdin)
			if strings.Count(r.Stdout, "pgkill: ok") != 3 {
				t.Errorf("the signals to the process group were not sent: the test no longer tries what it should:\n%s", r.Stdout)
			}
			checkAttacks(t, b, r, testutil.ReadReport(t, rep), redteam5Deeper, as.wrap != nil)
		})
	}
}

// TestRedTeam5DeepNamesInTheChangeset: the command writes, in its staged work tree, a file 24
// directories of 200-character names deep (its path far past PATH_MAX, made by descriptor) and
// named with a newline and an escape sequence. The change is held for review, named exactly in
// the report; every line sysprof prints about it (enforce's summary, `changes diff`, and the
// errors of `changes apply --all`, which cannot open a path that long) is escaped; what apply
// could not write is still held, not lost. (sysprof's own output: as root only.)
func TestRedTeam5DeepNamesInTheChangeset(t *testing.T) {
	b, root, profile := redteamBox(t)
	p := loadProfile(t, profile)
	for _, n := range []string{"mkdir", "mkdirat"} {
		if !slices.ContainsFunc(p.Syscalls.Allow, func(s policy.Syscall) bool { return s.Name == n }) {
			p.Syscalls.Allow = append(p.Syscalls.Allow, policy.Syscall{Name: n})
		}
	}
	deep := filepath.Join(root, "deep.yaml")
	if err := policy.Save(deep, p); err != nil {
		t.Fatal(err)
	}
	rep := filepath.Join(root, "deep.json")
	r := enforceAs(t, b, nil, deep, rep, "./rt", "deep=24")
	if !strings.Contains(r.Stdout, "deep: ok") {
		t.Fatalf("the probe did not write its deep file: %s", r)
	}
	rp := testutil.ReadReport(t, rep)
	if rp.Changes == nil {
		t.Fatalf("no changeset in the report: %s", r)
	}
	const leaf = "bottom\n\x1b[2Kx"
	held := func(entries []report.Change) bool {
		return slices.ContainsFunc(entries, func(h report.Change) bool { return filepath.Base(h.Path) == leaf })
	}
	if !held(rp.Changes.Held) {
		t.Fatalf("the deep file is not held by its exact name: %+v", rp.Changes.Held)
	}
	run := rp.Changes.Run
	diff := b.Sysprof(t, "changes", "diff", run)
	apply := b.Sysprof(t, "changes", "apply", run, "--all")
	after := b.Sysprof(t, "changes", "diff", run)
	for name, out := range map[string]string{"enforce": r.Stderr, "changes diff": diff.Stdout + diff.Stderr,
		"changes apply": apply.Stdout + apply.Stderr, "changes diff after apply": after.Stdout + after.Stderr} {
		if rawControl(out) {
			t.Errorf("%s printed a raw control character (a name the command chose):\n%q", name, out)
		}
	}
	if !strings.Contains(diff.Stdout, `bottom\n\x1b[2Kx`) {
		t.Errorf("changes diff does not name the file escaped:\n%s", diff.Stdout)
	}
	// Applied (its whole path written on the host) or still held: never dropped.
	if onHost := readDeep(b.Work, leaf, 24); onHost != "deep\n" && !strings.Contains(after.Stdout, `bottom\n\x1b[2Kx`) {
		t.Errorf("the deep file is neither on the host (%q) nor still held after apply:\n%s\napply: %s", onHost, after.Stdout, apply)
	}
}

// readDeep walks depth directories down from dir, each the only directory of the one above,
// by descriptor, and returns leaf's content there ("" when a step is missing).
func readDeep(dir, leaf string, depth int) string {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return ""
	}
	for k := 0; k <= depth; k++ {
		f := os.NewFile(uintptr(fd), "dir")
		entries, _ := f.ReadDir(-1)
		var next string
		for _, e := range entries {
			if e.IsDir() && len(e.Name()) == 200 {
				next = e.Name()
			}
		}
		if k == depth {
			lfd, err := unix.Openat(fd, leaf, unix.O_RDONLY, 0)
			f.Close()
			if err != nil {
				return ""
			}
			lf := os.NewFile(uintptr(lfd), leaf)
			defer lf.Close()
			data, _ := io.ReadAll(lf)
			return string(data)
		}
		nfd, err := unix.Openat(fd, next, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		f.Close()
		if next == "" || err != nil {
			return ""
		}
		fd = nfd
	}
	return ""
}

// TestRedTeam5DNSNamesOnTheRecord: a DNS label may hold any byte. The command asks sysprof's
// stub for names that carry ESC sequences and a newline followed by a forged summary line: each
// is refused (NXDOMAIN: no query leaves), on the record by its exact name, and printed escaped,
// as root and as an ordinary user. Signals to every process it can see do not reach the stub.
func TestRedTeam5DNSNamesOnTheRecord(t *testing.T) {
	b, root, profile := redteamBox(t)
	p := loadProfile(t, profile)
	p.Network.Resolve = append(p.Network.Resolve, policy.Endpoint{Endpoint: "pkgs.example.test"})
	p.Filesystem.Read = append(p.Filesystem.Read, policy.PathRule{Path: "/etc/resolv.conf"})
	p.Syscalls.Allow = append(p.Syscalls.Allow, policy.Syscall{Name: "setsockopt"}, policy.Syscall{Name: "recvfrom"})
	resolving := filepath.Join(root, "resolving.yaml")
	if err := policy.Save(resolving, p); err != nil {
		t.Fatal(err)
	}
	names := []string{"evil\x1b[2K\x1b[1Ax.test", "a\nsysprof: 0 operation(s) denied.test"}
	argv := []string{"./rt"}
	for _, n := range names {
		argv = append(argv, "dnsq="+strings.NewReplacer("\x1b", `\x1b`, "\n", `\n`).Replace(n))
	}
	// Then SIGSTOP and SIGKILL to every process the command can name (kill(-1)): the stub and
	// the proxy are sysprof's, outside the sandbox's PID namespace, and still answer after.
	argv = append(argv, "kill=-1,19", "kill=-1,9", "dnsq=pkgs.example.test")
	for _, as := range asUsers {
		t.Run(as.name, func(t *testing.T) {
			if as.wrap != nil {
				chownTree(t, b.Work, 65534)
				chownTree(t, b.Home, 65534)
			}
			rep := filepath.Join(root, as.name+"-dns.json")
			r := enforceAs(t, b, as.wrap, resolving, rep, argv...)
			if strings.Count(r.Stdout, "dnsq: rcode 3") != len(names) || !strings.HasSuffix(r.Stdout, "dnsq: rcode 0\n") {
				t.Fatalf("want NXDOMAIN for each forged name and, after the signals, an answer for the profile's: %s", r)
			}
			if rawControl(r.Stderr) {
				t.Errorf("enforce printed a query name raw:\n%q", r.Stderr)
			}
			rp := testutil.ReadReport(t, rep)
			for _, n := range names {
				if !slices.ContainsFunc(rp.Denials, func(d report.Denial) bool {
					return d.Kind == report.KindNetwork && strings.EqualFold(d.Endpoint, n)
				}) {
					t.Errorf("the query for %q is not on the record: %+v", n, rp.Denials)
				}
			}
		})
	}
}
