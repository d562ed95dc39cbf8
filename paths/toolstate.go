package paths

// ToolState is a tool's own bookkeeping file that it rewrites on a clock, not on what the
// command does: a last-use database updated at most once a day, a "last checked" stamp. Whether
// one run writes it depends on the time since the last run (and on whether it exists yet), so
// a profile learned on one day and drifted on the next would widen or narrow by it. A command
// that touches it at all may write it on any run.
type ToolState struct {
	// Files is the pattern of the file and of what its tool writes beside it (an sqlite
	// database's -journal, -wal and -shm).
	Files string
	// Dir is the directory an sqlite database's writer opens to sync a journal's creation and
	// removal (listed only when it writes), or "".
	Dir string
	// Why is the rule's note in a profile.
	Why string
}

// ToolStates are the tool-state files learn makes one write rule of, whether the learn run
// wrote them or only read them (portable form).
var ToolStates = []ToolState{
	{Files: "$CARGO_HOME/.global-cache*", Dir: "$CARGO_HOME",
		Why: "tool state: cargo's last-use database (sqlite), written when new and at most about once a day"},
	{Files: "$GOCACHE/trim.txt",
		Why: "tool state: go's cache trim stamp, rewritten at most once a day"},
	{Files: "$NPM_CACHE/_update-notifier-last-checked",
		Why: "tool state: npm's update check stamp, rewritten at most once a day"},
	{Files: "$NPM_CACHE/_cacache/index-v5",
		Why: "tool state: npm's cache index, rewritten when an entry is refreshed"},
	{Files: "$HOME/.cache/pip/selfcheck",
		Why: "tool state: pip's version self-check, rewritten at most once a week"},
	{Files: "$HOME/.cache/pre-commit/db.db*", Dir: "$HOME/.cache/pre-commit",
		Why: "tool state: pre-commit's repository database (sqlite), written when a hook repository is new"},
}

// ToolStateOf returns the tool-state entry whose Files cover the portable path p.
func ToolStateOf(p string) (ToolState, bool) {
	for _, ts := range ToolStates {
		if Covers(ts.Files, p) {
			return ts, true
		}
	}
	return ToolState{}, false
}
