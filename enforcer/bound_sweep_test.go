package enforcer

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/testutil"
)

// The sweep of a bound directory is the defence behind the syscall layer's set-id refusal
// (a set-id file that got there some other way, a hard-linked set-id binary): it strips set-id
// bits of what the run changed and queues links out of the tree; older entries stay as they are.
func TestSweepBoundStripsSetIDAndQueuesLinks(t *testing.T) {
	testutil.RequireRoot(t) // a set-uid file owned by another user needs root to make
	work := t.TempDir()
	dir := filepath.Join(work, "out")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	old := filepath.Join(dir, "old-suid")
	testutil.WriteFile(t, old, "x", 0o755)
	if err := unix.Chmod(old, 0o4755); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond) // ctime granularity: old-suid predates the run
	started := time.Now().Add(sweepSlack)
	time.Sleep(1100 * time.Millisecond)
	fresh := filepath.Join(dir, "suid")
	testutil.WriteFile(t, fresh, "x", 0o755)
	if err := unix.Chmod(fresh, 0o6755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "out-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("suid", filepath.Join(dir, "in-link")); err != nil {
		t.Fatal(err)
	}
	f := sweepBound(dir, started, Env{Vars: map[string]string{"WORKDIR": work, "HOME": t.TempDir()}})
	if st, err := os.Stat(fresh); err != nil || st.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
		t.Errorf("the run's set-id file keeps its bits: %v %v", st.Mode(), err)
	}
	if len(f.stripped) != 1 || f.stripped[0].Path != fresh {
		t.Errorf("stripped = %+v, want the run's set-id file said", f.stripped)
	}
	if st, _ := os.Stat(old); st.Mode()&os.ModeSetuid == 0 {
		t.Errorf("a set-id file older than the run was touched")
	}
	if len(f.links) != 1 || f.links[0] != "out-link" {
		t.Errorf("links queued = %v, want out-link only", f.links)
	}
}
