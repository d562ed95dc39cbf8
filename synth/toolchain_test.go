package synth

import (
	"slices"
	"testing"

	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/trace"
)

// TestGoRunBinaryTwins: go run (Go ≥ 1.24) runs the binary it links from $TMPDIR/go-build*/…
// on a cache miss and from $GOCACHE/xx/<hash>-d/NAME on a hit. Learned in either state, the
// profile has both exec rules and both binaries: entries, neither pinned to a sha256 (the
// content changes with every edit), so that the next run in the other state is neither denied
// nor "a new executable" to drift.
func TestGoRunBinaryTwins(t *testing.T) {
	const home, work = "/home/alice", "/home/alice/src/p"
	for _, learned := range []string{
		"/tmp/go-build3411254890/b001/exe/app", // cold cache
		home + "/.cache/go-build/f8/f8f65b76d39e50da20d2101d3842bf84f3709b6d53585e9a7a2f3a91c7a0dc2c-d/app", // warm cache
	} {
		tr := &trace.Trace{Version: trace.Version, Command: []string{"go", "run", "."},
			Context: map[string]string{"HOME": home, "WORKDIR": work, "TMPDIR": "/tmp", "GOCACHE": home + "/.cache/go-build", "GOROOT": "/usr/local/go"},
			Processes: []trace.Process{{ID: 1, PID: 10, Exe: "/usr/local/go/bin/go", SHA256: "aa"},
				{ID: 2, PID: 11, Parent: 1, Exe: learned, SHA256: "bb"}},
		}
		res, err := Synthesize(tr, testOpts())
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"$GOCACHE/*/*-d/app", "$TMPDIR/go-build*/b001/exe/app"}
		var exec []string
		for _, r := range res.Profile.Filesystem.Exec {
			if r.Path != "$GOROOT/bin/go" {
				exec = append(exec, r.Path)
			}
		}
		if !slices.Equal(exec, want) {
			t.Errorf("learned %s: exec rules %q, want %q", learned, exec, want)
		}
		var bins []policy.Binary
		for _, b := range res.Profile.Binaries {
			if b.Path != "$GOROOT/bin/go" {
				bins = append(bins, b)
			}
		}
		if len(bins) != 2 || bins[0].Path != want[0] || bins[1].Path != want[1] || bins[0].SHA256 != "" || bins[1].SHA256 != "" {
			t.Errorf("learned %s: binaries %+v, want %q unpinned", learned, bins, want)
		}
	}
}

// A go build learned with a warm cache reads a few files of $GOROOT; with a cold cache (another
// user, a CI runner) it compiles the standard library and assembles the runtime with
// $GOROOT/pkg/include. The toolchain root is read whole, never written.
func TestToolchainRootReadWhole(t *testing.T) {
	ctx := map[string]string{"HOME": "/home/a", "WORKDIR": "/home/a/p", "TMPDIR": "/tmp", "GOROOT": "/usr/local/go"}
	exe := "/usr/local/go/bin/go"
	tr := &trace.Trace{Version: trace.Version, Command: []string{"go", "build"}, Context: ctx,
		Host:      trace.Host{Kernel: "6.18", Arch: trace.ArchX86_64},
		Processes: []trace.Process{{ID: 1, PID: 10, Exe: exe}},
		Files: []trace.FileAccess{
			{Exe: exe, Path: "/usr/local/go/VERSION", Access: trace.AccessRead, OK: true, Count: 1},
			{Exe: exe, Path: "/usr/local/go/src/fmt/print.go", Access: trace.AccessRead, OK: true, Count: 1},
		}}
	res, err := Synthesize(tr, testOpts())
	if err != nil {
		t.Fatal(err)
	}
	cold := map[string]string{"HOME": "/home/b", "WORKDIR": "/home/b/p", "TMPDIR": "/tmp", "GOROOT": "/opt/go"}
	if !Allows(res.Profile, cold, Access{Kind: trace.AccessRead, Path: "/opt/go/pkg/include/textflag.h"}) {
		t.Errorf("a cold cache's read of $GOROOT/pkg/include is not allowed: %v", res.Profile.Filesystem.Read)
	}
	if Allows(res.Profile, cold, Access{Kind: trace.AccessWrite, Path: "/opt/go/pkg/include/textflag.h"}) {
		t.Errorf("the toolchain root became writable")
	}
}
