package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/report"
)

// The seventh red team (issue 23): what leaves a run in a form a check did not expect. A file
// the sweep of a bound .git judges by its content (config, info/attributes, commondir),
// replaced by a symlink, a fifo or a directory on its way; a sparse file whose copy is larger
// than the run could write; an ACL granting another local user; special files in a learned
// output directory; file capabilities.

// TestRedTeam7GitConfigReplaced: under a profile that writes the work tree's .git whole (a
// learned git commit: bound writable), the run replaces a file git reads for what to run
// with something the content check did not read: .git/config a symlink to a config of the
// run's (core.fsmonitor) or a fifo (git hangs), .git/info a symlink to an attributes file of
// the run's, a .git/commondir naming a directory whose config and hooks git then reads; or
// writes a submodule's hook (.git/modules/lib/hooks), which the top hooks' cover missed. Each
// is held once as a dangerous change (report and stderr), the host's file is put back as it
// was (or none, as before), and the user's next `git status` runs nothing (root and nobody).
func TestRedTeam7GitConfigReplaced(t *testing.T) {
	g := gitCommitBox(t)
	b := g.b
	wide := widen(t, g.profile, g.root, "wide7.yaml", []string{"symlinkat", "symlink", "mknodat", "mknod", "mkdirat", "mkdir", "unlinkat", "unlink", "rmdir", "renameat2", "renameat", "rename", "umask", "fchmodat", "chmod"},
		[]string{"/usr/bin/ln", "/usr/bin/mkfifo", "/usr/bin/cp", "/usr/bin/mkdir", "/usr/bin/rm", "/usr/bin/mv", "/usr/bin/rmdir", "/usr/bin/chmod"})
	openForNobody(t, g.root)
	gitDir := filepath.Join(b.Work, ".git")
	evil := `printf '[core]\n\trepositoryformatversion = 0\n\tfsmonitor = "touch PWNED"\n'`
	rows := []struct{ name, script, held string }{
		{"config-symlink", evil + " > .git/evil.cfg && ln -sf evil.cfg .git/config", "config"},
		{"config-fifo", "rm .git/config && mkfifo .git/config", "config"},
		{"info-symlink", "mkdir -p .git/evilinfo && echo '* filter=x diff=x' > .git/evilinfo/attributes && rm -rf .git/info && ln -s evilinfo .git/info", "info"},
		{"commondir", "mkdir .git/x && cp -r .git/objects .git/refs .git/HEAD .git/x/ && " + evil + " > .git/x/config && echo x > .git/commondir", "commondir"},
		// A fifo in the bound .git (git hangs on what it opens: ORIG_HEAD at the next reset):
		// special files never leave a run, bound or staged.
		{"fifo", "mkfifo .git/ORIG_HEAD", "ORIG_HEAD"},
		// A submodule's hook: git runs it in the submodule (its checkout at the next submodule
		// update); the top .git/hooks is a cover, this one was not.
		{"submodule-hook", "mkdir -p .git/modules/lib/hooks && printf '#!/bin/sh\\ntouch PWNED\\n' > .git/modules/lib/hooks/post-checkout && chmod +x .git/modules/lib/hooks/post-checkout", "modules/lib/hooks/post-checkout"},
	}
	for _, as := range asUsers {
		t.Run(as.name, func(t *testing.T) {
			if as.wrap != nil {
				chownTree(t, filepath.Join(g.root, "x"), 65534)
			}
			for _, row := range rows {
				t.Run(row.name, func(t *testing.T) {
					before, err := os.ReadFile(filepath.Join(gitDir, "config"))
					if err != nil {
						t.Fatal(err)
					}
					rep := filepath.Join(g.root, as.name+"-"+row.name+".json")
					r := enforceAs(t, b, as.wrap, wide, rep, "sh", "-c", row.script+" && echo payload-done")
					if !strings.Contains(r.Stdout, "payload-done") {
						t.Fatalf("the payload did not run through (widen the profile): %s", r)
					}
					if fi, err := os.Lstat(filepath.Join(gitDir, "config")); err != nil || !fi.Mode().IsRegular() {
						t.Fatalf("the host's .git/config after the run: %v %v: want the regular file put back", fi, err)
					}
					if after, _ := os.ReadFile(filepath.Join(gitDir, "config")); string(after) != string(before) {
						t.Errorf("the host's .git/config changed:\n%s", after)
					}
					if fi, err := os.Lstat(filepath.Join(gitDir, "info")); err == nil && !fi.IsDir() {
						t.Errorf("the host's .git/info is a %v after the run", fi.Mode().Type())
					}
					if _, err := os.Lstat(filepath.Join(gitDir, "commondir")); err == nil {
						t.Errorf("the run's .git/commondir stayed on the host")
					}
					held := filepath.Join(gitDir, row.held)
					if _, err := os.Lstat(held); err == nil && row.held != "config" {
						t.Errorf("the run's %s stayed on the host", held)
					}
					if !heldDangerous(testutil.ReadReport(t, rep), held) {
						t.Errorf("the report does not hold %s as dangerous", held)
					}
					if !strings.Contains(r.Stderr, held) {
						t.Errorf("enforce's stderr does not name %s:\n%s", held, r.Stderr)
					}
					// The user's next git command runs nothing of the run's.
					if l := b.Run(t, "git", "-C", b.Work, "-c", "safe.directory=*", "status", "--short"); l.Code != 0 {
						t.Errorf("git status on the host after the run: %s", l)
					}
					if _, err := os.Lstat(filepath.Join(b.Work, "PWNED")); err == nil {
						t.Errorf("the host's git status ran the run's fsmonitor")
						os.Remove(filepath.Join(b.Work, "PWNED"))
					}
					b.Sh(t, "rm -rf "+filepath.Join(gitDir, "x")+" "+filepath.Join(gitDir, "evil.cfg")+" "+filepath.Join(gitDir, "evilinfo")+" "+filepath.Join(gitDir, "modules", "lib"))
				})
			}
			// A protected path renamed away, written, and renamed back; the host's /dev/shm:
			// refused and recorded (the covers are mount points; /dev/shm is not the host's).
			t.Run("renamed-away", func(t *testing.T) {
				try := func(name, cmd string) string {
					return "if " + cmd + " 2>/dev/null; then echo " + name + ": ok; else echo " + name + ": refused; fi; "
				}
				script := "echo start; mkdir -p .git/x; " +
					try("hooks-away", "mv .git/hooks .git/h") + try("gitdir-away", "mv .git .g") +
					try("into-hooks", "mv .git/x .git/hooks/x") + try("shm", "echo x > /dev/shm/sysprof-rt7") + "rmdir .git/x; echo payload-done"
				rep := filepath.Join(g.root, as.name+"-renamed.json")
				r := enforceAs(t, b, as.wrap, wide, rep, "sh", "-c", script)
				if !strings.Contains(r.Stdout, "payload-done") {
					t.Fatalf("the payload did not run through: %s", r)
				}
				checkAttacks(t, b, r, testutil.ReadReport(t, rep), []redteamAttack{
					{action: "hooks-away", line: "hooks-away: refused", path: "$WORKDIR/.git/hooks", unobservable: "file denials"},
					{action: "gitdir-away", line: "gitdir-away: refused", path: "$WORKDIR/.git", unobservable: "file denials"},
					{action: "into-hooks", line: "into-hooks: refused", path: "$WORKDIR/.git/hooks/x", unobservable: "file denials"},
					{action: "shm", line: "shm: refused", path: "/dev/shm/sysprof-rt7", unobservable: "file denials"},
				}, as.wrap != nil)
				if _, err := os.Lstat("/dev/shm/sysprof-rt7"); err == nil {
					os.Remove("/dev/shm/sysprof-rt7")
					t.Errorf("the run wrote the host's /dev/shm")
				}
			})
		})
	}
}

