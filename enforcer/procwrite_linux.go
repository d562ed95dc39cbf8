package enforcer

import (
	"os"
	"path"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/kernrun"
	"github.com/sysprof/sysprof/seccomp"
)

// procWriteOpen answers a notification the filter sent only because it opens for writing
// (seccomp.WhyOpenWrites) and reports whether it did. The learned /proc/<pid>/NAME of a process of the
// sandbox gets a descriptor the supervisor opened (procTarget decides which); every other such
// open goes on (CONTINUE) to the read-only mounts and Landlock, which decide it as any open:
// nothing this answers widens what they allow. Requires Linux 5.9 (SECCOMP_IOCTL_NOTIF_ADDFD).
func (s *supervisor) procWriteOpen(n *seccompNotif) bool {
	name, _ := SyscallName(n.Data.Arch, uint32(n.Data.Nr))
	pathArg, flagsArg := 0, 1
	switch name {
	case "open":
	case "openat":
		pathArg, flagsArg = 1, 2
	default:
		return false
	}
	if !s.compiled.onlyProcWriteFails(n) {
		return false
	}
	resp := seccompNotifResp{ID: n.ID, Flags: unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE}
	if fd, ok := s.openProcFile(n, name, pathArg, n.Data.Args[flagsArg]&unix.O_ACCMODE); ok {
		defer unix.Close(fd)
		if notifAnswerFD(s.listener, n.ID, fd, n.Data.Args[flagsArg]&unix.O_CLOEXEC != 0) == 0 {
			return true // the fd is the call's result
		}
		// The task is gone (ENOENT), or the kernel cannot add fds: the open goes on, and is
		// refused by the read-only /proc.
	}
	_ = notifSend(s.listener, &resp)
	return true
}

// onlyProcWriteFails reports whether the call n is allowed but for the check that sends opens
// for writing to the supervisor.
func (c *Compiled) onlyProcWriteFails(n *seccompNotif) bool {
	return c.onlyFails(n, seccomp.WhyOpenWrites)
}

// onlyFails reports whether the call n is allowed but for checks marked why.
func (c *Compiled) onlyFails(n *seccompNotif, why string) bool {
	return c.failsOnly(n.Data.Arch, uint32(n.Data.Nr), n.Data.Args, why)
}

// setIDModeIgnored reports an open the filter sent only for set-id bits in a mode the kernel
// does not use (no O_CREAT, no O_TMPFILE: libc passes whatever is in the register): it goes on.
func (c *Compiled) setIDModeIgnored(n *seccompNotif) bool {
	name, _ := SyscallName(n.Data.Arch, uint32(n.Data.Nr))
	flagsArg, ok := map[string]int{"open": 1, "openat": 2}[name]
	if !ok {
		return false
	}
	flags := n.Data.Args[flagsArg]
	if flags&unix.O_CREAT != 0 || flags&unix.O_TMPFILE == unix.O_TMPFILE {
		return false
	}
	return c.onlyFails(n, seccomp.WhySetID)
}

// openProcFile opens, for writing (accmode: O_WRONLY or O_RDWR, as the task asked), the /proc
// file the task of n asks for when the profile
// grants it (procTarget), and returns the descriptor. The path is read from the task's memory
// and resolved against its working directory or directory descriptor as the task sees them; the
// file is opened through the host's /proc, by the host pid of a process that is in the
// sandbox's PID namespace and still alive after the open.
func (s *supervisor) openProcFile(n *seccompNotif, name string, pathArg int, accmode uint64) (int, bool) {
	tid := int(n.Pid)
	p, ok := readString(tid, n.Data.Args[pathArg])
	if !ok || p == "" {
		return -1, false
	}
	if path.IsAbs(p) && !strings.HasPrefix(p, "/proc/") {
		return -1, false // most opens: nothing more to look at
	}
	if !path.IsAbs(p) {
		dirfd := int64(unix.AT_FDCWD)
		if name == "openat" {
			dirfd = int64(int32(n.Data.Args[0]))
		}
		if p, ok = absTaskPath(tid, dirfd, p); !ok || !strings.HasPrefix(p, "/proc/") {
			return -1, false
		}
	}
	ids, ok := kernrun.StatusIDs(tid)
	nsTgid, nsTid, hostTgid := ids.NSTgid, ids.NSPid, ids.Tgid
	if !ok {
		return -1, false
	}
	pid, file, ok := procTarget(s.compiled.ProcWrites, p, nsTgid, nsTid)
	if !ok {
		return -1, false
	}
	host := hostTgid
	if pid != nsTgid {
		if host, ok = s.hostPID(pid); !ok {
			return -1, false
		}
	}
	pidfd, err := unix.PidfdOpen(host, 0)
	if err != nil {
		return -1, false
	}
	defer unix.Close(pidfd)
	if !s.inSandbox(host) {
		return -1, false
	}
	mode := unix.O_WRONLY
	if accmode == unix.O_RDWR {
		mode = unix.O_RDWR
	}
	fd, err := unix.Open("/proc/"+strconv.Itoa(host)+"/"+file, mode|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return -1, false
	}
	// Still alive after the open: the /proc directory opened was that process's (a pid is not
	// reused while its process lives).
	if unix.PidfdSendSignal(pidfd, 0, nil, 0) != nil || !notifIDValid(s.listener, n.ID) {
		unix.Close(fd)
		return -1, false
	}
	return fd, true
}

// hostPID finds the host pid of the sandbox's process nsPID (in the sandbox's PID namespace).
func (s *supervisor) hostPID(nsPID int) (int, bool) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false
	}
	for _, e := range ents {
		host, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ids, ok := kernrun.StatusIDs(host); ok && ids.NSTgid == nsPID && s.inSandbox(host) {
			return host, true
		}
	}
	return 0, false
}

// inSandbox reports whether host pid is in the PID namespace of the sandbox (its init stage's),
// and is not the init stage itself.
func (s *supervisor) inSandbox(host int) bool {
	if host == s.rootPid {
		return false
	}
	want, err1 := os.Readlink("/proc/" + strconv.Itoa(s.rootPid) + "/ns/pid")
	got, err2 := os.Readlink("/proc/" + strconv.Itoa(host) + "/ns/pid")
	return err1 == nil && err2 == nil && want == got
}
