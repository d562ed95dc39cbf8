package enforcer

import (
	"os"
	"path/filepath"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// seccompNotif is struct seccomp_notif (80 bytes).
type seccompNotif struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Data  seccompData
}

// seccompData is struct seccomp_data (64 bytes).
type seccompData struct {
	Nr                 int32
	Arch               uint32
	InstructionPointer uint64
	Args               [6]uint64
}

// seccompNotifResp is struct seccomp_notif_resp (24 bytes).
type seccompNotifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

func notifRecv(fd int, n *seccompNotif) error {
	*n = seccompNotif{} // the kernel refuses a non-zeroed buffer
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(unix.SECCOMP_IOCTL_NOTIF_RECV), uintptr(unsafe.Pointer(n)))
	if errno != 0 {
		return errno
	}
	return nil
}

func notifSend(fd int, r *seccompNotifResp) error {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(unix.SECCOMP_IOCTL_NOTIF_SEND), uintptr(unsafe.Pointer(r)))
	if errno != 0 {
		return errno
	}
	return nil
}

// ioctlNotifSetFlags is SECCOMP_IOCTL_NOTIF_SET_FLAGS: _IOW('!', 4, __u64).
const ioctlNotifSetFlags = 0x40082104

// syncWakeUp asks the kernel to hand each notification to the supervisor on the CPU of the task
// that waits for it, and the reply back on the supervisor's (SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP,
// Linux 6.6): the task blocks until the answer anyway, so neither side waits for another CPU to
// be scheduled. Best effort: an older kernel answers EINVAL and keeps ordinary wake-ups.
func syncWakeUp(fd int) bool {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), ioctlNotifSetFlags, unix.SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP)
	return errno == 0
}

// notifIDValid reports whether the notification is still pending (its task has not died or been
// replaced), so that what was read from /proc/PID belongs to that task.
func notifIDValid(fd int, id uint64) bool {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(unix.SECCOMP_IOCTL_NOTIF_ID_VALID), uintptr(unsafe.Pointer(&id)))
	return errno == 0
}

// findListener returns the fd number in pid's table that is a seccomp notification listener.
func findListener(pid int) (int, error) {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	ents, err := os.ReadDir(dir)
	if err != nil {
		return -1, err
	}
	for _, e := range ents {
		link, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err != nil || link != "anon_inode:seccomp notify" {
			continue
		}
		n, err := strconv.Atoi(e.Name())
		if err == nil {
			return n, nil
		}
	}
	return -1, os.ErrNotExist
}
