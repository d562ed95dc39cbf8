package profiler_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sysprof/sysprof/internal/kernrun"
	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/profiler"
	"github.com/sysprof/sysprof/trace"
)

// TestTaskOutsideTheRunCgroupIsRecorded: learn.c's sys_enter skips a task outside the run's
// cgroup after one helper call (the rest of the host pays no more while a run lasts), which is
// right only while every task of the run is inside it. A task of the run that leaves (a write of
// "0" to another cgroup's cgroup.procs) or is born elsewhere (clone3 CLONE_INTO_CGROUP) must
// still be recorded: its syscalls, their arguments, its files and what it execs.
func TestTaskOutsideTheRunCgroupIsRecorded(t *testing.T) {
	testutil.RequireRoot(t)
	victim := realPath(t, testutil.BuildC(t, "victim/victim.c"))
	// The moved victim execs a second binary, whose own syscalls must be its, not the victim's.
	victim2 := filepath.Join(realPath(t, t.TempDir()), "victim2")
	copyExecutable(t, victim, victim2)
	root, err := kernrun.Cgroup2Mount()
	testutil.RequireNoErr(t, "the cgroup2 mount", err)

	for _, tc := range []struct {
		name string
		args func(cg, missing string) []string
		// prctl: the moved process makes a prctl with option 4242 after the move.
		prctl bool
	}{
		{"moved", func(cg, missing string) []string {
			return []string{victim, "cgroup-move", filepath.Join(cg, "cgroup.procs"), "prctl", "4242", "stat-missing", missing,
				"execv", victim2}
		}, true},
		{"born", func(cg, missing string) []string {
			return []string{victim, "clone3-into", cg, missing}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cg := filepath.Join(root, fmt.Sprintf("sysprof-test-escape-%d-%s", os.Getpid(), tc.name))
			if err := os.Mkdir(cg, 0o755); err != nil {
				t.Fatalf("make a cgroup for the command to go to: %v", err)
			}
			t.Cleanup(func() { os.Remove(cg) })
			missing := filepath.Join(realPath(t, t.TempDir()), "outside-"+tc.name)
			tr := learn(t, withTimeout(t, time.Minute), profiler.Options{Command: tc.args(cg, missing)})
			if findFile(tr, victim, missing, trace.AccessMetadata, false) == nil {
				t.Errorf("the stat of %s made outside the run's cgroup is missing; the victim's files: %q", missing, filesOf(tr, victim))
			}
			if !tc.prctl {
				return
			}
			if syscallCount(tr, victim, trace.ArchX86_64, "prctl") == 0 {
				t.Errorf("prctl, made only after the move, is not among the victim's syscalls")
			}
			found := false
			for _, a := range argValues(tr, victim, "prctl_option") {
				found = found || a.Value == 4242
			}
			if !found {
				t.Errorf("prctl option 4242, given after the move, is not recorded: %+v", argValues(tr, victim, "prctl_option"))
			}
			// victim2 runs with no arguments: its loader's reads and its exit, under its name.
			if len(processesOf(tr, victim2)) == 0 || syscallCount(tr, victim2, trace.ArchX86_64, "exit_group") == 0 {
				t.Errorf("the exec of %s after the move is not recorded as its own: processes %v, executables %q", victim2, processesOf(tr, victim2), exes(tr))
			}
		})
	}
}
