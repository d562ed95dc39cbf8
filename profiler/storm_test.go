package profiler_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/profiler"
	"github.com/sysprof/sysprof/trace"
)

// TestStorm: the syscall set is aggregated in the kernel, so 2 million calls and 500 fork+execs
// are counted exactly, with nothing lost.
func TestStorm(t *testing.T) {
	testutil.RequireRoot(t)
	victim := realPath(t, testutil.BuildC(t, "victim/victim.c"))
	trueBin := realPath(t, "/bin/true")
	const calls, execs = 2_000_000, 500
	tr := learn(t, withTimeout(t, 5*time.Minute), profiler.Options{
		Command: []string{victim, "storm", itoa(calls), "forkstorm", itoa(execs), "/bin/true"},
	})
	if n := syscallCount(tr, victim, trace.ArchX86_64, "getppid"); n != calls {
		t.Errorf("getppid count = %d, want exactly %d", n, calls)
	}
	if ps := processesOf(tr, trueBin); len(ps) != execs {
		t.Errorf("%d processes of %s, want %d", len(ps), trueBin, execs)
	}
	if n := syscallCount(tr, trueBin, trace.ArchX86_64, "exit_group"); n != execs {
		t.Errorf("exit_group of %s counted %d times, want %d", trueBin, n, execs)
	}
	if tr.Loss.Any() || tr.Incomplete {
		t.Errorf("loss %+v incomplete %v %q, want none", tr.Loss, tr.Incomplete, tr.Reasons)
	}
}

// TestStormEndsTheRun: the calls sys_enter's per-CPU cache holds when the command exits (the
// storm is the last thing it does) are read after the run, and counted too.
func TestStormEndsTheRun(t *testing.T) {
	testutil.RequireRoot(t)
	victim := realPath(t, testutil.BuildC(t, "victim/victim.c"))
	const calls = 300_000
	tr := learn(t, withTimeout(t, time.Minute), profiler.Options{Command: []string{victim, "storm", itoa(calls)}})
	if n := syscallCount(tr, victim, trace.ArchX86_64, "getppid"); n != calls {
		t.Errorf("getppid count = %d, want exactly %d", n, calls)
	}
}

// TestCPUCacheAcrossExec: the calls sys_enter's per-CPU cache counts belong to the executable
// that made them. After an exec in place, the new executable's first syscall is the getppid
// the old one just made 100,000 times: it is the new one's (the exec makes the caches stale).
func TestCPUCacheAcrossExec(t *testing.T) {
	testutil.RequireRoot(t)
	victim := realPath(t, testutil.BuildC(t, "victim/victim.c"))
	start := realPath(t, testutil.BuildC(t, "victim/getppid_start.c", "-nostdlib", "-static"))
	const calls = 100_000
	tr := learn(t, withTimeout(t, time.Minute), profiler.Options{Command: []string{victim, "storm", itoa(calls), "execv", start}})
	if n := syscallCount(tr, start, trace.ArchX86_64, "getppid"); n != 1 {
		t.Errorf("getppid of %s counted %d times, want 1", start, n)
	}
	if n := syscallCount(tr, victim, trace.ArchX86_64, "getppid"); n != calls {
		t.Errorf("getppid of the victim counted %d times, want %d", n, calls)
	}
}

// TestForcedLoss: a one-page ring buffer and thousands of distinct file events: the drops are
// counted, and the trace says it is incomplete.
func TestForcedLoss(t *testing.T) {
	testutil.RequireRoot(t)
	victim := realPath(t, testutil.BuildC(t, "victim/victim.c"))
	tr := learn(t, withTimeout(t, time.Minute), profiler.Options{
		Command:         []string{victim, "stat-many", "20000", "/nonexistent/sysprof-loss-", "storm", "100"},
		RingBufferBytes: 4096,
	})
	if tr.Loss.RingbufDrops == 0 {
		t.Fatalf("no ring buffer drops counted with a one-page buffer and 20000 events (%d file events arrived)", len(tr.Files))
	}
	if !tr.Incomplete || !strings.Contains(strings.Join(tr.Reasons, "\n"), "ring buffer") {
		t.Errorf("incomplete %v reasons %q, want the ring buffer loss named", tr.Incomplete, tr.Reasons)
	}
	// The syscall set does not go through the ring buffer: nothing is lost there.
	if n := syscallCount(tr, victim, trace.ArchX86_64, "getppid"); n != 100 {
		t.Errorf("getppid count %d, want 100 despite the ring buffer loss", n)
	}
	t.Logf("%d drops, %d file events kept", tr.Loss.RingbufDrops, len(tr.Files))
}
