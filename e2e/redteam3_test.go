package e2e

import (
	"fmt"
	"io"
	"net"
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

// The third red team (issue 23, "a fresh red team will try new classes"): the attacks run under
// a realistic profile, one learned from an ordinary build and test (make compiling the probe
// with cc and running it, then pytest with a subprocess and a temp directory). Such a profile
// allows far more than the probe's own benign run (AF_UNIX sockets and connect, symlink,
// rename, kill, setrlimit, the terminal ioctls, chmod), so an attack that was refused only
// because its call was never learned shows here.

// realisticMakefile builds the probe and runs the project's tests: what `make` does in a small
// C project with Python tests.
const realisticMakefile = `all: rt
	./rt benign
	pytest-3 -q -p no:cacheprovider
rt: rt.c
	cc -O1 -o rt rt.c -lpthread
`

// realisticTest is the project's test: a subprocess, a temp directory, $HOME.
const realisticTest = `import os, subprocess
def test_sub(tmp_path):
    (tmp_path / "f").write_text("x")
    assert subprocess.run(["sh", "-c", "echo hi"], capture_output=True).stdout == b"hi\n"
    assert os.path.isdir(os.environ["HOME"])
`

// realisticBox learns `make` in a fresh C + Python project; the probe it built stays in the
// work tree, and the attacks run as `./rt …` under the learned profile.
func realisticBox(t *testing.T) (b *testutil.Box, root, profile string) {
	t.Helper()
	testutil.RequireRoot(t)
	testutil.RequireTools(t, hostPath, "setpriv", "make", "cc", "pytest-3")
	root, err := os.MkdirTemp("/var/cache", "sysprof-e2e-redteam3-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	b = newBox(t, root, "x", "dev", "work", "")
	src, err := os.ReadFile(testutil.Testdata("redteam", "rt.c"))
	if err != nil {
		t.Fatal(err)
	}
	testutil.WriteFile(t, filepath.Join(b.Work, "rt.c"), string(src), 0o644)
	testutil.WriteFile(t, filepath.Join(b.Work, "Makefile"), realisticMakefile, 0o644)
	testutil.WriteFile(t, filepath.Join(b.Work, "test_probe.py"), realisticTest, 0o644)
	testutil.WriteFile(t, filepath.Join(b.Work, "in.txt"), "input\n", 0o644)
	profile = filepath.Join(root, "make.yaml")
	if r := b.Sysprof(t, "learn", "-p", profile, "--", "make"); r.Code != 0 || !strings.Contains(r.Stdout, "benign: ok") || !strings.Contains(r.Stdout, "1 passed") {
		t.Fatalf("learn make: %s", r)
	}
	p := loadProfile(t, profile)
	for _, want := range []string{"socket", "connect", "symlink", "kill"} {
		if !slices.ContainsFunc(p.Syscalls.Allow, func(s policy.Syscall) bool { return s.Name == want }) {
			t.Fatalf("the realistic profile does not allow %s: the test no longer tries what a wide profile lets through", want)
		}
	}
	openForNobody(t, root)
	return b, root, profile
}

// TestRedTeamRealisticProfile runs every attack of the suite under the realistic profile, as
// root and as an ordinary user: each blocked and on the record. A host daemon's socket by path
// (an ssh agent's, docker's) is connected with calls the profile allows (socket AF_UNIX,
// connect): the cover over it refuses and the guard records it.
func TestRedTeamRealisticProfile(t *testing.T) {
	b, root, profile := realisticBox(t)
	agent := filepath.Join(root, "agent.sock")
	l, err := net.Listen("unix", agent)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if err := os.Chmod(agent, 0o777); err != nil {
		t.Fatal(err)
	}
	// The fifth round's too, but for its stdin and shipped-program rows (TestRedTeam5's box)
	// and the script written in the work tree: make's ./rt is an exec rule on a file the run
	// writes at the top of the tree, which makes the staged tree exec (README, Known limits).
	fifth := slices.DeleteFunc(slices.Clone(redteam5Attacks), func(a redteamAttack) bool {
		return a.action == "reopen=0" || strings.Contains(a.action, "./evil") || strings.HasPrefix(a.action, "script=")
	})
	attacks := slices.Concat(redteamAttacks, redteam3Attacks, redteam4Attacks, fifth)
	plantRepo(t, b)
	// The fifth round reads and links the user's key: a secret the host has (a read of one it
	// lacks is no attempt on anything).
	testutil.WriteFile(t, filepath.Join(b.Home, ".ssh", "id_rsa"), "KEY\n", 0o600)
	// What this profile learned is no longer refused by seccomp: the probe's link and symlink
	// attacks go to TestRedTeamPersistence's changeset checks, and an abstract socket of the host
	// is simply not in the run's network namespace (ECONNREFUSED, nothing to record).
	// The work tree is staged here: what the fourth round does to its .git (rename over the
	// config, times, mode, attributes, a linked O_TMPFILE) lands in the changeset, held
	// dangerous, and TestRedTeamPersistence holds it to that.
	attacks = slices.DeleteFunc(attacks, func(a redteamAttack) bool {
		return strings.HasPrefix(a.action, "symlink=") || strings.HasPrefix(a.action, "abstract=") ||
			strings.Contains(a.action, "$WORKDIR/.git/")
	})
	attacks = append(attacks, redteamAttack{action: "unix=" + agent, line: "unix: EACCES", endpoint: "unix:" + agent, unobservable: "file denials"})
	argv := []string{"./rt", "benign", "fdleak"}
	for _, a := range attacks {
		argv = append(argv, expandAttack(b, a.action))
	}
	argv = append(argv, "abstract=sysprof-redteam", "prlimit-self", "thread", "benign")
	for _, as := range asUsers {
		t.Run(as.name, func(t *testing.T) {
			if as.wrap != nil {
				chownTree(t, b.Work, 65534)
				chownTree(t, b.Home, 65534)
			}
			rep := filepath.Join(root, as.name+".json")
			r := enforceAs(t, b, as.wrap, profile, rep, argv...)
			if strings.Count(r.Stdout, "benign: ok") != 2 || !strings.Contains(r.Stdout, "\nthread: ok") || !strings.Contains(r.Stdout, "\nprlimit-self: ok") {
				t.Errorf("the ordinary work failed under the realistic profile: %s", r)
			}
			if !strings.Contains(r.Stdout, "\nabstract: ECONNREFUSED") && !strings.Contains(r.Stdout, "\nabstract: EPERM") {
				t.Errorf("an abstract unix socket reached something: %s", r.Stdout)
			}
			if !strings.Contains(r.Stdout, "\nfdleak: none\n") {
				t.Errorf("the command inherited a descriptor beyond stdio:\n%s", r.Stdout)
			}
			checkAttacks(t, b, r, testutil.ReadReport(t, rep), attacks, as.wrap != nil)
		})
	}
}

// persistenceFiles are files other programs run or obey later, outside the sandbox: git's hooks
// and config, hook managers (pre-commit, lefthook, husky), CI definitions, editors' and dev
// containers' tasks (a devcontainer's initializeCommand runs on the host), direnv, cargo's
// runner and rustc-wrapper, pnpm's install hooks, mercurial's hooks, sysprof's own profile and
// project file, a start-up file of the shell (Debian's .bashrc sources ~/.bash_aliases).
var persistenceFiles = []string{
	"$WORKDIR/.git/hooks/pre-commit",
	"$WORKDIR/.git/config",
	"$WORKDIR/.github/workflows/ci.yml",
	"$WORKDIR/.vscode/tasks.json",
	"$WORKDIR/.husky/pre-commit",
	"$WORKDIR/sysprof.yaml",
	"$WORKDIR/.sysprof/make.yaml",
	"$WORKDIR/.pre-commit-config.yaml",
	"$WORKDIR/lefthook.yml",
	"$WORKDIR/.lefthook.yml",
	"$WORKDIR/.envrc",
	"$WORKDIR/.devcontainer/devcontainer.json",
	"$WORKDIR/.cargo/config.toml",
	"$WORKDIR/.circleci/config.yml",
	"$WORKDIR/.gitlab/ci/build.yml",
	"$WORKDIR/.travis.yml",
	"$WORKDIR/Jenkinsfile",
	"$WORKDIR/azure-pipelines.yml",
	"$WORKDIR/bitbucket-pipelines.yml",
	"$WORKDIR/.forgejo/workflows/ci.yml",
	"$WORKDIR/.gitea/workflows/ci.yml",
	"$WORKDIR/.buildkite/pipeline.yml",
	"$WORKDIR/.woodpecker.yml",
	"$WORKDIR/.drone.yml",
	"$WORKDIR/.pnpmfile.cjs",
	"$WORKDIR/.hg/hgrc",
	"$WORKDIR/.npmrc",
	"$WORKDIR/.yarnrc.yml",
	"$HOME/.bash_aliases",
	"$HOME/.bashrc",
	// Repositories below the work tree (issue 23): a nested one's, a bare one's and a
	// submodule's git directory run their hooks and obey their config as the outer one does.
	"$WORKDIR/sub/.git/hooks/pre-commit",
	"$WORKDIR/sub/.git/config",
	"$WORKDIR/vendor/lib.git/hooks/post-update",
	"$WORKDIR/vendor/lib.git/config",
	"$WORKDIR/.git/modules/m/hooks/post-checkout",
	"$WORKDIR/sub/.git/modules/m/config",
}

// TestRedTeamPersistence (issue 23, the third red team): under the realistic profile, whose run
// writes files in the work tree (so the work tree is staged), the command writes every file of
// persistenceFiles, links a work-tree name to a git hook and renames a file over .git/config.
// Each must either be refused on the record or end in the changeset as dangerous (critical,
// never applied, no `refine --yes`): a "held, low" entry is one `changes apply --all` away from
// running outside the sandbox at the next commit, cd, CI run or editor start.
func TestRedTeamPersistence(t *testing.T) {
	b, root, profile := realisticBox(t)
	for _, d := range []string{".git/hooks", ".github", ".husky", ".vscode", ".sysprof"} {
		if err := os.MkdirAll(filepath.Join(b.Work, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	testutil.WriteFile(t, filepath.Join(b.Work, ".git", "config"), "[core]\n", 0o644)
	argv := []string{"./rt"}
	for _, f := range persistenceFiles {
		argv = append(argv, "put="+expandAttack(b, f))
	}
	// Links: a new name to a hook; a learned output (out.txt, which the next build outside the
	// sandbox writes) and the learned executable (rt) turned into links to a hook and to ~/.bashrc.
	argv = append(argv, "symlink=.git/hooks/post-checkout,hook-link", "rename=in.txt,"+filepath.Join(b.Work, ".git", "config"),
		"symlink=.git/hooks/pre-push,out.txt", "symlink="+filepath.Join(b.Home, ".bashrc")+",rt")
	// Changes without an open for writing (issue 23, the fourth round): times, mode and
	// extended attributes of a hook, an O_TMPFILE linked in as a hook.
	hook := filepath.Join(b.Work, ".git", "hooks", "pre-commit.sample")
	testutil.WriteFile(t, hook, "#!/bin/sh\n", 0o644)
	argv = append(argv, "utime="+hook, "chmod="+hook, "xattr="+hook+",user.sysprof", "tmplink=.,"+filepath.Join(b.Work, ".git", "hooks", "post-merge"))
	for _, as := range asUsers {
		t.Run(as.name, func(t *testing.T) {
			if as.wrap != nil {
				chownTree(t, b.Work, 65534)
				chownTree(t, b.Home, 65534)
			}
			existed := map[string]bool{}
			for _, f := range append(slices.Clone(persistenceFiles), "$WORKDIR/out.txt", "$WORKDIR/rt", "$WORKDIR/.git/config", "$WORKDIR/.git/hooks/pre-commit.sample") {
				if _, err := os.Lstat(expandAttack(b, f)); err == nil {
					existed[expandAttack(b, f)] = true
				}
			}
			rep := filepath.Join(root, as.name+"-persist.json")
			r := enforceAs(t, b, as.wrap, profile, rep, argv...)
			rp := testutil.ReadReport(t, rep)
			lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
			if len(lines) != len(argv)-1 {
				t.Fatalf("the probe printed %d lines for %d actions: %s", len(lines), len(argv)-1, r)
			}
			var held []string
			if rp.Changes != nil {
				for _, h := range rp.Changes.Held {
					held = append(held, fmt.Sprintf("%s %s %s %s", h.Class, h.Risk, h.Op, h.Path))
				}
			}
			targets := slices.Clone(persistenceFiles)
			targets = append(targets, "$WORKDIR/hook-link", "$WORKDIR/.git/config", "$WORKDIR/out.txt", "$WORKDIR/rt",
				"$WORKDIR/.git/hooks/pre-commit.sample", "$WORKDIR/.git/hooks/pre-commit.sample", "$WORKDIR/.git/hooks/pre-commit.sample", "$WORKDIR/.git/hooks/post-merge")
			for i, f := range targets {
				p := expandAttack(b, f)
				refused := !strings.HasSuffix(lines[i], ": ok")
				denied := slices.ContainsFunc(rp.Denials, func(d report.Denial) bool {
					return d.Kind == report.KindFile && (d.Path == p || strings.HasPrefix(p, d.Path+"/")) ||
						d.Kind == report.KindSyscall && strings.Contains(d.What, p) // a call the profile never learned, on p
				})
				var entry *report.Change
				if rp.Changes != nil {
					for j, h := range rp.Changes.Held {
						if h.Path == p {
							entry = &rp.Changes.Held[j]
						}
					}
				}
				switch {
				case entry != nil && entry.Class == "dangerous" && entry.Risk == report.RiskCritical && entry.State != report.ChangeStripped:
				case entry != nil:
					t.Errorf("%s (%s): in the changeset as %s, %s: what is written there runs outside the sandbox later; want dangerous and critical", f, lines[i], entry.Class, entry.Risk)
				case refused && (denied || as.wrap != nil):
				case refused:
					t.Errorf("%s: refused (%s) without a record", f, lines[i])
				default:
					t.Errorf("%s: written (%s) and neither refused nor held as dangerous", f, lines[i])
				}
				if fi, err := os.Lstat(p); err == nil && (fi.Mode()&os.ModeSymlink != 0 || !existed[p]) {
					t.Errorf("%s reached the host", p)
				}
			}
			if t.Failed() {
				t.Logf("stdout:\n%s\nheld:\n  %s", r.Stdout, strings.Join(held, "\n  "))
			}
		})
	}
}

// TestRedTeamTerminalInjection (bwrap's CVE-2017-5226 class) at a real terminal: the command's
// stdio is the user's terminal, and another terminal of the same user is open (the shell the
// user types into next). TIOCSTI and TIOCLINUX on its own terminal (which would type into the
// user's shell after the run) and writing to the other terminal by name are refused and on the
// record; the other terminal receives nothing.
func TestRedTeamTerminalInjection(t *testing.T) {
	b, root, profile := realisticBox(t)
	for _, as := range asUsers {
		t.Run(as.name, func(t *testing.T) {
			ptm, pts := testutil.OpenPTY(t)
			otherm, other := testutil.OpenPTY(t)
			if as.wrap != nil {
				chownTree(t, b.Work, 65534)
				chownTree(t, b.Home, 65534)
				for _, f := range []*os.File{pts, other} {
					if err := os.Chown(f.Name(), 65534, 65534); err != nil {
						t.Fatal(err)
					}
				}
			}
			rep := filepath.Join(root, as.name+"-tty.json")
			argv := append(slices.Clone(as.wrap), testutil.SysprofBin, "enforce", "-p", profile, "--report", rep, "--",
				"./rt", "tiocsti=0", "tioclinux=0", "tiocsti=1", "write="+other.Name(), "tty")
			cmd, ctx := testutil.Command(t, b.Work, b.Environ(), argv...)
			cmd.Stdin, cmd.Stdout, cmd.Stderr = pts, pts, pts
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			done := make(chan struct{})
			go func() { defer close(done); _, _ = io.Copy(&out, ptm) }()
			err := cmd.Wait()
			pts.Close()
			<-done
			r := testutil.Finish(t, ctx, cmd, err, "", "")
			got := strings.ReplaceAll(out.String(), "\r\n", "\n")
			for _, want := range []string{"\ntiocsti: EPERM", "\ntioclinux: EPERM", "\nwrite: EACCES", "\ntty: ENXIO"} {
				if !strings.Contains("\n"+got, want) {
					t.Errorf("want %q at the terminal (exit %d):\n%s", strings.TrimPrefix(want, "\n"), r.Code, got)
				}
			}
			fds := []unix.PollFd{{Fd: int32(otherm.Fd()), Events: unix.POLLIN}}
			if n, _ := unix.Poll(fds, 0); n > 0 {
				buf := make([]byte, 256)
				k, _ := otherm.Read(buf)
				t.Errorf("the user's other terminal received %q", buf[:k])
			}
			rp := testutil.ReadReport(t, rep)
			if !slices.ContainsFunc(rp.Denials, func(d report.Denial) bool { return d.Syscall == "ioctl" && strings.Contains(d.What, "TIOCSTI") }) {
				t.Errorf("TIOCSTI at the terminal is not on the record: %+v", rp.Denials)
			}
			recorded := slices.ContainsFunc(rp.Denials, func(d report.Denial) bool { return d.Kind == report.KindFile && d.Path == other.Name() })
			if !recorded && (as.wrap == nil || !slices.ContainsFunc(rp.Unobservable, func(u string) bool { return strings.HasPrefix(u, "file denials") })) {
				t.Errorf("the write to the other terminal %s is not on the record: %+v %q", other.Name(), rp.Denials, rp.Unobservable)
			}
		})
	}
}

// TestRedTeamFloodCannotHideTheRecord: the record keeps a bounded number of distinct denials
// (sysprof's memory), and a command may fill it on purpose: thousands of ioctls with distinct
// requests (each its own suggestion), thousands of creates in a read-only tree (each its own
// path), then the attack it wants unseen. The attack is still listed: past the bound, a denial
// of a kind not listed yet (another syscall, another access or risk) is kept.
func TestRedTeamFloodCannotHideTheRecord(t *testing.T) {
	b, root, profile := realisticBox(t)
	argv := []string{"./rt", "flood=ioctl,5000", "ptrace=1", "flood=create,4300", "put=" + filepath.Join(b.Home, ".bashrc")}
	for _, as := range asUsers {
		t.Run(as.name, func(t *testing.T) {
			if as.wrap != nil {
				chownTree(t, b.Work, 65534)
				chownTree(t, b.Home, 65534)
			}
			rep := filepath.Join(root, as.name+"-flood.json")
			r := enforceAs(t, b, as.wrap, profile, rep, argv...)
			if !strings.Contains(r.Stdout, "flood: 5000 of 5000 refused") || !strings.Contains(r.Stdout, "flood: 4300 of 4300 refused") || !strings.Contains(r.Stdout, "ptrace: EPERM") {
				t.Fatalf("the floods or the attack did not run as planned: %s", r)
			}
			rp := testutil.ReadReport(t, rep)
			if !slices.ContainsFunc(rp.Denials, func(d report.Denial) bool { return d.Syscall == "ptrace" }) {
				t.Errorf("the ptrace after 5000 distinct ioctl denials is not on the record (%d denials listed)", len(rp.Denials))
			}
			listed := slices.ContainsFunc(rp.Denials, func(d report.Denial) bool {
				return d.Kind == report.KindFile && strings.HasSuffix(d.Path, "/.bashrc")
			})
			// On a loaded machine the guard's ring buffer may fill before user space reads it, and
			// another sysprof process on the host may take the run's guard slot: those events are
			// lost (the writes still refused), and the report says so.
			lost := slices.ContainsFunc(rp.Notes, func(n string) bool {
				return strings.Contains(n, "ring buffer was full") || strings.Contains(n, "may be missing from this report")
			})
			if lost && rp.LostRecords == 0 {
				t.Errorf("the guard lost records, but the report counts none: %q", rp.Notes)
			}
			switch {
			case as.wrap != nil || listed:
			case lost:
				t.Logf("the guard lost records (the report says so); the cap was not reached: %q", rp.Notes)
			default:
				t.Errorf("the write to ~/.bashrc after 4300 distinct file denials is not on the record (%d denials listed, %d lost): %q", len(rp.Denials), rp.LostRecords, rp.Notes)
			}
		})
	}
}

// TestRedTeamLinkedGitDir: in a `git worktree` (or a submodule) the work tree's .git is a file
// naming a git directory elsewhere, inside the main repository's .git, where git keeps the hooks
// and config every checkout shares. A learned `git commit` there writes that .git as a whole
// (the profile calls it $WORKDIR/.git, protected: pending unless learned --accept-risky). Under
// enforce, its hooks and config stay read-only: the command cannot plant a hook or set
// core.fsmonitor (which the user's next `git status` would run), and git commit still works.
func TestRedTeamLinkedGitDir(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTools(t, hostPath, "setpriv", "git")
	root, err := os.MkdirTemp("/var/cache", "sysprof-e2e-redteam3-git-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	b := newBox(t, root, "x", "dev", "work", "")
	main := filepath.Join(root, "x", "main")
	git := func(dir string, args ...string) {
		t.Helper()
		cmd, ctx := testutil.Command(t, dir, b.Environ(), append([]string{"git"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil || ctx.Err() != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	if err := os.MkdirAll(main, 0o755); err != nil {
		t.Fatal(err)
	}
	git(main, "init", "-q")
	git(main, "config", "user.email", "dev@example.invalid")
	git(main, "config", "user.name", "dev")
	testutil.WriteFile(t, filepath.Join(main, "a"), "a\n", 0o644)
	git(main, "add", "a")
	git(main, "commit", "-qm", "a")
	git(main, "worktree", "add", "-q", b.Work)
	data, err := os.ReadFile(testutil.BuildC(t, "redteam/rt.c"))
	if err != nil {
		t.Fatal(err)
	}
	testutil.WriteFile(t, filepath.Join(b.Work, "rt"), string(data), 0o755)
	testutil.WriteFile(t, filepath.Join(b.Work, "in.txt"), "input\n", 0o644)
	git(b.Work, "add", "rt", "in.txt")
	testutil.WriteFile(t, filepath.Join(b.Work, "a"), "b\n", 0o644)
	profile := filepath.Join(root, "commit.yaml")
	// --accept-risky: writing .git is git commit's nature (as in a checkout, where .git is a
	// directory): the rule is granted, and the hooks and config must stay out of it.
	if r := b.Sysprof(t, "learn", "--accept-risky", "-p", profile, "--", "git", "commit", "-qam", "b"); r.Code != 0 {
		t.Fatalf("learn git commit in a worktree: %s", r)
	}
	if r := b.Sysprof(t, "learn", "--force", "-p", profile, "--", "./rt", "benign"); r.Code != 0 {
		t.Fatalf("learn the probe into the same profile: %s", r)
	}
	// The worktree's git directory is $WORKDIR/.git in the profile (paths.LinkedGitPaths):
	// written whole, it is the main repository's .git on the host.
	if !slices.ContainsFunc(loadProfile(t, profile).Filesystem.Write, func(w policy.PathRule) bool { return w.Path == "$WORKDIR/.git" && !w.Pending }) {
		t.Fatalf("the learned git commit does not write $WORKDIR/.git (%s/.git) as a whole: the test no longer tries what it should: %+v", main, loadProfile(t, profile).Filesystem.Write)
	}
	hook, config := filepath.Join(main, ".git", "hooks", "post-checkout"), filepath.Join(main, ".git", "config")
	before, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	openForNobody(t, root)
	for i, as := range asUsers {
		t.Run(as.name, func(t *testing.T) {
			if as.wrap != nil {
				chownTree(t, filepath.Join(root, "x"), 65534)
			}
			rep := filepath.Join(root, as.name+"-git.json")
			r := enforceAs(t, b, as.wrap, profile, rep, "./rt", "put="+hook, "write="+config)
			if !strings.Contains(r.Stdout, "put: EROFS") || !strings.Contains(r.Stdout, "write: EROFS") {
				t.Errorf("a hook or the config of the main repository was written: %s", r)
			}
			if _, err := os.Lstat(hook); err == nil {
				t.Errorf("the hook %s reached the host", hook)
			}
			if after, _ := os.ReadFile(config); string(after) != string(before) {
				t.Errorf("the main repository's config changed:\n%s", after)
			}
			rp := testutil.ReadReport(t, rep)
			for _, p := range []string{hook, config} {
				recorded := slices.ContainsFunc(rp.Denials, func(d report.Denial) bool { return d.Kind == report.KindFile && d.Path == p })
				if !recorded && (as.wrap == nil || !slices.ContainsFunc(rp.Unobservable, func(u string) bool { return strings.HasPrefix(u, "file denials") })) {
					t.Errorf("the write to %s is not on the record: %+v", p, rp.Denials)
				}
			}
			testutil.WriteFile(t, filepath.Join(b.Work, "a"), fmt.Sprintf("c%d\n", i), 0o644)
			if r := enforceAs(t, b, as.wrap, profile, filepath.Join(root, as.name+"-commit.json"), "git", "commit", "-qam", as.name); r.Code != 0 {
				t.Errorf("git commit in the worktree failed under its profile: %s", r)
			}
		})
	}
}
