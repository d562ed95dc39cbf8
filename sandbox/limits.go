package sandbox

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// LayerLimits is the limits layer (here: the rlimits part; the run's cgroup is the caller's).
const LayerLimits = "limits"

// Rlimit is one resource limit of the command: unix.RLIMIT_NPROC, RLIMIT_AS, ... The hard
// limit is Max, so the command cannot raise it again; a soft limit below it stays (a soft
// RLIMIT_NOFILE above 1024 breaks select()).
type Rlimit struct {
	Resource int    `json:"resource"`
	Max      uint64 `json:"max"`
}

// setRlimits lowers each limit (never raises one: a limit already lower stays).
func setRlimits(rl []Rlimit) error {
	for _, r := range rl {
		var cur unix.Rlimit
		if err := unix.Getrlimit(r.Resource, &cur); err != nil {
			return fmt.Errorf("getrlimit %d: %w", r.Resource, err)
		}
		v := min(r.Max, cur.Max)
		if err := unix.Setrlimit(r.Resource, &unix.Rlimit{Cur: min(cur.Cur, v), Max: v}); err != nil {
			return fmt.Errorf("setrlimit %d to %d: %w", r.Resource, v, err)
		}
	}
	return nil
}
