package profiler_test

import (
	"slices"
	"testing"
	"time"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/profiler"
)

// TestOwnStartNotRecorded: learn starts the command itself (Go's os/exec: clone3 with
// CLONE_INTO_CGROUP from sysprof, outside the run's cgroup, then the child's own calls up to
// execve), and none of that is the command's: a command that never starts a process records
// no clone, clone3, fork or vfork and no syscall of another executable; one that forks
// records its fork (glibc's fork: clone) and no clone3. (A profile's clone3 is synth's
// libc-variant family of fork, vfork, clone and clone3, which enforce answers ENOSYS.)
func TestOwnStartNotRecorded(t *testing.T) {
	testutil.RequireRoot(t)
	victim := realPath(t, testutil.BuildC(t, "victim/victim.c"))
	starts := []string{"clone", "clone3", "fork", "vfork"}

	tr := learn(t, withTimeout(t, time.Minute), profiler.Options{Command: []string{victim, "exit", "0"}})
	for _, s := range tr.Syscalls {
		if s.Exe != victim {
			t.Errorf("a syscall of %s (%s x%d) in the trace of a command that runs only %s", s.Exe, s.Name, s.Count, victim)
		}
		if slices.Contains(starts, s.Name) {
			t.Errorf("%s recorded for a command that starts no process", s.Name)
		}
	}

	tr = learn(t, withTimeout(t, time.Minute), profiler.Options{Command: []string{victim, "time-child", victim, "exit", "0"}})
	if n := syscallCount(tr, victim, "x86_64", "clone"); n == 0 {
		t.Errorf("the command's own fork (clone) is not recorded: %+v", tr.Syscalls)
	}
	for _, s := range tr.Syscalls {
		if s.Name == "clone3" {
			t.Errorf("clone3 recorded (by %s, x%d) for a command that only forks", s.Exe, s.Count)
		}
	}
}
