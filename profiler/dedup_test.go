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

// A storm of distinct names under one directory, find(1)'s fstatat(dirfd, name) for each entry
// (prefix n) and a build's stat("name") in its cwd (prefix c): learn.c keys those by the
// directory's id once the reader has its path (no inode read), so every distinct name must
// still arrive, and a second pass over the same names be deduped.
func TestDistinctNamesUnderADirectoryAllArrive(t *testing.T) {
	testutil.RequireRoot(t)
	victim := realPath(t, testutil.BuildC(t, "victim/victim.c"))
	dir := realPath(t, t.TempDir())
	const distinct = 5000
	args := []string{victim, "dirfd-open", dir}
	for range 2 {
		args = append(args, "dirfd-stat-many", itoa(distinct), "n", "stat-many", itoa(distinct), "c")
	}
	for run := 1; run <= 2; run++ { // the second run may take over the first one's table
		tr := learn(t, withTimeout(t, time.Minute), profiler.Options{Dir: dir, Command: args})
		if tr.ExitCode != 0 || tr.Incomplete {
			t.Fatalf("run %d: exit %d, incomplete %v %q", run, tr.ExitCode, tr.Incomplete, tr.Reasons)
		}
		got := map[string]uint64{}
		for _, f := range tr.Files {
			if f.Exe == victim && f.Access == trace.AccessMetadata && !f.OK && filepath.Dir(f.Path) == dir {
				got[filepath.Base(f.Path)] += f.Count
			}
		}
		for _, prefix := range []string{"n", "c"} {
			missing, sent := 0, uint64(0)
			for k := range distinct {
				n := got[fmt.Sprintf("%s%d", prefix, k)]
				if n == 0 {
					missing++
				}
				sent += n
			}
			if missing > 0 {
				t.Errorf("run %d: %d of %d distinct names %s* under a directory not recorded", run, missing, distinct, prefix)
			}
			// Each name twice: an event evicted from the direct-mapped table may come
			// again, but not most of them (a few percent at this size).
			if sent > distinct*3/2 {
				t.Errorf("run %d: %d events reached user space for %d names %s* stat'ed twice each, want about %d", run, sent, distinct, prefix, distinct)
			}
		}
	}
}
