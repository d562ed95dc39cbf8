package kernrun

import (
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func TestLockDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "warm")
	if _, err := LockDir(dir, false); err == nil {
		t.Fatal("locked a directory that does not exist without create")
	}
	unlock, err := LockDir(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	other, err := unix.Open(filepath.Join(dir, "lock"), unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(other)
	if err := unix.Flock(other, unix.LOCK_EX|unix.LOCK_NB); err != unix.EWOULDBLOCK {
		t.Errorf("another open file of the lock got it while held: %v", err)
	}
	unlock()
	if err := unix.Flock(other, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		t.Errorf("the lock is still held after unlock: %v", err)
	}
}
