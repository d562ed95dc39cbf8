package paths

import (
	"os"
	"path/filepath"
	"testing"
)

// TestProjectRoot: $WORKDIR is the top of the git tree the command runs in (a .git directory
// or file), from any subdirectory of it; outside a tree it is the directory itself; a home kept
// in git never makes the home $WORKDIR.
func TestProjectRoot(t *testing.T) {
	root := t.TempDir()
	home := filepath.Join(root, "home")
	mk := func(rel ...string) string {
		p := filepath.Join(append([]string{root}, rel...)...)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	repo := mk("home", "src", "repo")
	mk("home", "src", "repo", ".git")
	sub := mk("home", "src", "repo", "lib", "deep")
	wt := mk("home", "src", "wt")
	if err := os.WriteFile(filepath.Join(wt, ".git"), []byte("gitdir: "+repo+"/.git/worktrees/wt\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wtSub := mk("home", "src", "wt", "pkg")
	mk("home", ".git") // a home kept in git
	plain := mk("home", "notes", "misc")
	outside := mk("elsewhere", "x")
	for _, c := range []struct{ dir, want string }{
		{repo, repo},
		{sub, repo},
		{wtSub, wt},
		{plain, plain},
		{home, home},
		{outside, outside},
	} {
		if got := ProjectRoot(c.dir, home); got != c.want {
			t.Errorf("ProjectRoot(%s) = %s, want %s", c.dir, got, c.want)
		}
	}
	if got := Host(sub, EnvList([]string{"HOME=" + home}))["WORKDIR"]; got != repo {
		t.Errorf("Host's $WORKDIR from %s = %s, want the tree's top %s", sub, got, repo)
	}
}
