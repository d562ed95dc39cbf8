package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
)

// The eighth red team (issue 23): a payload (testdata/redteam/rt8.py) in place of a learned
// real tool's python3 (a learned `make`, learnedMakeBox), widened by the calls a tool that sets
// xattrs, makes nodes, links and renames would have learned, as root and as an ordinary user.
// Each attack is refused and on the record (a denial; as an ordinary user a file denial is
// listed unobservable), or held dangerous in the changeset.

// redteam8Attacks are refused and recorded: what the kernel refused without a trace before
// (xattrs, device nodes and whiteouts: the supervisor now answers them) and the classes this
// round tried that were already refused and recorded.
var redteam8Attacks = []redteamAttack{
	{action: "setcap", line: "setcap: EPERM", syscall: "setxattr", what: `"security.capability"`},
	{action: "acl-user", line: "acl-user: EINVAL", syscall: "setxattr", what: `"system.posix_acl_access"`},
	{action: "trusted-redirect", line: "trusted-redirect: EPERM", syscall: "setxattr", what: `"trusted.overlay.redirect"`},
	{action: "user-overlay", line: "user-overlay: EPERM", syscall: "setxattr", what: `"user.overlay.metacopy"`},
	{action: "whiteout", line: "whiteout: EPERM", syscall: "mknodat"},
	{action: "whiteout-host", line: "whiteout-host: EPERM", syscall: "mknodat"},
	{action: "rename-whiteout", line: "rename-whiteout: EPERM", syscall: "renameat2"},
	{action: "ficlone-hidden", line: "ficlone-hidden: EPERM", syscall: "ioctl"},
	{action: "fanotify", line: "fanotify: EPERM", syscall: "fanotify_init"},
	{action: "ptrace-parent", line: "ptrace-parent: EPERM", syscall: "ptrace"},
	{action: "pidfd-getfd", line: "pidfd-getfd: EPERM", syscall: "pidfd_open"},
	{action: "prctl-mm", line: "prctl-mm: EPERM", syscall: "prctl"},
	{action: "memfd-secret", line: "memfd-secret: EPERM", syscall: "memfd_secret"},
	{action: "proc-attr", line: "proc-attr: EROFS", path: "/proc/self/attr/current", unobservable: "file denials"},
	{action: "proc-sys", line: "proc-sys: EROFS", path: "/proc/sys/kernel/hostname", unobservable: "file denials"},
	{action: "sysfs", line: "sysfs: EROFS", path: "/sys/kernel/mm/transparent_hugepage/enabled", unobservable: "file denials"},
}

// redteam8Held are attacks on protected paths of a staged work tree: what they write is held
// dangerous, the host's file unchanged.
var redteam8Held = []struct{ action, held string }{
	{"exchange-workflow", ".github/workflows/ci.yml"}, // renameat2(RENAME_EXCHANGE) with a file of the run's
}

