package sandbox

import (
	"fmt"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// CloneFlags are the namespaces the init stage must be created with (SysProcAttr.Cloneflags).
//
//   - CLONE_NEWNS always: every mount Apply makes stays private to the sandbox.
//   - CLONE_NEWIPC always: SysV IPC and POSIX message queues of the host (shared memory of other
//     processes) are out of reach; dev tools do not share them with the host. (POSIX shm lives
//     in /dev/shm, which PrivateTmp replaces.)
//   - CLONE_NEWPID always: host processes are invisible (MountProc mounts the namespace's own
//     /proc), and when the init stage, PID 1 of the namespace, exits the kernel kills every
//     process left in it, daemons included. The init stage stays PID 1 as a reaper and signal
//     forwarder while the command runs as its child (a command that were PID 1 itself would
//     ignore the signals it has no handler for, and not reap orphans).
//   - CLONE_NEWNET when p.NetNS.
//   - CLONE_NEWUSER when userNS (Identity.UserNS), with the Identity's mappings.
//
// Not included: CLONE_NEWUTS (changing the hostname needs CAP_SYS_ADMIN, which the tool no
// longer has, so it would isolate nothing).
func (p *Plan) CloneFlags(userNS bool) uintptr {
	f := uintptr(unix.CLONE_NEWNS | unix.CLONE_NEWIPC | unix.CLONE_NEWPID)
	if p.NetNS {
		f |= unix.CLONE_NEWNET
	}
	if userNS {
		f |= unix.CLONE_NEWUSER
	}
	return f
}

// Identity models who the init stage and the command are on the host. ChooseIdentity picks it.
type Identity struct {
	// Model names the case, for reports and `sysprof show`: "user", "sudo", "root-idmap",
	// "root-owner", "root-userns" or "host-root".
	Model string
	// UserNS: the init stage is created in a new user namespace with these mappings.
	UserNS     bool
	Uids, Gids []syscall.SysProcIDMap
	// UID and GID are the command's ids on the host.
	UID, GID int
	// FileUID and FileGID own, on disk, what the command creates (root-idmap: 0, through the
	// idmapped mounts, although the command's host uid is RootUID).
	FileUID, FileGID int
	// Cred, when set, is the uid/gid the init stage switches to inside the namespace (sudo).
	Cred *syscall.Credential
	// Ambient are capabilities the init stage needs raised across its own execve because its
	// uid inside is not 0 (InitAmbientCaps); Apply drops them before the command runs.
	Ambient []uintptr
	// Idmap: the init stage needs the host's mounts as an idmapped Replica (root-idmap), which
	// only the host-root parent can make.
	Idmap bool
	// Weaker says why this identity is weaker than the caller's case calls for (root-userns: /
	// cannot be idmapped, so the command keeps host uid 0 for file ownership); a run refuses it
	// unless degrading.
	Weaker string
	// Note, when set, is one line for the run's stderr and report on what this identity
	// cannot do here and what to do about it (root-idmap in root's tree on a mount that
	// cannot be idmapped: git calls the repository of dubious ownership).
	Note string
}

// Detail is one line saying what uid the command has, for reports.
func (id Identity) Detail() string {
	switch id.Model {
	case "user":
		return fmt.Sprintf("unprivileged: uid/gid %d/%d mapped to themselves", id.UID, id.GID)
	case "sudo":
		return fmt.Sprintf("root under sudo: the invoking user's uid/gid %d/%d (mapped to themselves), no root at all", id.UID, id.GID)
	case "root-idmap":
		return fmt.Sprintf("root: uid 0 only inside a user namespace, host uid/gid %d/%d without any capability on the host; root's files are its own through idmapped mounts (what it creates is owned by 0)", id.UID, id.GID)
	case "root-owner":
		return fmt.Sprintf("root: the work tree's mount cannot be idmapped, so the command is the tree's owner, uid/gid %d/%d (mapped to themselves), no root at all", id.UID, id.GID)
	case "root-userns":
		return "root: a user namespace with host ids mapped to themselves (host uid 0 without any capability on the host; mounts locked): " + id.Weaker
	case "host-root":
		return "root: the profile asks for real root (hostRoot: true): host uid 0, capabilities dropped, no user namespace"
	}
	return id.Model
}

// fullRange maps every id to itself: ownership inside reads as on the host.
var fullRange = []syscall.SysProcIDMap{{ContainerID: 0, HostID: 0, Size: 1<<32 - 1}}

// ChooseIdentity decides who the command runs as. euid, uid and gid are the caller's
// (os.Geteuid, os.Getuid, os.Getgid); sudoUID and sudoGID are $SUDO_UID and $SUDO_GID; hostRoot
// is the profile's explicit request for real root; rootIdmap is CanIdmap("/") (nil: the root
// filesystem can be idmapped). It is pure.
//
//   - Not root: a user namespace mapping the caller's uid and gid to themselves (UserNSMappings).
//   - Root, hostRoot: no user namespace; host uid 0 whose capabilities Apply drops.
//   - Root under sudo (SUDO_UID and SUDO_GID set, numeric, non-zero): a user namespace mapping
//     the invoking user's uid and gid to themselves, the init stage switching to them (with no
//     supplementary groups): the command is that user on the host.
//   - Root otherwise (root-idmap): a user namespace in which uid and gid 0 are RootUID on the
//     host, no supplementary groups, and the host's mounts as an idmapped Replica: files owned
//     by host root are the command's own (root's 0700 $HOME, its caches and work trees stay
//     usable; what it creates is owned by 0 on disk), but its host uid is not 0: whatever
//     checks the uid and not a file (a sysctl's mode bits, a device node, a daemon's peer
//     credentials, a file on a filesystem that cannot be idmapped) sees an unprivileged id.
//   - Root, / cannot be idmapped (rootIdmap != nil, e.g. a container on overlayfs):
//     root-userns, every id mapped to itself (host uid 0 without capabilities, mounts locked),
//     marked Weaker: a run refuses it unless degrading.
//   - Root, the work tree's mount cannot be idmapped (tree.Idmap != nil: a checkout on an
//     overlay, NFS or FUSE mount), where the replica would show the tree as nobody's: a tree of
//     an ordinary user's (uid and gid not 0) gives root-owner, the command is that owner mapped
//     to itself (as under sudo), to whom the tree is its own. A tree of root's keeps
//     root-idmap (never host uid 0 unasked) with a Note: the tree shows as nobody's, which
//     git would call of dubious ownership (the enforcer tells git that repository is safe);
//     with tree.HostUID0 (--degrade=userns) root-userns, Weaker.
func ChooseIdentity(euid, uid, gid int, sudoUID, sudoGID string, hostRoot bool, rootIdmap error, tree Tree) Identity {
	if euid != 0 {
		u, g := UserNSMappings(uid, gid)
		return Identity{Model: "user", UserNS: true, Uids: u, Gids: g, UID: uid, GID: gid, FileUID: uid, FileGID: gid, Ambient: InitAmbientCaps(false)}
	}
	if hostRoot {
		return Identity{Model: "host-root", UID: 0, GID: gid, FileGID: gid}
	}
	su, errU := strconv.ParseUint(sudoUID, 10, 31)
	sg, errG := strconv.ParseUint(sudoGID, 10, 31)
	if errU == nil && errG == nil && su != 0 && sg != 0 {
		u, g := UserNSMappings(int(su), int(sg))
		return Identity{Model: "sudo", UserNS: true, Uids: u, Gids: g, UID: int(su), GID: int(sg), FileUID: int(su), FileGID: int(sg),
			Cred:    &syscall.Credential{Uid: uint32(su), Gid: uint32(sg), Groups: []uint32{}},
			Ambient: InitAmbientCaps(false)}
	}
	if tree.Idmap != nil && tree.UID > 0 && tree.GID > 0 {
		u, g := UserNSMappings(tree.UID, tree.GID)
		return Identity{Model: "root-owner", UserNS: true, Uids: u, Gids: g, UID: tree.UID, GID: tree.GID, FileUID: tree.UID, FileGID: tree.GID,
			Cred:    &syscall.Credential{Uid: uint32(tree.UID), Gid: uint32(tree.GID), Groups: []uint32{}},
			Ambient: InitAmbientCaps(false)}
	}
	if rootIdmap != nil {
		return Identity{Model: "root-userns", UserNS: true, Uids: fullRange, Gids: fullRange, UID: 0, GID: gid, FileGID: gid,
			Weaker: "the command keeps host uid 0 for file ownership, because " + rootIdmap.Error()}
	}
	if tree.Idmap != nil && tree.HostUID0 {
		return Identity{Model: "root-userns", UserNS: true, Uids: fullRange, Gids: fullRange, UID: 0, GID: gid, FileGID: gid,
			Weaker: "the command keeps host uid 0 for file ownership, because the work tree is root's (uid or gid 0) and " + tree.Idmap.Error()}
	}
	rootMap := []syscall.SysProcIDMap{{ContainerID: 0, HostID: RootUID, Size: 1}}
	id := Identity{Model: "root-idmap", UserNS: true, Uids: rootMap, Gids: rootMap, UID: RootUID, GID: RootUID,
		Cred: &syscall.Credential{Uid: 0, Gid: 0, Groups: []uint32{}}, Idmap: true}
	if tree.Idmap != nil {
		id.Note = "the work tree is root's (uid or gid 0) and " + tree.Idmap.Error() + ", so inside the sandbox its files show as owned by nobody: " +
			"git, which would call the repository of \"dubious ownership\", is told that one repository is safe when the host says root owns it " +
			"(safe.directory); another tool that checks ownership may still refuse it: pass --degrade=userns (host uid 0 without capabilities, in a user namespace), " +
			"give the tree to an ordinary user, or move it to a filesystem that can be idmapped"
	}
	return id
}

// Tree is the work tree's mount and owner, for ChooseIdentity as root. The zero Tree is a
// root-owned tree on a mount that can be idmapped.
type Tree struct {
	Idmap    error // CanIdmap of the tree's mount (nil: it can be idmapped)
	UID, GID int   // the tree's owner
	// HostUID0: the caller accepts host uid 0 in a user namespace (--degrade=userns) for a
	// tree of root's on a mount that cannot be idmapped, where root-idmap shows it as nobody's.
	HostUID0 bool
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
// CAP_SETPCAP to lock securebits and empty the bounding set, CAP_NET_RAW for the egress
// proxy's ICMP observer (netproxy.SetupInside), CAP_DAC_OVERRIDE for a stage's
// overlay (overlayfs works in its work/work directory, mode 0, with the mounter's credentials:
// it only applies to the caller's own files, the only uid mapped), CAP_SYS_RESOURCE to limit the
// namespace's own per-user counts (SetUserCounts). They exist only inside the
// new user namespace. Not needed (nil) as root.
func InitAmbientCaps(asRoot bool) []uintptr {
	if asRoot {
		return nil
	}
	return []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_NET_ADMIN, unix.CAP_NET_BIND_SERVICE, unix.CAP_SETPCAP, unix.CAP_DAC_OVERRIDE, unix.CAP_NET_RAW, unix.CAP_SYS_RESOURCE}
}

// NamespaceAttr is a SysProcAttr with the namespace part of starting the init stage filled in
// for id: CloneFlags, and in a user namespace the id mappings, setgroups (denied, except under
// sudo where the init stage drops root's supplementary groups), the credential and the ambient
// capabilities. The enforcer adds its own fields (Setsid, Pdeathsig, UseCgroupFD, ...) to the
// result.
func (p *Plan) NamespaceAttr(id Identity) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Cloneflags: p.CloneFlags(id.UserNS)}
	if id.UserNS {
		a.UidMappings, a.GidMappings = id.Uids, id.Gids
		a.GidMappingsEnableSetgroups = id.Cred != nil
		a.Credential = id.Cred
		a.AmbientCaps = id.Ambient
	}
	return a
}
