package testutil

import (
	"testing"

	"golang.org/x/sys/unix"
)

// BPFFS mounts a bpffs instance of the test's own in a temporary directory and returns it
// (unmounted at cleanup), so that no test depends on whether the host mounted /sys/fs/bpf.
func BPFFS(t testing.TB) string {
	t.Helper()
	RequireRoot(t)
	mnt := t.TempDir()
	err := unix.Mount("bpf", mnt, "bpf", 0, "mode=0700")
	RequireNoErr(t, "mount a bpffs of the test's own", err)
	// Before t.TempDir's removal (cleanups run last first).
	t.Cleanup(func() { unix.Unmount(mnt, unix.MNT_DETACH) })
	return mnt
}