// TestRedTeam7WhatLeavesTheTree: under a profile learned from `make` (a recipe writing
// build/ with the shell, truncate and python3), the run leaves in build/:
//   - a sparse file of 2 GiB (truncate): it takes no room in the run's bounded tmpfs and must
//     take none on the host's disk either (a plain copy wrote 2 GiB of zeros; a terabyte fills
//     the disk): it lands with its hole;
//   - a file with a POSIX ACL: one naming another user (daemon) is refused in the sandbox
//     (EINVAL: the uid is not mapped there); one granting others lands without it, said;
//   - a fifo and a unix socket: held dangerous, not on the host;
//   - a file whose security.capability the run sets: refused (no CAP_SETFCAP), none on the host.
func TestRedTeam7WhatLeavesTheTree(t *testing.T) {
	b, root, profile, py := learnedMakeBox(t, nil)
	wide := widen(t, profile, root, "wide7.yaml", []string{"setxattr", "fsetxattr", "lsetxattr", "mknodat", "mknod", "socket", "bind", "getsockname", "getpeername"}, nil)
	testutil.WriteFile(t, filepath.Join(b.Work, "leave.py"), `import os, socket, struct
os.chdir("build")
def act(name, f):
    try:
        f(); print(name + ": ok")
    except OSError as e:
        print(name + ": " + (os.strerror(e.errno) if e.errno else str(e)))
open("acl", "w").write("x"); os.chmod("acl", 0o600)
def acl(*entries):
    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", *e) for e in entries)
# user::rw- user:1:rw- group::--- mask::rw- other::---: uid 1 is not mapped in the sandbox
act("acl-user", lambda: os.setxattr("acl", "system.posix_acl_access", acl((1, 6, 0xffffffff), (2, 6, 1), (4, 0, 0xffffffff), (0x10, 6, 0xffffffff), (0x20, 0, 0xffffffff))))
# user::rw- group::--- mask::rw- other::rw-
act("acl", lambda: os.setxattr("acl", "system.posix_acl_access", acl((1, 6, 0xffffffff), (4, 0, 0xffffffff), (0x10, 6, 0xffffffff), (0x20, 6, 0xffffffff))))
open("cap", "w").write("x"); os.chmod("cap", 0o755)
act("setcap", lambda: os.setxattr("cap", "security.capability", struct.pack("<IIIII", 0x02000001, 1 << 13, 0, 0, 0)))
act("fifo", lambda: os.mkfifo("fifo"))
act("socket", lambda: socket.socket(socket.AF_UNIX).bind("sock"))
`, 0o644)
	openForNobody(t, root)
	for _, as := range asUsers {
		t.Run(as.name, func(t *testing.T) {
			if as.wrap != nil {
				chownTree(t, filepath.Join(root, "x"), 65534)
			}
			build := filepath.Join(b.Work, "build")
			b.Sh(t, "rm -rf "+build)
			rep := filepath.Join(root, as.name+"-leave.json")
			r := enforceAs(t, b, as.wrap, wide, rep, "sh", "-c", "mkdir -p build && truncate -s 2G build/sparse && "+py+" leave.py && echo payload-done")
			if !strings.Contains(r.Stdout, "payload-done") {
				t.Fatalf("the payload did not run through: %s", r)
			}
			rp := testutil.ReadReport(t, rep)
			var st unix.Stat_t
			if err := unix.Stat(filepath.Join(build, "sparse"), &st); err != nil || st.Size != 2<<30 {
				t.Errorf("build/sparse on the host: %v, size %d: want the learned file applied", err, st.Size)
			} else if used := st.Blocks * 512; used > 1<<20 {
				t.Errorf("build/sparse takes %d bytes of the host's disk for a file of no data: its hole was written out", used)
			}
			if _, err := os.Stat(filepath.Join(build, "acl")); err != nil {
				t.Errorf("build/acl did not land: %v", err)
			} else if n, err := unix.Getxattr(filepath.Join(build, "acl"), "system.posix_acl_access", nil); err == nil && n > 0 {
				t.Errorf("the run's ACL (a grant to another user) reached the host")
			}
			if !strings.Contains(r.Stdout, "acl: ok") {
				t.Errorf("the ACL was not set in the run (the row tests nothing): %s", r.Stdout)
			} else if rp.Changes == nil || !slices.ContainsFunc(rp.Changes.Held, func(c report.Change) bool {
				return c.Path == filepath.Join(build, "acl") && c.State == report.ChangeStripped && strings.Contains(c.Reason, "ACL")
			}) {
				t.Errorf("the report does not say the ACL was removed: %+v", rp.Changes)
			}
			if n, err := unix.Getxattr(filepath.Join(build, "cap"), "security.capability", nil); err == nil && n > 0 {
				t.Errorf("file capabilities reached the host")
			}
			if !strings.Contains(r.Stdout, "acl-user: Invalid argument") {
				t.Errorf("an ACL naming another user was not refused in the sandbox: %s", r.Stdout)
			}
			if strings.Contains(r.Stdout, "setcap: ok") {
				t.Errorf("the run set file capabilities (want refused: no CAP_SETFCAP)")
			}
			for _, n := range []string{"fifo", "sock"} {
				p := filepath.Join(build, n)
				if _, err := os.Lstat(p); err == nil {
					t.Errorf("%s reached the host", p)
				}
				if !heldDangerous(rp, p) {
					t.Errorf("the report does not hold %s as dangerous", p)
				}
			}
		})
	}
}
