package sandbox

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// CloneFlags are the namespaces the init stage must be created with (SysProcAttr.Cloneflags).
//
//   - CLONE_NEWNS always: every mount Apply makes stays private to the sandbox.
//   - CLONE_NEWIPC always: SysV IPC and POSIX message queues of the host (shared memory of other
//     processes) are out of reach; dev tools do not share them with the host. (POSIX shm lives
//     in /dev/shm, which PrivateTmp replaces.)
//   - CLONE_NEWNET when p.NetNS.
//   - CLONE_NEWUSER when !asRoot, with UserNSMappings and InitAmbientCaps.
//
// Not included: CLONE_NEWUTS (changing the hostname needs CAP_SYS_ADMIN, which the tool no
// longer has, so it would isolate nothing), CLONE_NEWPID (the tool would be PID 1: signals it has
// no handler for, like the SIGTERM sysprof forwards, would be ignored, and orphans would not be
// reaped without an init; Landlock already confines ptrace and, with ScopeSignals, kill to the
// sandbox). If the enforcer adds CLONE_NEWPID itself, Apply mounts a fresh /proc.
func (p *Plan) CloneFlags(asRoot bool) uintptr {
	f := uintptr(unix.CLONE_NEWNS | unix.CLONE_NEWIPC)
	if p.NetNS {
		f |= unix.CLONE_NEWNET
	}
	if !asRoot {
		f |= unix.CLONE_NEWUSER
	}
	return f
}

// UserNSMappings maps the caller's uid and gid to themselves inside the new user namespace (one
// id each: all an unprivileged process may map). Not to root: files the tool creates keep the
// caller as owner on the host and inside, and tools that check ownership (git's
// safe.directory, ssh's key permissions, make's and gcc's temp files) see the same uid as
// outside. The price is that a non-root uid loses its capabilities at execve; InitAmbientCaps
// gives the init stage back the few it needs, and Apply drops them before the tool runs.
// setgroups is denied in the namespace (required to map a gid unprivileged); supplementary
// groups of the caller show as the overflow gid (nogroup) inside.
func UserNSMappings(uid, gid int) (uids, gids []syscall.SysProcIDMap) {
	return []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		[]syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
}

// InitAmbientCaps are the capabilities the init stage needs when it runs as a non-root uid in a
// new user namespace (SysProcAttr.AmbientCaps): CAP_SYS_ADMIN for the mounts, CAP_NET_ADMIN to
// bring lo up (and route), CAP_NET_BIND_SERVICE for the egress DNS stub's port 53,
// CAP_SETPCAP to lock securebits and empty the bounding set. They exist only inside
// the new user namespace. Not needed (nil) as root.
func InitAmbientCaps(asRoot bool) []uintptr {
	if asRoot {
		return nil
	}
	return []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_NET_BIND_SERVICE, unix.CAP_SETPCAP}
}

// NamespaceAttr is a SysProcAttr with the namespace part of starting the init stage filled in:
// CloneFlags, and for !asRoot the id mappings (uid and gid are the caller's, os.Getuid() and
// os.Getgid()), setgroups denied, and InitAmbientCaps. The enforcer adds its own fields
// (Setsid, Pdeathsig, UseCgroupFD, ...) to the result.
func (p *Plan) NamespaceAttr(asRoot bool, uid, gid int) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Cloneflags: p.CloneFlags(asRoot)}
	if !asRoot {
		a.UidMappings, a.GidMappings = UserNSMappings(uid, gid)
		a.GidMappingsEnableSetgroups = false
		a.AmbientCaps = InitAmbientCaps(false)
	}
	return a
}
