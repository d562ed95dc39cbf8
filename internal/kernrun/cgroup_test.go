package kernrun

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/testutil"
)

// A live run's empty cgroup stays, even when its name's pid is gone from where the sweep looks
// (a sysprof in another pid namespace sees no pid of this one's: issue 23, whose runs then
// failed "join the run's cgroup: no such device"); the empty cgroup of a run that is gone goes.
func TestRemoveStaleLeavesLiveRunsAcrossPidNamespaces(t *testing.T) {
	testutil.RequireRoot(t)
	cg, err := NewCgroup() // the parent
	testutil.RequireNoErr(t, "create a run cgroup", err)
	defer cg.Remove()
	done := exec.Command("true")
	testutil.RequireNoErr(t, "run true", done.Run())
	parent := filepath.Dir(cg.Dir)
	// As seen from another pid namespace: a live run's directory (locked as NewCgroup does)
	// under a pid that is gone.
	seen := filepath.Join(parent, "run-"+strconv.Itoa(done.Process.Pid)+"-1-live")
	testutil.RequireNoErr(t, "make a live run's cgroup", os.Mkdir(seen, 0o755))
	defer os.Remove(seen)
	fd, err := unix.Open(seen, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	testutil.RequireNoErr(t, "open it", err)
	defer unix.Close(fd)
	testutil.RequireNoErr(t, "lock it", unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB))
	dead := filepath.Join(parent, "run-"+strconv.Itoa(done.Process.Pid)+"-2-dead")
	testutil.RequireNoErr(t, "make a dead run's cgroup", os.Mkdir(dead, 0o755))
	defer os.Remove(dead)

	removeStale(parent)
	if _, err := os.Stat(seen); err != nil {
		t.Errorf("the cgroup of a live run was removed: %v", err)
	}
	if _, err := os.Stat(dead); err == nil {
		t.Error("the empty cgroup of a run that is gone stays")
	}
}

// The same for the v1 directories of a run's limits.
func TestRemoveStaleV1LeavesLiveRunsAcrossPidNamespaces(t *testing.T) {
	testutil.RequireRoot(t)
	parent, err := v1Dir("pids")
	if err != nil {
		// cgroup2-only hosts have no v1 directories; CI's machine kind is hybrid (v1 pids).
		if testutil.InCI() {
			t.Fatalf("no v1 pids hierarchy (CI: a failure, not a skip): %v", err)
		}
		t.Skipf("no v1 pids hierarchy: %v", err)
	}
	done := exec.Command("true")
	testutil.RequireNoErr(t, "run true", done.Run())
	live := filepath.Join(parent, "sysprof-run-"+strconv.Itoa(done.Process.Pid)+"-1-live")
	testutil.RequireNoErr(t, "make a live run's directory", os.Mkdir(live, 0o755))
	defer os.Remove(live)
	fd := lockDir(live)
	if fd < 0 {
		t.Fatal("lock the live run's directory")
	}
	defer unix.Close(fd)
	dead := filepath.Join(parent, "sysprof-run-"+strconv.Itoa(done.Process.Pid)+"-2-dead")
	testutil.RequireNoErr(t, "make a dead run's directory", os.Mkdir(dead, 0o755))
	defer os.Remove(dead)

	removeStaleV1(parent)
	if _, err := os.Stat(live); err != nil {
		t.Errorf("the v1 directory of a live run was removed: %v", err)
	}
	if _, err := os.Stat(dead); err == nil {
		t.Error("the v1 directory of a run that is gone stays")
	}
}
