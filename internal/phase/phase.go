// Package phase prints time-stamped phase durations to stderr when SYSPROF_TIMINGS is set (a
// hidden switch for profiling startup). It is the only timing helper: the CLI, the enforcer,
// the init stage and the profiler all print through it. Each line carries the wall clock, so
// the lines of the supervisor and of the init stage (another process) can be put side by side:
//
//	timing WHO HH:MM:SS.micros DURATIONms PHASE
//
// When the variable is unset, Mark costs one boolean test.
package phase

import (
	"fmt"
	"os"
	"sync"
	"time"
)

var (
	on   = os.Getenv("SYSPROF_TIMINGS") != ""
	mu   sync.Mutex
	last = time.Now()
	who  = "sysprof"
)

// On reports whether timings are printed.
func On() bool { return on }

// SetName names this process in the lines (the init stage calls itself "init").
func SetName(name string) { who = name }

// Mark prints how long the phase that ends now took (since the previous Mark, or since package
// initialisation).
func Mark(name string) {
	if !on {
		return
	}
	mu.Lock()
	now := time.Now()
	d := now.Sub(last)
	last = now
	mu.Unlock()
	line(who, now, d, name)
}

func line(who string, now time.Time, d time.Duration, name string) {
	fmt.Fprintf(os.Stderr, "timing %s %s.%06d %7.2fms %s\n", who, now.Format("15:04:05"), now.Nanosecond()/1000, float64(d.Microseconds())/1000, name)
}

// Clock times the phases of one piece of work on its own (a learn run, a synthesis), apart
// from the process-wide marks of Mark; it is not safe for concurrent use.
type Clock struct {
	who  string
	last time.Time
}

// NewClock starts a clock whose lines name who ("profiler", "learn").
func NewClock(who string) *Clock { return &Clock{who: who, last: time.Now()} }

// Mark prints how long the phase that ends now took on this clock (since its previous Mark or
// its start).
func (c *Clock) Mark(name string) {
	if !on {
		return
	}
	now := time.Now()
	line(c.who, now, now.Sub(c.last), name)
	c.last = now
}

// Since prints the duration of a phase measured from start (for work running concurrently with
// other phases); it does not move the mark.
func Since(name string, start time.Time) {
	if !on {
		return
	}
	now := time.Now()
	line(who, now, now.Sub(start), name+" (concurrent)")
}
