package profiler

import (
	"fmt"
	"os"
	"time"

	"github.com/cilium/ebpf"
)

// SYSPROF_TIMINGS (undocumented) prints the duration of each phase of a run to stderr.
var timingsOn = os.Getenv("SYSPROF_TIMINGS") != ""

type phases struct{ last time.Time }

func newPhases() *phases { return &phases{last: time.Now()} }

func (p *phases) mark(name string) {
	if !timingsOn {
		return
	}
	now := time.Now()
	fmt.Fprintf(os.Stderr, "timing profiler %7.2fms %s\n", float64(now.Sub(p.last).Microseconds())/1000, name)
	p.last = now
}

// progStats prints each program's run count and run time (needs kernel.bpf_stats_enabled=1).
func (p *probe) progStats() {
	if !timingsOn {
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
