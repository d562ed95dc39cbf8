package profiler_test

import (
	"testing"
	"time"

	"github.com/sysprof/sysprof/profiler"
)

// The command is born in the peak cgroups, its children with it: on a hybrid host the v1
// directories are joined by the forking thread (kernrun.LimitGroup.Measure), and a join that
// missed would leave the learned limits at nothing.
func TestLearnPeaksCountTheTree(t *testing.T) {
	ctx := withTimeout(t, time.Minute)
	tr := learn(t, ctx, profiler.Options{Command: []string{"sh", "-c", "sleep 0.3 & sleep 0.3 & sleep 0.3 & wait"}})
	if tr.Peaks.Pids < 4 || tr.Peaks.Memory <= 0 {
		t.Fatalf("peaks %+v: want the shell and its three sleeps (pids >= 4) and some memory", tr.Peaks)
	}
}
