package enforcer

import (
	"path/filepath"
	"sync"
	"testing"

	"github.com/sysprof/sysprof/enforcer/guard"
	"github.com/sysprof/sysprof/internal/testutil"
)

// Runs at the same time share the programs and nothing else: each reports its own denials.
func TestGuardConcurrentRunsKeepTheirDenials(t *testing.T) {
	testutil.RequireRoot(t)
	f := newFSFixture(t)
	src := filepath.Join(f.work, "src.txt")
	var wg sync.WaitGroup
	outs := make([]runOut, 4)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%2 == 0 {
				outs[i] = f.run(t, f.profile, false, "write="+src)
			} else {
				outs[i] = f.run(t, f.profile, false, "read="+f.secret)
			}
		}()
	}
	wg.Wait()
	for i, o := range outs {
		if o.err != nil || o.code != 0 {
			t.Fatalf("run %d: %s", i, o)
		}
		want, other := o.fileDenial(src, "write"), o.fileDenial(f.secret, "read")
		if i%2 == 1 {
			want, other = other, want
		}
		if want == nil || other != nil || len(o.rep.Denials) != 1 {
			t.Errorf("run %d reported %+v, want only its own denial", i, o.rep.Denials)
		}
	}
}

// Without bpffs (none at pinRoot's parent, and none can be mounted there: the directory does
// not exist) the run loads the guard for itself, and it works the same.
func TestGuardWithoutPins(t *testing.T) {
	testutil.RequireRoot(t)
	restore, _ := guard.SwapPinRoot(filepath.Join(t.TempDir(), "missing", "sysprof")) // cannot hold pins
	defer restore()
	f := newFSFixture(t)
	o := f.run(t, f.profile, false, "read="+f.secret)
	if o.err != nil || o.code != 0 || o.fileDenial(f.secret, "read") == nil {
		t.Fatalf("run: %s", o)
	}
}

// A slot whose file program is still attached elsewhere (its helper was killed before it
// detached it): the run takes an instance of its own and observes all the same.
func TestGuardSlotProgramStillAttached(t *testing.T) {
	withPinRoot(t)
	release, err := guard.HoldSlotProgram()
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	f := newFSFixture(t)
	out := f.run(t, f.profile, false, "read="+f.secret)
	if out.err != nil || out.code != 0 || out.fileDenial(f.secret, "read") == nil {
		t.Fatalf("run: %s", out)
	}
}

// withPinRoot points the guard's pins at a bpffs instance of the test's own, so that no test
// depends on whether the host mounted /sys/fs/bpf.
func withPinRoot(t *testing.T) string {
	t.Helper()
	root := filepath.Join(testutil.BPFFS(t), "sysprof")
	restore, err := guard.SwapPinRoot(root)
	t.Cleanup(restore)
	testutil.RequireNoErr(t, "pins in the test's bpffs", err)
	return root
}
