package enforcer

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
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
