package kernrun

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// LockDir takes the exclusive lock of dir (an flock of dir/lock, created if missing; dir
// itself too when create) and returns what releases it. The warm hand-overs of learn and of
// the guard publish and claim their helpers' files under it.
func LockDir(dir string, create bool) (unlock func(), err error) {
	if create {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
	}
	fd, err := unix.Open(filepath.Join(dir, "lock"), unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err = unix.Flock(fd, unix.LOCK_EX)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	return func() { unix.Close(fd) }, nil
}
