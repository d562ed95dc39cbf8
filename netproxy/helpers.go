package netproxy

import "path/filepath"

// transportHelpers is the one table of the programs a tool hands its own connections to. A
// rule learned by a binary (`by: B`) passes for a connection held by B's very file, and for
// one held by a helper of B's here that B runs (every process between the helper and B a
// helper of B's too): nothing else B runs, not a hook, a build script, a lifecycle script,
// nor a copy of B's bytes elsewhere. Learn records the binary that connected, so a learned
// rule names the helper itself; the table is for rules that name the tool (written by hand,
// or learned where the tool connected first). A tool absent from the table has no helpers.
var transportHelpers = []struct {
	tool    string   // the rule's binary, by file name
	helpers []string // file names, looked up in helperDirs
	why     string
}{
	{"git", []string{"git", "git-remote-http", "git-remote-https", "git-remote-ftp", "git-remote-ftps", "ssh"},
		"git fetches and pushes over HTTP(S) and FTP through its remote helpers, which it starts through the git of its exec path (a copy of /usr/bin/git on Debian, not a link), and over SSH through ssh; a GIT_SSH_COMMAND with arguments runs ssh through sh, which is not a helper (learn records ssh itself)"},
	{"cargo", []string{"git", "git-remote-http", "git-remote-https", "ssh"},
		"with net.git-fetch-with-cli cargo fetches git dependencies and git indexes by running git"},
	{"go", []string{"git", "git-remote-http", "git-remote-https", "ssh"},
		"go fetches modules without a proxy (GOPROXY=direct, GOPRIVATE) by running git"},
	{"node", nil, "npm and node fetch with node's own HTTP client; a git dependency runs git, which connects as itself"},
	{"python3", nil, "pip fetches with its own HTTP client; a VCS requirement runs git, which connects as itself"},
	{"curl", nil, "curl connects itself"},
}

// helperDirs are where a helper's file must be: system directories only, so that a program
// of the same name anywhere else (the work tree, /tmp) is never taken for one.
var helperDirs = []string{"/usr/bin", "/bin", "/usr/local/bin", "/usr/lib/git-core", "/usr/libexec/git-core"}

// helpersOf are the helper file names of the tool at path (by its file name; none when the
// table lacks it).
func helpersOf(path string) []string {
	base := filepath.Base(path)
	for _, t := range transportHelpers {
		if t.tool == base {
			return t.helpers
		}
	}
	return nil
}

// NeedsExecOrder reports whether a per-binary rule of plan or a credential of b names a tool
// with transport helpers: only then does the proxy need to know which file ran the process
// that connected (Options.ExecOrder).
func NeedsExecOrder(plan *Plan, b *Broker) bool {
	var bys []string
	if plan != nil {
		for _, r := range plan.Rules {
			bys = append(bys, r.By)
		}
	}
	if b != nil {
		for _, c := range b.Creds {
			bys = append(bys, c.By)
		}
	}
	for _, by := range bys {
		if !anyBy(by) && len(helpersOf(by)) > 0 {
			return true
		}
	}
	return false
}