// TestRedTeam8 runs the payload under the learned make's profile, staged (build/ absent: the
// work tree is a stage) and bound (build/ exists: bound writable, swept at the end).
func TestRedTeam8(t *testing.T) {
	b, root, profile, py := learnedMakeBox(t, func(b *testutil.Box) {
		testutil.WriteFile(t, filepath.Join(b.Work, ".github/workflows/ci.yml"), "on: push\n", 0o644)
		testutil.WriteFile(t, filepath.Join(b.Work, ".env"), "API_TOKEN=SECRET8\n", 0o644)
	})
	wide := widen(t, profile, root, "wide8.yaml", []string{"setxattr", "fsetxattr", "lsetxattr", "mknodat", "mknod", "socket", "socketpair",
		"sendmsg", "renameat2", "copy_file_range", "ioctl", "linkat", "link", "unlink", "unlinkat", "uname", "epoll_create1", "epoll_ctl", "getppid"}, nil)
	p := loadProfile(t, wide)
	p.Filesystem.Write = append(p.Filesystem.Write, policy.PathRule{Path: "$HOME/.cache/rt8"})
	p.Filesystem.Exec = append(p.Filesystem.Exec, policy.PathRule{Path: "/usr/bin/env"})
	bound := filepath.Join(root, "bound8.yaml")
	if err := policy.Save(bound, p); err != nil {
		t.Fatal(err)
	}
	debugger := widen(t, profile, root, "debugger8.yaml", []string{"uname", "ptrace", "process_vm_readv", "kcmp", "getppid"}, nil)
	data, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), "testdata/redteam/rt8.py"))
	if err != nil {
		t.Fatal(err)
	}
	testutil.WriteFile(t, filepath.Join(b.Work, "rt8.py"), string(data), 0o644)
	openForNobody(t, root)
	build := filepath.Join(b.Work, "build")
	for _, as := range asUsers {
		t.Run(as.name, func(t *testing.T) {
			if as.wrap != nil {
				chownTree(t, filepath.Join(root, "x"), 65534)
			}
			t.Run("staged", func(t *testing.T) {
				b.Sh(t, "rm -rf "+build)
				actions := []string{"acl-others", "cfr-hidden", "scm-rights", "tmpfile-hook", "badnames", "longname"}
				for _, a := range redteam8Attacks {
					actions = append(actions, a.action)
				}
				for _, h := range redteam8Held {
					actions = append(actions, h.action)
				}
				rep := filepath.Join(root, as.name+"-rt8.json")
				r := enforceAs(t, b, as.wrap, wide, rep, "sh", "-c", "mkdir -p build && echo hi > build/out && "+py+" rt8.py "+strings.Join(actions, " "))
				if !strings.Contains(r.Stdout, "payload-done") {
					t.Fatalf("the payload did not run through: %s", r)
				}
				rp := testutil.ReadReport(t, rep)
				checkAttacks(t, b, r, rp, redteam8Attacks, as.wrap != nil)
				for _, h := range redteam8Held {
					if p := filepath.Join(b.Work, h.held); !heldDangerous(rp, p) {
						t.Errorf("%s: %s is not held dangerous", h.action, p)
					}
				}
				if got, _ := os.ReadFile(filepath.Join(b.Work, ".github/workflows/ci.yml")); string(got) != "on: push\n" {
					t.Errorf("the host's workflow changed: %q", got)
				}
				// O_TMPFILE made in the protected directory, then linked in through
				// /proc/self/fd: on a stage's overlay the link answers EXDEV (the magic link's
				// mount is not the tree's), whatever the directory; nothing is made.
				if l := lineOf(r.Stdout, "tmpfile-hook"); l != "tmpfile-hook: EXDEV" {
					t.Errorf("O_TMPFILE then linkat into .github/workflows: %s", l)
				}
				if _, err := os.Lstat(filepath.Join(b.Work, ".github/workflows/evil.yml")); err == nil {
					t.Errorf("the run's workflow reached the host")
				}
				// A hidden secret copied with copy_file_range: nothing of it leaves (the file reads
				// as empty); the read is on the record as root.
				if got, _ := os.ReadFile(filepath.Join(build, "stolen")); strings.Contains(string(got), "SECRET8") {
					t.Errorf("copy_file_range copied the hidden .env out: %q", got)
				}
				if as.wrap == nil && !slices.ContainsFunc(rp.Denials, func(d report.Denial) bool { return d.Path == filepath.Join(b.Work, ".env") }) {
					t.Errorf("the read of the hidden .env is not on the record")
				}
				checkACLStripped(t, rp, filepath.Join(build, "acl-others"))
				// Two held names that differ only in bytes that are not UTF-8: each is named
				// exactly (escaped) where a person reads it; a name past NAME_MAX never exists.
				for _, n := range []string{`held\xfe`, `held\xff`} {
					if !strings.Contains(r.Stderr, filepath.Join(b.Work, n)+": ") {
						t.Errorf("enforce's summary does not name %s exactly:\n%s", n, r.Stderr)
					}
				}
				if l := lineOf(r.Stdout, "longname"); l != "longname: ENAMETOOLONG" {
					t.Errorf("a name past NAME_MAX: %s", l)
				}
				b.Sh(t, "rm -f "+filepath.Join(b.Work, "held")+"?")
				t.Logf("fds in flight (SCM_RIGHTS) the run could hold: %s", lineOf(r.Stdout, "scm-rights"))
			})
			// Under a profile that learned ptrace, process_vm_readv and kcmp (a debugger's), the
			// same calls at PID 1, the init stage (also the payload's parent here), are refused
			// by the supervisor and recorded (the kernel refused them, not dumpable, untraced).
			t.Run("init-stage", func(t *testing.T) {
				rep := filepath.Join(root, as.name+"-rt8-init.json")
				r := enforceAs(t, b, as.wrap, debugger, rep, py, "rt8.py", "longname", "ptrace-init", "ptrace-seize-init", "vmread-init", "kcmp-init")
				if !strings.Contains(r.Stdout, "payload-done") {
					t.Fatalf("the payload did not run through: %s", r)
				}
				checkAttacks(t, b, r, testutil.ReadReport(t, rep), []redteamAttack{
					{action: "ptrace-init", line: "ptrace-init: EPERM", syscall: "ptrace"}, // one entry, counted twice
					{action: "ptrace-seize-init", line: "ptrace-seize-init: EPERM", syscall: "ptrace"},
					{action: "vmread-init", line: "vmread-init: EPERM", syscall: "process_vm_readv"},
					{action: "kcmp-init", line: "kcmp-init: EPERM", syscall: "kcmp"},
				}, as.wrap != nil)
			})
			// A directory bound writable (outside the work tree: a tool's cache the profile
			// writes whole): an ACL the run set there is stripped by the sweep (changeset.Strip,
			// Apply's rule); a whiteout and file capabilities are refused and recorded.
			t.Run("bound", func(t *testing.T) {
				cache := filepath.Join(b.Home, ".cache", "rt8")
				b.Sh(t, "rm -rf "+cache+" && mkdir -p "+cache+" && echo hi > "+cache+"/out && chown -R "+map[bool]string{true: "65534:65534", false: "0:0"}[as.wrap != nil]+" "+filepath.Join(b.Home, ".cache"))
				rep := filepath.Join(root, as.name+"-rt8-bound.json")
				r := enforceAs(t, b, as.wrap, bound, rep, "env", "RT8_DIR="+cache, py, "rt8.py", "acl-others", "whiteout", "setcap")
				if !strings.Contains(r.Stdout, "payload-done") {
					t.Fatalf("the payload did not run through: %s", r)
				}
				rp := testutil.ReadReport(t, rep)
				if slices.ContainsFunc(rp.Notes, func(n string) bool { return strings.Contains(n, cache) && strings.Contains(n, "staged") }) {
					t.Fatalf("%s is staged, not bound writable: %q", cache, rp.Notes)
				}
				checkAttacks(t, b, r, rp, []redteamAttack{redteam8Attacks[0], redteam8Attacks[4]}, as.wrap != nil)
				checkACLStripped(t, rp, filepath.Join(cache, "acl-others"))
				if !slices.ContainsFunc(rp.Changes.Held, func(c report.Change) bool { return strings.Contains(c.Reason, "bound writable") }) {
					t.Errorf("the ACL was not stripped by the sweep of the bound directory: %+v", rp.Changes.Held)
				}
			})
		})
	}
}

