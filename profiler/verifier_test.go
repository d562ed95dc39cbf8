package profiler_test

import (
	"testing"

	"github.com/cilium/ebpf"

	"github.com/sysprof/sysprof/bpf"
	"github.com/sysprof/sysprof/internal/testutil"
)

// TestVerifierBudget keeps the instructions the verifier walks per program (most of learn's
// ~10 ms of loading, paid on every run) under a budget: a change that inlines a helper into
// sys_exit_path once tripled it (3.5k → 9.6k) and doubled the load. Raise a budget only with
// a reason, and a look at `sysprof learn` timings (SYSPROF_TIMINGS=1).
func TestVerifierBudget(t *testing.T) {
	testutil.RequireRoot(t)
	spec, err := bpf.LoadLearn()
	if err != nil {
		t.Fatal(err)
	}
	spec.Maps["events"].MaxEntries = 1 << 16
	spec.Maps["spill"].MaxEntries = 1 << 16
	coll, err := ebpf.NewCollection(spec)
	testutil.RequireNoErr(t, "load learn.c", err)
	defer coll.Close()
	// sys_exit_path: 4,391 on the kernel of 2026-12-03; 6.18.44's verifier walks ~6,500 for the
	// same program (main's object, before inode_key's narrower spans: 6,541). sys_enter: ~2,090
	// since arch.h copies the argument registers into one per-architecture array (walked on every
	// branch that reads arguments; six moves at run time). dns_egress: 659 → ~1,060 with the
	// spill ring (its event, and sniff's, reserved in either ring: what follows is walked per
	// ring; the cold load's "load programs" did not move, the group is waited for with
	// sys_exit_path's).
	budget := map[string]uint32{"sys_exit_path": 7000, "sys_enter": 2300, "sched_exec": 2000, "dns_egress": 1200}
	for name, prog := range coll.Programs {
		info, err := prog.Info()
		if err != nil {
			t.Fatal(err)
		}
		n, ok := info.VerifiedInstructions()
		if !ok {
			t.Fatalf("%s: the kernel does not report verified instructions", name)
		}
		max, ok := budget[name]
		if !ok {
			max = 1000
		}
		if n > max {
			t.Errorf("%s: the verifier walked %d instructions, budget %d", name, n, max)
		} else {
			t.Logf("%s: %d instructions (budget %d)", name, n, max)
		}
	}
}
