package enforcer

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/policy"
)

// TestLinkedGitDir: a work tree whose .git is a file (git worktree, submodule) protects the
// hooks and config of the git directory it names, through commondir; a .git directory or none
// adds nothing (the protected list's $WORKDIR/.git covers it).
func TestLinkedGitDir(t *testing.T) {
	root := t.TempDir()
	common := filepath.Join(root, "main", ".git")
	gitdir := filepath.Join(common, "worktrees", "wt")
	work := filepath.Join(root, "wt")
	for _, d := range []string{gitdir, work, filepath.Join(root, "plain", ".git")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string) {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(work, ".git"), "gitdir: ../main/.git/worktrees/wt\n")
	write(filepath.Join(gitdir, "commondir"), "../..\n")
	write(filepath.Join(gitdir, "config.worktree"), "")
	got := linkedGitDir(work)
	want := []string{filepath.Join(common, "hooks"), filepath.Join(common, "config"), filepath.Join(gitdir, "config.worktree")}
	if !slices.Equal(got, want) {
		t.Errorf("linkedGitDir(worktree) = %q, want %q", got, want)
	}
	if got := protectedHostPaths(Env{Vars: map[string]string{"WORKDIR": work}}); !slices.Contains(got, filepath.Join(common, "hooks")) {
		t.Errorf("protectedHostPaths does not hold the linked hooks: %q", got)
	}
	for _, w := range []string{filepath.Join(root, "plain"), filepath.Join(root, "none"), ""} {
		if got := linkedGitDir(w); got != nil {
			t.Errorf("linkedGitDir(%q) = %q, want nil", w, got)
		}
	}
}

// TestLinkedGitDirGranted: in a `git worktree` (its git directory and the main repository's
// outside the tree) a rule on the whole tree lets git read both; a write rule below .git writes
// git's own half of it (index: the worktree's, objects: the common one); a write of the tree
// writes neither; a write of .git itself leaves the common hooks and config read-only.
func TestLinkedGitDirGranted(t *testing.T) {
	root := t.TempDir()
	common := filepath.Join(root, "main", ".git")
	gitdir := filepath.Join(common, "worktrees", "wt")
	work := filepath.Join(root, "wt")
	// info/ as git init makes it: a missing protected path below .git stages it instead.
	for _, d := range []string{gitdir, work, filepath.Join(common, "hooks"), filepath.Join(common, "objects"), filepath.Join(common, "info")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, s := range map[string]string{filepath.Join(work, ".git"): "gitdir: ../main/.git/worktrees/wt\n",
		filepath.Join(gitdir, "commondir"): "../..\n", filepath.Join(gitdir, "index"): "", filepath.Join(common, "config"): ""} {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := Env{Vars: paths.Host(work, paths.EnvList([]string{"HOME=" + filepath.Join(root, "home"), "TMPDIR=" + filepath.Join(root, "tmp")})), Arch: "x86_64"}
	compile := func(write ...string) *Compiled {
		t.Helper()
		p := &policy.Profile{Syscalls: policy.Syscalls{Allow: []policy.Syscall{{Name: "read"}}}}
		p.Filesystem.Read = []policy.PathRule{{Path: "$WORKDIR"}}
		for _, w := range write {
			p.Filesystem.Write = append(p.Filesystem.Write, policy.PathRule{Path: w})
		}
		c, err := Compile(p, env)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	// writable: a Landlock write rule at or above p, and no read-only cover at or above it.
	writable := func(c *Compiled, p string) bool {
		return paths.CoveredBy(p, c.Plan.Landlock.Write) && !paths.CoveredBy(p, c.Plan.ReadOnly)
	}
	c := compile("$WORKDIR/.git/index", "$WORKDIR/.git/objects")
	for _, d := range []string{gitdir, common} {
		if !paths.CoveredBy(d, c.Plan.Landlock.Read) {
			t.Errorf("landlock read = %q: want the linked git directory %s", c.Plan.Landlock.Read, d)
		}
	}
	for p, want := range map[string]bool{filepath.Join(gitdir, "index"): true, filepath.Join(common, "index"): false,
		filepath.Join(common, "objects"): true, filepath.Join(common, "hooks"): false, filepath.Join(common, "config"): false} {
		if got := writable(c, p); got != want {
			t.Errorf("write .git/index and .git/objects: %s writable = %v, want %v (landlock write %q, read-only %q)", p, got, want, c.Plan.Landlock.Write, c.Plan.ReadOnly)
		}
	}
	c = compile("$WORKDIR")
	for _, p := range []string{gitdir, common, filepath.Join(common, "hooks"), filepath.Join(common, "config")} {
		if writable(c, p) {
			t.Errorf("write $WORKDIR: %s writable (landlock write %q, read-only %q)", p, c.Plan.Landlock.Write, c.Plan.ReadOnly)
		}
	}
	c = compile("$WORKDIR/.git")
	for _, p := range []string{filepath.Join(common, "hooks"), filepath.Join(common, "config")} {
		if writable(c, p) {
			t.Errorf("write $WORKDIR/.git: %s writable (landlock write %q, read-only %q)", p, c.Plan.Landlock.Write, c.Plan.ReadOnly)
		}
	}
	for _, p := range []string{filepath.Join(common, "objects"), filepath.Join(gitdir, "index.lock")} {
		if !writable(c, p) {
			t.Errorf("write $WORKDIR/.git: %s is not writable (landlock write %q, read-only %q, writable %q, staged %+v)", p, c.Plan.Landlock.Write, c.Plan.ReadOnly, c.Plan.Writable, c.Plan.Staged)
		}
	}
}
