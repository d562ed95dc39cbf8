package profiler

import (
	"fmt"
	"os"

	"github.com/cilium/ebpf"

	"github.com/sysprof/sysprof/internal/phase"
)

// phases times a run's phases on a phase.Clock of its own (SYSPROF_TIMINGS, undocumented);
// internal/phase decides the switch and the line format.
type phases struct{ c *phase.Clock }

func newPhases() *phases { return &phases{c: phase.NewClock("profiler")} }

func (p *phases) mark(name string) { p.c.Mark(name) }

// progStats prints each program's run count and run time (needs kernel.bpf_stats_enabled=1).
func (p *probe) progStats() {
	if !phase.On() {
		return
	}
	for name, prog := range map[string]*ebpf.Program{"sys_enter": p.objs.SysEnter, "sys_exit_path": p.objs.SysExitPath,
		"sched_exec": p.objs.SchedExec, "sched_fork": p.objs.SchedFork, "sched_exit": p.objs.SchedExit} {
		st, err := prog.Stats()
		if err != nil {
			continue
		}
		per := 0.0
		if st.RunCount > 0 {
			per = float64(st.Runtime.Nanoseconds()) / float64(st.RunCount)
		}
		fmt.Fprintf(os.Stderr, "timing prog %-14s runs %8d total %8.2fms %7.0fns/run\n", name, st.RunCount, float64(st.Runtime.Microseconds())/1000, per)
	}
}

// stats prints the bytes read from each ring buffer.
func (r *ringReading) stats() {
	if phase.On() {
		fmt.Fprintf(os.Stderr, "timing ring bytes read: events %d, spill %d\n", r.eventsBytes, r.spillBytes)
	}
}
