package guard

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/testutil"
)

// closeAside leaves this process without the fanotify group, and the group goes away at once
// (the child holds it only to close it): an open of a file it watched for permission events
// returns instead of waiting for an answer nobody gives.
func TestCloseAsideReleasesTheGroup(t *testing.T) {
	testutil.RequireRoot(t)
	file := filepath.Join(t.TempDir(), "secret")
	testutil.WriteFile(t, file, "x", 0o600)
	fd, err := unix.FanotifyInit(unix.FAN_CLASS_CONTENT|unix.FAN_CLOEXEC|unix.FAN_NONBLOCK, unix.O_RDONLY|unix.O_CLOEXEC)
	testutil.RequireNoErr(t, "fanotify_init", err)
	if err := unix.FanotifyMark(fd, unix.FAN_MARK_ADD, unix.FAN_OPEN_PERM, unix.AT_FDCWD, file); err != nil {
		unix.Close(fd)
		testutil.RequireNoErr(t, "fanotify_mark", err)
	}
	closeAside(os.NewFile(uintptr(fd), "fanotify"))
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if l, _ := os.Readlink("/proc/self/fd/" + e.Name()); strings.Contains(l, "fanotify") {
			t.Errorf("fd %s -> %s: the group is still open here", e.Name(), l)
		}
	}
	opened := make(chan error, 1)
	go func() {
		f, err := os.Open(file)
		if err == nil {
			f.Close()
		}
		opened <- err
	}()
	select {
	case err := <-opened:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("open of the watched file still waits for a permission answer: the group lives on")
	}
}
