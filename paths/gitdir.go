package paths

import (
	"os"
	"path/filepath"
	"strings"
)

// A work tree's git directory is named $WORKDIR/.git in a profile wherever it lies on the host.
// In a `git worktree` or a submodule .git is a file naming the real directory (the worktree's
// own, .git/worktrees/NAME, beside the main repository's common one; a submodule's
// .git/modules/NAME in the superproject), outside the tree: learn names what git reads there
// $WORKDIR/.git/..., and enforce grants a $WORKDIR/.git rule on those directories, so that one
// profile holds in a checkout, a worktree and a submodule alike.

// GitDirKey and GitCommonKey are the keys of Host's values holding the linked git directory and
// its common directory of the work tree, when its .git is a file. They are no variables: a
// profile cannot name them ($WORKDIR.gitdir is $WORKDIR followed by ".gitdir").
const (
	GitDirKey    = "WORKDIR.gitdir"
	GitCommonKey = "WORKDIR.gitcommon"
)

// LinkedGitDirs returns the git directory a work tree's .git file names (work real and
// absolute) and its common directory (the commondir file's, else the same), both real paths;
// ok is false when .git is a directory, absent or not a gitfile.
func LinkedGitDirs(work string) (gitdir, common string, ok bool) {
	if work == "" {
		return "", "", false
	}
	data, err := os.ReadFile(filepath.Join(work, ".git"))
	if err != nil {
		return "", "", false // a directory (EISDIR), or no repository
	}
	gitdir, ok = strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir:")
	if !ok {
		return "", "", false
	}
	abs := func(base, p string) string {
		if !filepath.IsAbs(p) {
			p = filepath.Join(base, p)
		}
		return Resolve(filepath.Clean(p))
	}
	gitdir = abs(work, strings.TrimSpace(gitdir))
	common = gitdir
	if c, err := os.ReadFile(filepath.Join(gitdir, "commondir")); err == nil {
		common = abs(gitdir, strings.TrimSpace(string(c)))
	}
	return gitdir, common, true
}

// gitCommon is git's list of what in a git directory is shared by all worktrees (true) or a
// worktree's own (false) (git's path.c, common_list): the longest entry a path lies at or below
// decides; anything not listed (HEAD, index, ORIG_HEAD, ...) is the worktree's own.
var gitCommon = map[string]bool{
	"branches": true, "common": true, "config": true, "gc.pid": false, "hooks": true, "info": true,
	"info/sparse-checkout": false, "logs": true, "logs/HEAD": false, "logs/refs/bisect": false,
	"logs/refs/rewritten": false, "logs/refs/worktree": false, "lost-found": true, "objects": true,
	"refs": true, "refs/bisect": false, "refs/rewritten": false, "refs/worktree": false,
	"remotes": true, "worktrees": true, "rr-cache": true, "svn": true, "shallow": true,
	"packed-refs": true, "description": true,
}

// gitShared reports whether rest (relative to a git directory, "" for the directory itself)
// lies in the common directory.
func gitShared(rest string) bool {
	for p := rest; p != "." && p != "" && p != "/"; p = filepath.Dir(p) {
		if c, ok := gitCommon[p]; ok {
			return c
		}
	}
	return false
}

// LinkedGitPaths returns where host path p (an expanded rule, clean, absolute; globs kept)
// reaches into the work tree's linked git directories (values from Host): for p at or below
// $WORKDIR/.git, the same place in the common or the worktree's own directory (git's split);
// for p above .git (the whole tree), both directories whole (the common one alone when it
// holds the other). Nil when .git is no gitfile or p
// does not reach it.
func LinkedGitPaths(p string, values map[string]string) []string {
	work, gitdir, common := values["WORKDIR"], values[GitDirKey], values[GitCommonKey]
	if work == "" || gitdir == "" || common == "" {
		return nil
	}
	dotgit := filepath.Join(work, ".git")
	switch {
	case Within(dotgit, p):
		if Within(gitdir, common) { // a worktree's own lies in the common one
			return []string{common}
		}
		return []string{gitdir, common}
	case Within(p, dotgit):
		rest := strings.TrimPrefix(p[len(dotgit):], "/")
		if gitShared(rest) {
			return []string{filepath.Join(common, rest)}
		}
		return []string{filepath.Join(gitdir, rest)}
	}
	return nil
}
