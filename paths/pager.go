package paths

import "path"

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
