package profiler

import (
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
)

// A probe whose attach fails (here: its run cgroup is gone, as when another process removed
// it) is closed and the error returned: the deferred close must not see the nil the failing
// return sets (a nil dereference panicked learn in CI).
func TestLoadProbeAttachFailureIsAnError(t *testing.T) {
	testutil.RequireRoot(t)
	p, err := loadProbe(1, "/sys/fs/cgroup/sysprof-no-such-run-cgroup", DefaultRingBufferBytes/2, false, newPhases(), nil)
	if err == nil {
		p.close()
		t.Fatal("attach to a cgroup that does not exist succeeded")
	}
	t.Logf("error, as wanted: %v", err)
}
