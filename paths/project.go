package paths

import (
	"os"
	"path/filepath"
)

// ProjectRoot is $WORKDIR for a command run in dir (a real, absolute path): the top of the git
// work tree dir lies in (the nearest directory holding a `.git`, a directory or, in a `git
// worktree` or a submodule, a file), else dir itself. A tool run from a subdirectory of its tree
// reads the same files as from the top (git its .git, cargo and npm their manifests), so the
// profile names them from the top either way. A tree at or above $HOME (a home kept in git) is
// not one: dir stays, so that $WORKDIR never grows to the home.
func ProjectRoot(dir, home string) string {
	if dir == "" || !filepath.IsAbs(dir) {
		return dir
	}
	for d := dir; d != "/"; d = filepath.Dir(d) {
		if home != "" && Within(home, d) {
			return dir
		}
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
	}
	return dir
}
