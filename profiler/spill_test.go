package profiler_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/profiler"
	"github.com/sysprof/sysprof/trace"
)

// TestSpillKeepsEveryEventInOrder: with a one-page first ring, a run fills it at once and
// learn.c writes the rest to the spill ring. Nothing is lost, and the records that name a
// directory by the id an earlier record defined (the directory's path in the first ring, the
// names under it in the spill ring) still resolve: every directory find(1) walks and every
// name stat'ed through a held directory fd is in the trace under its own path.
func TestSpillKeepsEveryEventInOrder(t *testing.T) {
	testutil.RequireRoot(t)
	findBin, err := exec.LookPath("find")
	if err != nil {
		t.Fatal(err)
	}
	findBin = realPath(t, findBin)
	victim := realPath(t, testutil.BuildC(t, "victim/victim.c"))
	dir := realPath(t, t.TempDir())
	var dirs []string
	for i := range 40 {
		for j := range 8 {
			d := filepath.Join(dir, fmt.Sprintf("d%d", i), fmt.Sprintf("e%d", j))
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
			dirs = append(dirs, d, filepath.Dir(d))
		}
	}
	t.Cleanup(profiler.SwapWarmDir(t.TempDir()))
	t.Cleanup(profiler.SwapEventsRingBytes(os.Getpagesize()))
	before := profiler.Spills.Load()
	const distinct = 3000
	tr := learn(t, withTimeout(t, time.Minute), profiler.Options{Dir: dir, Command: []string{"sh", "-c",
		fmt.Sprintf("%s . -xdev >/dev/null && exec %s dirfd-open %s dirfd-stat-many %d n", findBin, victim, dir, distinct)}})
	if tr.ExitCode != 0 || tr.Incomplete || tr.Loss.RingbufDrops != 0 {
		t.Fatalf("exit %d, incomplete %v %q, %d ring buffer drops", tr.ExitCode, tr.Incomplete, tr.Reasons, tr.Loss.RingbufDrops)
	}
	if profiler.Spills.Load() == before {
		t.Fatalf("the run never read the spill ring: the test no longer tests it")
	}
	seen := map[string]bool{}
	names := map[string]bool{}
	for _, f := range tr.Files {
		switch f.Exe {
		case findBin:
			seen[f.Path] = true
		case victim:
			if f.Access == trace.AccessMetadata && !f.OK && filepath.Dir(f.Path) == dir {
				names[filepath.Base(f.Path)] = true
			}
		}
	}
	missing := 0
	for _, d := range dirs {
		if !seen[d] {
			if missing++; missing <= 5 {
				t.Errorf("directory %s walked by find is not in the trace", d)
			}
		}
	}
	for k := range distinct {
		if n := fmt.Sprintf("n%d", k); !names[n] {
			if missing++; missing <= 10 {
				t.Errorf("name %s stat'ed through a held directory fd is not in the trace", filepath.Join(dir, n))
			}
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d directories and names missing", missing, len(dirs)+distinct)
	}
}
