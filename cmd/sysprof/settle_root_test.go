package main

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/profiler"
)

// Every command that learns (learn, drift and their gates) hands its probe on to the next run
// before the process exits: run settles the background close. drift did not, and its exit
// then waited ~3 s for the kernel to close the perf events, with nothing handed on.
func TestDriftHandsItsProbeOn(t *testing.T) {
	testutil.RequireRoot(t)
	dir := t.TempDir()
	prof := filepath.Join(dir, "true.yaml")
	var out, errb bytes.Buffer
	t.Cleanup(profiler.SwapWarmDir(t.TempDir()))
	if code := run([]string{"learn", "--fresh", "-p", prof, "--", "true"}, nil, &out, &errb); code != 0 {
		t.Fatalf("learn: exit %d\n%s", code, errb.String())
	}
	warm := t.TempDir() // drift loads its own probe and must publish it here before run returns
	t.Cleanup(profiler.SwapWarmDir(warm))
	if code := run([]string{"drift", "-p", prof, "--", "true"}, nil, &out, &errb); code != 0 {
		t.Fatalf("drift: exit %d\n%s", code, errb.String())
	}
	if files, _ := filepath.Glob(filepath.Join(warm, "*.json")); len(files) != 1 {
		t.Errorf("probes handed on when drift returned: %q, want one", files)
	}
}
