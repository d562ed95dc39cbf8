package paths

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestLinkedGitDirVocabulary: in a `git worktree` and a submodule (.git a file naming a git
// directory outside the tree) what git reads there is $WORKDIR/.git/... in a profile, and a
// $WORKDIR/.git rule expands to the worktree's own or the common directory by git's split; in
// a checkout whose .git is a directory nothing changes.
func TestLinkedGitDirVocabulary(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	common := filepath.Join(root, "main", ".git")
	gitdir := filepath.Join(common, "worktrees", "wt")
	wt := filepath.Join(root, "wt")
	super := filepath.Join(root, "super")
	module := filepath.Join(super, ".git", "modules", "sub")
	sub := filepath.Join(super, "sub")
	for _, d := range []string{gitdir, wt, module, sub} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, s := range map[string]string{filepath.Join(wt, ".git"): "gitdir: " + gitdir + "\n",
		filepath.Join(gitdir, "commondir"): "../..\n", filepath.Join(sub, ".git"): "gitdir: ../.git/modules/sub\n"} {
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := EnvList([]string{"HOME=" + filepath.Join(root, "home")})

	v := Host(wt, env)
	if v[GitDirKey] != gitdir || v[GitCommonKey] != common {
		t.Fatalf("Host(worktree) git dirs = %q, %q; want %q, %q", v[GitDirKey], v[GitCommonKey], gitdir, common)
	}
	rs := NewRoots(v)
	for host, want := range map[string]string{
		filepath.Join(gitdir, "HEAD"):                  "$WORKDIR/.git/HEAD",
		filepath.Join(gitdir, "index"):                 "$WORKDIR/.git/index",
		filepath.Join(common, "objects", "ab", "cdef"): "$WORKDIR/.git/objects/ab/cdef",
		filepath.Join(common, "config"):                "$WORKDIR/.git/config",
		filepath.Join(wt, "notes.txt"):                 "$WORKDIR/notes.txt",
	} {
		if got := rs.Portable(host); got != want {
			t.Errorf("Portable(%s) = %q, want %q", host, got, want)
		}
	}
	for p, want := range map[string][]string{
		wt:                                 {common}, // the worktree's own lies in the common one
		filepath.Join(wt, ".git"):          {common},
		filepath.Join(wt, ".git", "HEAD"):  {filepath.Join(gitdir, "HEAD")},
		filepath.Join(wt, ".git", "index"): {filepath.Join(gitdir, "index")},
		filepath.Join(wt, ".git", "logs", "HEAD"):  {filepath.Join(gitdir, "logs", "HEAD")},
		filepath.Join(wt, ".git", "logs", "refs"):  {filepath.Join(common, "logs", "refs")},
		filepath.Join(wt, ".git", "refs", "heads"): {filepath.Join(common, "refs", "heads")},
		filepath.Join(wt, ".git", "hooks"):         {filepath.Join(common, "hooks")},
		filepath.Join(wt, "src"):                   nil,
		filepath.Join(root, "other"):               nil,
	} {
		if got := LinkedGitPaths(p, v); !slices.Equal(got, want) {
			t.Errorf("LinkedGitPaths(%s) = %q, want %q", p, got, want)
		}
	}

	v = Host(sub, env)
	if v[GitDirKey] != module || v[GitCommonKey] != module {
		t.Fatalf("Host(submodule) git dirs = %q, %q; want %q", v[GitDirKey], v[GitCommonKey], module)
	}
	if got := NewRoots(v).Portable(filepath.Join(module, "HEAD")); got != "$WORKDIR/.git/HEAD" {
		t.Errorf("Portable(submodule HEAD) = %q", got)
	}
	if got := LinkedGitPaths(filepath.Join(sub, ".git", "objects"), v); !slices.Equal(got, []string{filepath.Join(module, "objects")}) {
		t.Errorf("LinkedGitPaths(submodule objects) = %q", got)
	}

	if err := os.MkdirAll(filepath.Join(root, "plain", ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	v = Host(filepath.Join(root, "plain"), env)
	if _, ok := v[GitDirKey]; ok || LinkedGitPaths(filepath.Join(root, "plain", ".git"), v) != nil {
		t.Errorf("a .git directory has linked git dirs: %q", v)
	}
}

// TestCanonical: an older learn's $HOME/.config/go is $GOCONFIG today (a committed profile and a
// new learn compare equal); nothing else changes.
func TestCanonical(t *testing.T) {
	for in, want := range map[string]string{"$HOME/.config/go": "$GOCONFIG", "$HOME/.config/go/telemetry/local": "$GOCONFIG/telemetry/local",
		"$HOME/.config/gopls": "$HOME/.config/gopls", "$HOME/.config": "$HOME/.config", "/etc/go": "/etc/go"} {
		if got := Canonical(in); got != want {
			t.Errorf("Canonical(%s) = %s, want %s", in, got, want)
		}
	}
}
