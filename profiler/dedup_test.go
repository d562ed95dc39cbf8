package profiler_test

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/profiler"
	"github.com/sysprof/sysprof/trace"
)

// learn.c sends a repeated file access once per run (its dedup table), and every distinct one:
// a table that dropped keys would lose files, one that did not dedupe would count each call.
func TestKernelDedupesRepeatsNotDistinct(t *testing.T) {
	testutil.RequireRoot(t)
	victim := realPath(t, testutil.BuildC(t, "victim/victim.c"))
	dir := realPath(t, t.TempDir())
	writeFile(t, filepath.Join(dir, "a.txt"), "a")
	const repeats, distinct = 200, 3000
	var args []string
	for range repeats {
		args = append(args, "open-rel", "a.txt", "stat-missing", "gone")
	}
	args = append(args, "stat-many", itoa(distinct), filepath.Join(dir, "m"))
	for run := 1; run <= 2; run++ { // the second run may take over the first one's table
		tr := learn(t, withTimeout(t, time.Minute), profiler.Options{Dir: dir, Command: append([]string{victim}, args...)})
		if tr.ExitCode != 0 || tr.Incomplete {
			t.Fatalf("run %d: exit %d, incomplete %v %q", run, tr.ExitCode, tr.Incomplete, tr.Reasons)
		}
		for _, c := range []struct {
			path, access string
			ok           bool
		}{{filepath.Join(dir, "a.txt"), trace.AccessRead, true}, {filepath.Join(dir, "gone"), trace.AccessMetadata, false}} {
			f := findFile(tr, victim, c.path, c.access, c.ok)
			if f == nil {
				t.Fatalf("run %d: %s %s not recorded", run, c.access, c.path)
			}
			if f.Count != 1 {
				t.Errorf("run %d: %s %s reached user space %d times in %d calls, want once", run, c.access, c.path, f.Count, repeats)
			}
		}
		missing := 0
		for k := range distinct {
			if findFile(tr, victim, filepath.Join(dir, fmt.Sprintf("m%d", k)), trace.AccessMetadata, false) == nil {
				missing++
			}
		}
		if missing > 0 {
			t.Errorf("run %d: %d of %d distinct missing paths not recorded", run, missing, distinct)
		}
	}
}
