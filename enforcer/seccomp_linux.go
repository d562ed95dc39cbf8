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

// seccompNotifAddfd is struct seccomp_notif_addfd (24 bytes).
type seccompNotifAddfd struct {
	ID         uint64
	Flags      uint32
	Srcfd      uint32
	Newfd      uint32
	NewfdFlags uint32
}

// ioctlNotifAddfd is SECCOMP_IOCTL_NOTIF_ADDFD: _IOW('!', 3, struct seccomp_notif_addfd).
const ioctlNotifAddfd = 0x40182103

// notifIoctl is one ioctl on the listener, tried again while it answers EINTR: the kernel takes
// the filter's notify lock interruptibly and answers EINTR (not a restart) when a signal comes
// first, and a Go thread gets signals at any time (SIGURG preemption, SIGCHLD). Given up, a
// SEND would leave the command's call waiting forever, an ID_VALID would call a live task gone.
func notifIoctl(fd int, req uintptr, arg unsafe.Pointer) (uintptr, unix.Errno) {
	for {
		r, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), req, uintptr(arg))
		if errno != unix.EINTR {
			return r, errno
		}
	}
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
	if _, errno := notifIoctl(fd, uintptr(unix.SECCOMP_IOCTL_NOTIF_SEND), unsafe.Pointer(r)); errno != 0 {
		return errno
	}
	return nil
}

// notifAnswerFD answers notification id with a copy of srcfd as the call's result: the fd is
// added to the caller (SECCOMP_IOCTL_NOTIF_ADDFD), then the answer names it. It returns the
// add's error (ENOENT: the caller is gone; EMFILE...); 0 once the fd is the caller's.
//
// Not in one step with SECCOMP_ADDFD_FLAG_SEND: that marks the call answered before the caller
// has taken the fd, and when a signal reaches the thread waiting in that ioctl the kernel takes
// the fd back but leaves the answer, so the caller's call returns 0 (its stdin) as the new fd;
// the restarted ioctl then fails EINPROGRESS (the e2e memfd flake: memfd_create answered 0).
// Added first, an interrupted add is withdrawn whole or reported done, and retried. A caller
// interrupted between the two steps keeps an fd it was not told of; its call restarts (a new
// notification) and gets another.
func notifAnswerFD(listener int, id uint64, srcfd int, cloexec bool) unix.Errno {
	add := seccompNotifAddfd{ID: id, Srcfd: uint32(srcfd)}
	if cloexec {
		add.NewfdFlags = unix.O_CLOEXEC
	}
	newfd, errno := notifIoctl(listener, ioctlNotifAddfd, unsafe.Pointer(&add))
	if errno != 0 {
		return errno
	}
	_ = notifSend(listener, &seccompNotifResp{ID: id, Val: int64(newfd)}) // ENOENT: the caller is gone or was interrupted
	return 0
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
	_, errno := notifIoctl(fd, uintptr(unix.SECCOMP_IOCTL_NOTIF_ID_VALID), unsafe.Pointer(&id))
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
