package enforcer

import (
	"fmt"
	"os"
	"runtime"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/sandbox"
	"github.com/sysprof/sysprof/seccomp"
)

// memfdCreate answers a memfd_create the filter sent only for seccomp.WhyMemfd and that does
// not ask for MFD_EXEC: the supervisor makes the file itself and puts it in the caller as the
// call's result (notifAnswerFD). The file is one on a detached noexec tmpfs
// (sandbox.NoExecMemfd; its link reads /memfd:NAME like a memfd's), so it can be neither
// executed (execve of /proc/self/fd/N: EACCES) nor mapped executable (dlopen of it: EPERM). When
// no such mount can be had, a real memfd with MFD_NOEXEC_SEAL (execve refused, an executable
// mapping not: Run notes it). Its pages are charged to whoever writes them (the caller), not to
// the supervisor. It reports false for every other call (MFD_EXEC: denied and reported by
// handle; in audit mode the call goes on as asked).
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
	fd, err := s.noExecMemfd(label, flags)
	if err != nil { // EINVAL (a long name, unknown flags), EMFILE...: the caller's answer
		resp.Error = -int32(unix.EINVAL)
		if errno, ok := err.(unix.Errno); ok {
			resp.Error = -int32(errno)
		}
		_ = notifSend(s.listener, &resp)
		return true
	}
	defer unix.Close(fd)
	if errno := notifAnswerFD(s.listener, n.ID, fd, flags&unix.MFD_CLOEXEC != 0); errno != 0 && errno != unix.ENOENT { // ENOENT: the caller is gone
		resp.Error = -int32(errno) // EMFILE in the caller, ...
		_ = notifSend(s.listener, &resp)
	}
	return true
}

// memfdFlags are the flags memfd_create knows (Linux 6.3): anything else is EINVAL.
const memfdFlags = unix.MFD_CLOEXEC | unix.MFD_ALLOW_SEALING | unix.MFD_HUGETLB | unix.MFD_NOEXEC_SEAL | unix.MFD_EXEC |
	unix.MFD_HUGE_MASK<<unix.MFD_HUGE_SHIFT

// mfdNameMax is the longest name memfd_create takes (MFD_NAME_MAX_LEN).
const mfdNameMax = 249

// noExecMemfd is the file memfdCreate hands out for memfd_create(label, flags): on the run's
// noexec tmpfs (made on the first call), else a memfd sealed non-executable.
func (s *supervisor) noExecMemfd(label string, flags int) (int, error) {
	if flags&^memfdFlags != 0 || len(label) > mfdNameMax {
		return -1, unix.EINVAL
	}
	if mnt := s.memfdMount(); mnt >= 0 {
		return createAs(s.memfdUID, s.memfdGID, func() (int, error) { return sandbox.NoExecMemfd(mnt, label, true) })
	}
	return unix.MemfdCreate(label, (flags|unix.MFD_CLOEXEC|unix.MFD_NOEXEC_SEAL)&^unix.MFD_EXEC)
}

// memfdMount is the run's NoExecTmpfs: the init stage's (useMemfdTmpfs: it is in the sandbox's
// Landlock rules, so the command may reopen its memfds through /proc/self/fd/N), else, for a run
// without the sandbox, root's own made on the first memfd_create; or -1 with the reason kept in
// memfdWhy. A supervisor without CAP_SYS_ADMIN (an ordinary user) cannot mount one itself.
func (s *supervisor) memfdMount() int {
	s.memfdOnce.Do(func() {
		s.memfdMnt, s.memfdUID, s.memfdGID = -1, os.Geteuid(), os.Getegid()
		if os.Geteuid() != 0 {
			s.memfdWhy = "an ordinary user's supervisor cannot mount the noexec tmpfs"
			return
		}
		fd, err := sandbox.NoExecTmpfs()
		if err != nil {
			s.memfdWhy = err.Error()
			return
		}
		s.memfdMnt = fd
	})
	return s.memfdMnt
}

// useMemfdTmpfs gives the supervisor the NoExecTmpfs the init stage mounted, before it serves
// anything: uid and gid are the host ids the command runs as, which the stage's user namespace
// maps (root's own are not mapped in a root-idmap or sudo run: the files are made as these).
func (s *supervisor) useMemfdTmpfs(mnt, uid, gid int) {
	s.memfdOnce.Do(func() { s.memfdMnt, s.memfdUID, s.memfdGID = mnt, uid, gid })
}

// createAs runs create with the filesystem ids uid and gid: as they are, or on an OS thread of
// its own whose fsuid and fsgid are set (per thread) and which ends with the call (the goroutine
// exits locked to it), so that nothing else ever runs with them.
func createAs(uid, gid int, create func() (int, error)) (int, error) {
	if uid == os.Geteuid() && gid == os.Getegid() {
		return create()
	}
	type result struct {
		fd  int
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread goes with this goroutine
		_, _ = unix.SetfsgidRetGid(gid)
		_, _ = unix.SetfsuidRetUid(uid)
		// setfsuid(-1) changes nothing and says the current one: it fails silently otherwise.
		if u, _ := unix.SetfsuidRetUid(-1); u != uid {
			ch <- result{-1, unix.EPERM}
			return
		}
		if g, _ := unix.SetfsgidRetGid(-1); g != gid {
			ch <- result{-1, unix.EPERM}
			return
		}
		fd, err := create()
		ch <- result{fd, err}
	}()
	r := <-ch
	return r.fd, r.err
}

// supervisesMemfds reports whether the filter sends memfd_create to the supervisor
// (seccomp.WhyMemfd: memfd_create allowed, and no rule lets MFD_EXEC through).
func (c *Compiled) supervisesMemfds() bool {
	if c.spec == nil || len(c.spec.ABIs) == 0 {
		return false
	}
	for _, r := range c.spec.ABIs[0].Rules {
		if r.Name == "memfd_create" && r.Ret == seccomp.RetAllow {
			return slices.ContainsFunc(r.Checks, func(chk seccomp.Check) bool { return chk.Why == seccomp.WhyMemfd })
		}
	}
	return false
}

// memfdNote says, once the run is over, when memfds were real ones that a mapping can still
// run (see memfdMount), or "".
func (s *supervisor) memfdNote() string {
	if s.memfdWhy == "" {
		return ""
	}
	return fmt.Sprintf("memfds: the command's memfds were sealed non-executable (execve refused) but could still be mapped executable (dlopen of /proc/self/fd/N): %s", s.memfdWhy)
}
