// Package phase prints time-stamped phase durations to stderr when SYSPROF_TIMINGS is set (a
// hidden switch for profiling startup). Each line carries the wall clock, so the lines of the
// supervisor and of the init stage (another process) can be put side by side. When the
// variable is unset, Mark costs one boolean test.
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
	fmt.Fprintf(os.Stderr, "timing %s %s.%06d %7.2fms %s\n", who, now.Format("15:04:05"), now.Nanosecond()/1000, float64(d.Microseconds())/1000, name)
}

// Since prints the duration of a phase measured from start (for work running concurrently with
// other phases); it does not move the mark.
func Since(name string, start time.Time) {
	if !on {
		return
	}
	now := time.Now()
	fmt.Fprintf(os.Stderr, "timing %s %s.%06d %7.2fms %s (concurrent)\n", who, now.Format("15:04:05"), now.Nanosecond()/1000, float64(now.Sub(start).Microseconds())/1000, name)
}
