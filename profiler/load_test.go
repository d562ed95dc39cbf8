package profiler_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/sysprof/sysprof/internal/kernrun"
	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/profiler"
	"github.com/sysprof/sysprof/trace"
)

// TestCoreFixupsStored: the first run on a kernel relocates learn.c against the kernel's BTF and
// stores the fixups; the next one loads with them. Both record the same thing.
func TestCoreFixupsStored(t *testing.T) {
	testutil.RequireRoot(t)
	t.Cleanup(kernrun.SwapCoreFixupDir(t.TempDir()))
	t.Cleanup(profiler.SwapWarmDir("")) // each run loads learn.c
	victim := realPath(t, testutil.BuildC(t, "victim/victim.c"))
	for i := range 2 {
		tr := learn(t, withTimeout(t, time.Minute), profiler.Options{Command: []string{victim, "storm", "10"}})
		if n := syscallCount(tr, victim, trace.ArchX86_64, "getppid"); n != 10 || tr.Incomplete {
			t.Errorf("run %d: getppid count %d, incomplete %v %q; want 10, complete", i+1, n, tr.Incomplete, tr.Reasons)
		}
		if m, _ := filepath.Glob(filepath.Join(kernrun.CoreFixupDir, "learn-*.json")); len(m) != 1 {
			t.Errorf("after run %d: stored fixups %q, want one file", i+1, m)
		}
	}
}
