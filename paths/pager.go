package paths

import (
	"path"
	"slices"
	"strings"
)

// PagerHistory reports less's history file and the temporary file it writes it through
// ($HOME/.lesshst, $HOME/.lesshsQ; $HOME/.local/state/lesshst where XDG_STATE_HOME is used),
// in portable form: what a tool that pages its output at a terminal (git log -p) makes less
// read and write on every run. A profile never grants them (a file rule in $HOME cannot be
// enforced without making $HOME writable); the sandbox runs less with NoPagerHistory instead.
func PagerHistory(p string) bool {
	dir, name := path.Split(p)
	switch dir {
	case "$HOME/":
		return name == ".lesshst" || name == ".lesshsQ"
	case "$HOME/.local/state/":
		return name == "lesshst" || name == "lesshsQ"
	}
	return false
}

// NoPagerHistory is the environment entry the enforcer gives every command: less neither reads
// nor saves a history with it (as when its history file cannot be written), so a paged run is
// the same with and without the sandbox and asks for nothing in $HOME.
const NoPagerHistory = "LESSHISTFILE=-"

// pagers are the programs a tool may page through: less (git's, man's and systemd's default)
// and the common replacements.
var pagers = []string{"less", "more", "most", "pg", "delta", "bat", "moar", "moor"}

// NoPager is the environment entry that keeps git from starting a pager the profile cannot
// run, or "": GIT_PAGER=cat (git then pages nothing: no pipe, no fork, its output goes to the
// terminal as it does to a file) when no exec rule is a pager ($GIT_PAGER's or $PAGER's first
// word, or one of the common ones). A profile learned with its output to a file never saw git
// page, which it does only at a terminal; one learned at a terminal runs its pager as learned.
func NoPager(exec []string, lookup Lookup) string {
	names := slices.Clone(pagers)
	for _, v := range []string{"GIT_PAGER", "PAGER"} {
		if x, ok := lookup(v); ok {
			if f := strings.Fields(x); len(f) > 0 {
				names = append(names, path.Base(f[0]))
			}
		}
	}
	for _, e := range exec {
		base := path.Base(e)
		for _, n := range names {
			if ok, _ := path.Match(base, n); ok || base == n {
				return ""
			}
		}
	}
	return "GIT_PAGER=cat"
}

// NoOptionalLocks keeps git from the index refresh `git status` (and other reading commands)
// make as a side effect when the index is "racily clean" (a file modified in the second the
// index was written): a write into .git that a run makes or not by timing alone, and that
// learn would hold pending as a write to a protected path. git documents the variable for
// exactly such callers; the commands that must write the index still take its lock.
const NoOptionalLocks = "GIT_OPTIONAL_LOCKS=0"

// LearnEnv is what learn adds to the command's environment: what every run adds whatever its
// profile (RunEnv), so that learn sees the command as enforce runs it.
func LearnEnv() []string { return []string{NoPagerHistory, NoOptionalLocks} }

// RunEnv is what a run held to a profile whose exec rules are exec adds to the command's
// environment: LearnEnv, and NoPager's entry when the profile runs no pager. enforce (and its
// audit) and drift give it alike, so that drift at a terminal sees what enforce would run
// there; learn gives LearnEnv alone (a pager it sees is learned).
func RunEnv(exec []string, lookup Lookup) []string {
	env := LearnEnv()
	if kv := NoPager(exec, lookup); kv != "" {
		env = append(env, kv)
	}
	return env
}