// checkACLStripped: file p landed without the ACL the run gave it, and the report says so.
func checkACLStripped(t *testing.T, rp *report.Report, p string) {
	t.Helper()
	if _, err := os.Stat(p); err != nil {
		t.Errorf("%s did not land: %v", p, err)
	} else if n, err := unix.Getxattr(p, "system.posix_acl_access", nil); err == nil && n > 0 {
		t.Errorf("the run's ACL on %s reached the host", p)
	}
	if rp.Changes == nil || !slices.ContainsFunc(rp.Changes.Held, func(c report.Change) bool {
		return c.Path == p && c.State == report.ChangeStripped && strings.Contains(c.Reason, "ACL")
	}) {
		t.Errorf("the report does not say %s's ACL was removed: %+v", p, rp.Changes)
	}
}

// lineOf is the payload's output line for action, or "(none)".
func lineOf(stdout, action string) string {
	for _, l := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(l, action+":") {
			return l
		}
	}
	return "(none)"
}

// TestRedTeam8ChangesetFlood: a payload makes a million empty files in the staged work tree
// (outside what make learned): the changeset's file limit stops it, the denial names the
// limit, and what the user reviews stays bounded (stderr; `changes diff` folds a directory's
// ordinary changes). The profile's limit is 8,192 files so that the test is quick; a learned
// one is at least 65,536 (before the fold, `changes diff` printed 18 MB for those).
func TestRedTeam8ChangesetFlood(t *testing.T) {
	b, root, profile, py := learnedMakeBox(t, nil)
	p := loadProfile(t, widen(t, profile, root, "wide8.yaml", []string{"uname", "mkdir", "mkdirat"}, nil))
	p.Limits.WriteFiles = 8192
	wide := filepath.Join(root, "flood8.yaml")
	if err := policy.Save(wide, p); err != nil {
		t.Fatal(err)
	}
	testutil.WriteFile(t, filepath.Join(b.Work, "flood.py"), `import os
os.makedirs("flood", exist_ok=True)
n = 0
try:
    for i in range(1000000):
        d = "flood/%d" % (i // 10000)
        if i % 10000 == 0:
            os.makedirs(d, exist_ok=True)
        open("%s/%d" % (d, i), "w").close()
        n += 1
except OSError as e:
    print("flood: %d files, then %s" % (n, e.strerror))
else:
    print("flood: %d files" % n)
`, 0o644)
	rep := filepath.Join(root, "flood.json")
	start := time.Now()
	r := enforceAs(t, b, nil, wide, rep, py, "flood.py")
	took := time.Since(start)
	rp := testutil.ReadReport(t, rep)
	st, _ := os.Stat(rep)
	held := 0
	if rp.Changes != nil {
		held = len(rp.Changes.Held)
	}
	diff := b.Sysprof(t, "changes", "diff", rp.Changes.Run)
	t.Logf("%s; enforce %v, report %d bytes, %d held, stderr %d bytes, changes diff %d bytes (exit %d)", lineOf(r.Stdout, "flood"), took, st.Size(), held, len(r.Stderr), len(diff.Stdout)+len(diff.Stderr), diff.Code)
	if !slices.ContainsFunc(rp.Denials, func(d report.Denial) bool { return d.Kind == report.KindLimit }) {
		t.Errorf("the flood did not meet the file limit on the record: %+v", rp.Denials)
	}
	if len(r.Stderr) > 64<<10 {
		t.Errorf("enforce's stderr is %d bytes for the flood: want it bounded", len(r.Stderr))
	}
	if n := len(diff.Stdout); n > 256<<10 || !strings.Contains(diff.Stdout, "more ordinary change(s) in "+filepath.Join(b.Work, "flood")) {
		t.Errorf("changes diff prints %d bytes for the flood: want its directories folded", n)
	}
	b.Sysprof(t, "changes", "drop", rp.Changes.Run)
}
