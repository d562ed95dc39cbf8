package synth

import (
	"slices"
	"testing"

	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/trace"
)

// TestToolStateEitherWay: cargo creates its last-use database (and a journal, and syncs
// $CARGO_HOME) on a cold run and when a day has passed, and only opens it otherwise. Learned in
// either state, the profile has the same rules, so that drift in the other state neither widens
// nor narrows and enforce allows what the other state writes. The same for a tool stamp that a
// warm run only reads (go's trim.txt): its write is allowed.
func TestToolStateEitherWay(t *testing.T) {
	const home = "/home/alice"
	ctx := map[string]string{"HOME": home, "WORKDIR": home + "/src/p", "TMPDIR": "/tmp",
		"CARGO_HOME": home + "/.cargo", "GOCACHE": home + "/.cache/go-build", "GOROOT": "/usr/local/go"}
	cargo := "/usr/bin/cargo"
	learn := func(files ...trace.FileAccess) *policy.Profile {
		t.Helper()
		for i := range files {
			files[i].Exe, files[i].OK, files[i].Count = cargo, true, 1
		}
		tr := &trace.Trace{Version: trace.Version, Command: []string{"cargo", "build"}, Context: ctx,
			Host:      trace.Host{Kernel: "6.18", Arch: trace.ArchX86_64},
			Processes: []trace.Process{{ID: 1, PID: 10, Exe: cargo}}, Files: files}
		res, err := Synthesize(tr, testOpts())
		if err != nil {
			t.Fatal(err)
		}
		return res.Profile
	}
	db := home + "/.cargo/.global-cache"
	cold := learn(
		trace.FileAccess{Path: db, Access: trace.AccessWrite},
		trace.FileAccess{Path: db + "-journal", Access: trace.AccessCreate},
		trace.FileAccess{Path: db + "-journal", Access: trace.AccessDelete},
		trace.FileAccess{Path: home + "/.cargo", Access: trace.AccessList})
	warm := learn(trace.FileAccess{Path: db, Access: trace.AccessWrite})
	rules := func(rs []policy.PathRule) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.Path)
		}
		return out
	}
	for _, sec := range []struct {
		name        string
		cold, warm  []string
		wantContain string
	}{
		{"write", rules(cold.Filesystem.Write), rules(warm.Filesystem.Write), "$CARGO_HOME/.global-cache*"},
		{"list", rules(cold.Filesystem.List), rules(warm.Filesystem.List), "$CARGO_HOME"},
	} {
		if !slices.Equal(sec.cold, sec.warm) {
			t.Errorf("%s rules learned cold %q, warm %q: drift in the other state would change them", sec.name, sec.cold, sec.warm)
		}
		if !slices.Contains(sec.warm, sec.wantContain) {
			t.Errorf("%s rules %q lack %s", sec.name, sec.warm, sec.wantContain)
		}
	}
	if !Allows(warm, ctx, Access{Kind: trace.AccessCreate, Path: db + "-journal"}) {
		t.Errorf("learned warm, the journal of a cold run is not allowed: %v", warm.Filesystem.Write)
	}
	if Allows(warm, ctx, Access{Kind: trace.AccessWrite, Path: home + "/.cargo/bin/cargo-evil"}) {
		t.Errorf("$CARGO_HOME/bin became writable: %v", warm.Filesystem.Write)
	}

	// A warm go build reads the trim stamp; a day later it rewrites it.
	gocache := home + "/.cache/go-build"
	goWarm := learn(trace.FileAccess{Path: gocache + "/trim.txt", Access: trace.AccessRead})
	if !Allows(goWarm, ctx, Access{Kind: trace.AccessWrite, Path: gocache + "/trim.txt"}) {
		t.Errorf("learned reading go's trim.txt, its daily rewrite is not allowed: %v", goWarm.Filesystem.Write)
	}

	// Read back, the profile stays as it is.
	again, err := Resynthesize(warm, testOpts())
	if err != nil {
		t.Fatal(err)
	}
	if w, a := rules(warm.Filesystem.Write), rules(again.Profile.Filesystem.Write); !slices.Equal(w, a) {
		t.Errorf("resynthesized write rules %q, learned %q", a, w)
	}
}

// coverDir must hold every path its pattern covers: passToolState tests Covers only below it.
func TestCoverDirHoldsCovered(t *testing.T) {
	for _, c := range []struct{ pat, dir string }{
		{"$CARGO_HOME/.global-cache*", "$CARGO_HOME"},
		{"$GOCACHE/trim.txt", "$GOCACHE/trim.txt"},
		{"/a/b*/c", "/a"},
		{"/a/**", "/a"},
		{"*", ""},
		{"/*", ""},
	} {
		if got := coverDir(c.pat); got != c.dir {
			t.Errorf("coverDir(%q) = %q, want %q", c.pat, got, c.dir)
		}
	}
	for _, c := range []struct{ pat, p string }{
		{"$CARGO_HOME/.global-cache*", "$CARGO_HOME/.global-cache-wal"},
		{"$GOCACHE/trim.txt", "$GOCACHE/trim.txt"},
		{"/a/**", "/a"},
		{"/a/**", "/a/x/y"},
		{"/a/b*/c", "/a/bz/c/d"},
		{"/*", "/x"},
	} {
		if !paths.Covers(c.pat, c.p) {
			t.Fatalf("test case: %q does not cover %q", c.pat, c.p)
		}
		if !underDir(coverDir(c.pat), c.p) {
			t.Errorf("%q covers %q, outside coverDir %q", c.pat, c.p, coverDir(c.pat))
		}
	}
	for _, p := range []string{"$CARGO_HOMEX/.global-cache", "/usr/x", "$GOCACHE"} {
		if underDir("$CARGO_HOME", p) {
			t.Errorf("underDir($CARGO_HOME, %q)", p)
		}
	}
}
