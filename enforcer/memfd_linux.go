package enforcer

import (
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/seccomp"
)

// memfdCreate answers a memfd_create the filter sent only for seccomp.WhyMemfd and that does
// not ask for MFD_EXEC: the supervisor makes the memfd itself, with the caller's name and flags
// plus MFD_NOEXEC_SEAL, and puts it in the caller as the call's result (SECCOMP_ADDFD_FLAG_SEND).
// Sealed F_SEAL_EXEC with no x bits, it can be neither executed (execve of /proc/self/fd/N) nor
// mapped executable (dlopen): EACCES. Its pages are charged to whoever writes them (the
// caller), not to the supervisor. It reports false for every other call (MFD_EXEC: denied and
// reported by handle; in audit mode the call goes on as asked).
func (s *supervisor) memfdCreate(n *seccompNotif) bool {
	if s.audit || n.Data.Args[1]&unix.MFD_EXEC != 0 {
		return false
	}
	if name, _ := SyscallName(n.Data.Arch, uint32(n.Data.Nr)); name != "memfd_create" || !s.compiled.onlyFails(n, seccomp.WhyMemfd) {
		return false
	}
	resp := seccompNotifResp{ID: n.ID}
	label, ok := readString(int(n.Pid), n.Data.Args[0])
	if !ok || !notifIDValid(s.listener, n.ID) {
		resp.Error = -int32(unix.EFAULT)
		_ = notifSend(s.listener, &resp)
		return true
	}
	flags := int(uint32(n.Data.Args[1]))
	fd, err := unix.MemfdCreate(label, (flags|unix.MFD_CLOEXEC|unix.MFD_NOEXEC_SEAL)&^unix.MFD_EXEC)
	if err != nil { // EINVAL (a long name, unknown flags), EMFILE...: the caller's answer
		resp.Error = -int32(unix.EINVAL)
		if errno, ok := err.(unix.Errno); ok {
			resp.Error = -int32(errno)
		}
		_ = notifSend(s.listener, &resp)
		return true
	}
	defer unix.Close(fd)
	add := seccompNotifAddfd{ID: n.ID, Flags: unix.SECCOMP_ADDFD_FLAG_SEND, Srcfd: uint32(fd)}
	if flags&unix.MFD_CLOEXEC != 0 {
		add.NewfdFlags = unix.O_CLOEXEC
	}
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(s.listener), ioctlNotifAddfd, uintptr(unsafe.Pointer(&add)))
	if errno != 0 && errno != unix.ENOENT { // ENOENT: the caller is gone
		resp.Error = -int32(errno) // EMFILE in the caller, ...
		_ = notifSend(s.listener, &resp)
	}
	return true
}
