package sandbox

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// NoExecTmpfs mounts a new tmpfs detached (fsmount: attached nowhere, in no namespace's tree,
// gone with the last fd) with noexec, nosuid and nodev, and returns the mount's fd, close-on-
// exec. Its files stand in for memfds (NoExecMemfd): a memfd lives on the kernel's internal
// shmem mount, which no mount flag reaches, and an executable mapping checks only the mount's
// noexec (seals and modes govern execve alone), so `dlopen("/proc/self/fd/N")` of a real memfd
// runs code whatever else the sandbox says. Size and inodes are unlimited, as for a memfd (the
// pages are charged to the memcg of whoever writes them). Needs CAP_SYS_ADMIN in the caller's
// mount namespace's user namespace (host root, or the init stage inside its own); Linux 5.2.
func NoExecTmpfs() (int, error) {
	fs, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("fsopen tmpfs: %w", err)
	}
	defer unix.Close(fs)
	for _, kv := range [][2]string{{"size", "0"}, {"nr_inodes", "0"}, {"mode", "0700"}} {
		if err := unix.FsconfigSetString(fs, kv[0], kv[1]); err != nil {
			return -1, fmt.Errorf("tmpfs %s=%s: %w", kv[0], kv[1], err)
		}
	}
	if err := unix.FsconfigCreate(fs); err != nil {
		return -1, fmt.Errorf("create tmpfs: %w", err)
	}
	m, err := unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOEXEC|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
	if err != nil {
		return -1, fmt.Errorf("fsmount tmpfs noexec: %w", err)
	}
	return m, nil
}

// NoExecMemfd makes a file on the NoExecTmpfs mount mnt that looks like memfd_create(name)'s
// (its /proc/PID/fd link reads "/memfd:NAME (deleted)") but can be neither executed nor mapped
// executable (EACCES / EPERM: the mount is noexec). It is created and unlinked at once, in a
// directory no other process can reach. What a real memfd has and this file lacks: sealing
// (F_ADD_SEALS answers EPERM, as for a memfd made without MFD_ALLOW_SEALING) and huge pages.
func NoExecMemfd(mnt int, name string, cloexec bool) (int, error) {
	file := "memfd:" + strings.ReplaceAll(name, "/", "_")
	flags := unix.O_RDWR | unix.O_CREAT | unix.O_EXCL | unix.O_NOFOLLOW
	if cloexec {
		flags |= unix.O_CLOEXEC
	}
	fd, err := unix.Openat(mnt, file, flags, 0o600)
	if err != nil {
		return -1, err
	}
	// The modes of a memfd made MFD_NOEXEC_SEAL (no umask): a caller may reopen it through
	// /proc/self/fd/N. The x bits would change nothing here.
	err = unix.Fchmod(fd, 0o666)
	if err == nil {
		err = unix.Unlinkat(mnt, file, 0)
	}
	if err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}
