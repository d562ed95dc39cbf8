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
	got := rulePaths(res.Profile.Filesystem.Write)
	want := []string{"$HOME/.cache/gopls", "$HOME/.cache/notes.txt", "/dev/tty"} // /dev/tty: the terminal family
	if !sameSet(got, want) {
		t.Errorf("write rules %q, want %q", got, want)
	}
}

func TestVersionless(t *testing.T) {
	for in, want := range map[string]string{
		"/usr/bin/gcc-12":                                "/usr/bin/gcc-*",
		"/usr/bin/x86_64-linux-gnu-gcc-12":               "/usr/bin/x86_64-linux-gnu-gcc-*",
		"/usr/bin/python3.11":                            "/usr/bin/python3.*",
		"/usr/lib/python3.11/os.py":                      "/usr/lib/python3.*/os.py",
		"/usr/lib/gcc/x86_64-linux-gnu/12/cc1":           "/usr/lib*/gcc/x86_64-linux-gnu/*/cc1",
		"/usr/libexec/gcc/x86_64-linux-gnu/14/cc1":       "/usr/lib*/gcc/x86_64-linux-gnu/*/cc1",
		"$HOME/.pyenv/versions/3.11.7/bin/python3.11":    "$HOME/.pyenv/versions/*/bin/python3.*",
		"/usr/bin/python3":                               "/usr/bin/python3",
		"/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0": "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0",
		"/usr/bin/make":                                  "/usr/bin/make",
		"$WORKDIR/build-12":                              "$WORKDIR/build-12",
	} {
		if got := versionless(in); got != want {
			t.Errorf("versionless(%s) = %s, want %s", in, got, want)
		}
	}
}

// sysprof's own cache ($HOME/.cache/sysprof, where enforce keeps the binary hashes it trusts) is
// never a tool cache root: a write there stays exact, and diff rates it critical.
func TestSysprofCacheIsNotAToolCache(t *testing.T) {
	if got := writeAnchor("$HOME/.cache/sysprof/binhash"); got != "" {
		t.Errorf("writeAnchor($HOME/.cache/sysprof/binhash) = %q, want no roll-up", got)
	}
	if got := writeAnchor("$HOME/.cache/gopls/0f/x"); got != "$HOME/.cache/gopls" {
		t.Errorf("writeAnchor($HOME/.cache/gopls/0f/x) = %q (control)", got)
	}
}
