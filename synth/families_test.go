package synth

import (
	"testing"

	"github.com/sysprof/sysprof/trace"
)

// A tool's per-shard cache files ($HOME/.cache/gopls/<hash>/<nn>/...) roll up to the tool's cache
// directory, never to $HOME/.cache or $HOME.
func TestToolCacheRollsUpToItsDirectory(t *testing.T) {
	ctx := map[string]string{"HOME": "/home/a", "WORKDIR": "/home/a/src/p", "TMPDIR": "/tmp"}
	exe := "/usr/bin/gopls"
	tr := &trace.Trace{Version: trace.Version, Command: []string{"gopls", "check"}, Context: ctx,
		Processes: []trace.Process{{ID: 1, PID: 10, Exe: exe}}}
	for _, p := range []string{"/home/a/.cache/gopls/0f3e/25/ab-diagnostics", "/home/a/.cache/gopls/0f3e/26/cd-diagnostics", "/home/a/.cache/gopls/77aa/01/ef-index"} {
		tr.Files = append(tr.Files, trace.FileAccess{Exe: exe, Path: p, Access: trace.AccessCreate, OK: true})
	}
	tr.Files = append(tr.Files, trace.FileAccess{Exe: exe, Path: "/home/a/.cache/notes.txt", Access: trace.AccessCreate, OK: true})
	res, err := Synthesize(tr, testOpts())
	if err != nil {
		t.Fatal(err)
	}
	got := paths(res.Profile.Filesystem.Write)
	want := []string{"$HOME/.cache/gopls", "$HOME/.cache/notes.txt"}
	if !sameSet(got, want) {
		t.Errorf("write rules %q, want %q", got, want)
	}
}
