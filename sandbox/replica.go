package sandbox

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/mountinfo"
)

// RootUID is the host uid and gid of the command (and of the init stage) when plain root runs
// sysprof: uid 0 inside the sandbox's user namespace, this id on the host. It is the last id of
// systemd's container range (524288-1879048191, which systemd-nspawn hands out from the bottom
// in blocks of 65536): no host account has it, so no host file outside the idmapped mounts is
// the command's own.
const RootUID = 1879048191

// pseudoFS are kernel filesystems that cannot be idmapped and hold no files a tool creates. The
// replica carries each as one recursive plain clone with everything mounted below it (their
// root-owned files show as nobody's inside): /proc, /sys and /dev are three clones, not thirty.
// What a subtree of them holds that could be idmapped (/dev/shm, the tmpfs at /sys/fs/cgroup)
// is covered by the private tmp or read-only anyway.
var pseudoFS = []string{"proc", "sysfs", "devtmpfs", "devpts", "cgroup", "cgroup2", "bpf", "tracefs",
	"debugfs", "securityfs", "pstore", "mqueue", "configfs", "fusectl", "binfmt_misc", "efivarfs",
	"hugetlbfs", "autofs", "nsfs", "rpc_pipefs", "selinuxfs", "ramfs"}

// Replica is the host's mount tree as detached clones, one per visible mount, made by a process
// with CAP_SYS_ADMIN on the host (PrepareReplica) for an init stage whose user namespace cannot
// make them itself (EnterReplica). Every clone whose filesystem allows it is idmapped with the
// init stage's user namespace: a file owned by host uid/gid 0 is owned by the namespace's root,
// and what that root creates is owned by 0 on disk, although its host uid is RootUID.
type Replica struct {
	Paths []string // mount points, parents before children; Paths[0] is "/"
	FDs   []int    // FDs[i] is the detached clone of the mount at Paths[i]
	// Plain lists the mounts other than kernel pseudo filesystems that could not be idmapped
	// ("/mnt/share (nfs4)"): their root-owned files show as owned by nobody to the command.
	Plain []string
}

// PrepareReplica clones every visible mount of the caller's mount namespace (open_tree, one
// mount each, private) and idmaps the clones with the user namespace usernsFD (mount_setattr
// MOUNT_ATTR_IDMAP) where the filesystem allows it. It fails when / itself cannot be idmapped:
// the command would then not be able to use root's files as their owner. Requires Linux 5.12
// and CAP_SYS_ADMIN in the initial user namespace. Close the Replica when it has been sent.
//
// reach are the paths the sandbox's plan names (Plan.Reach, plus the working directory; nil:
// carry every mount). On a host with more than pruneAbove mounts (hundreds of container
// mounts), a mount neither at or below one of them nor on the way to one (symlinks resolved)
// is left out: what its mount point then shows, the directory below it, is as far out of the
// command's reach (no rule names it). Below that, every mount is carried.
func PrepareReplica(usernsFD int, reach []string) (*Replica, error) {
	mounts, err := mountinfo.Read()
	if err != nil {
		return nil, err
	}
	points, byPoint, byID := mountPoints(mounts)
	prune := reach != nil && len(points) > pruneAbove
	if prune {
		reach = resolved(reach)
	}
	r := &Replica{}
	var subtrees []string // pseudo filesystems cloned with what is below them
	for _, p := range points {
		if under(p, subtrees) {
			continue
		}
		// Pruned before anything is asked of the kernel: a container host's hundreds of
		// mounts cost one map entry each.
		if prune && p != "/" && !slices.Contains(pseudoFS, byPoint[p]) && !reaches(p, reach) {
			continue
		}
		mp, ok := visibleAt(p, byID)
		if !ok {
			continue
		}
		idmap := !slices.Contains(pseudoFS, mp.FSType)
		flags := unix.OPEN_TREE_CLONE | unix.OPEN_TREE_CLOEXEC
		if !idmap {
			flags |= unix.AT_RECURSIVE
			subtrees = append(subtrees, mp.MountPoint)
		}
		fd, err := unix.OpenTree(unix.AT_FDCWD, mp.MountPoint, uint(flags))
		if err != nil {
			if mp.MountPoint != "/" && errors.Is(err, unix.ENOENT) {
				continue // gone since mountinfo was read
			}
			r.Close()
			return nil, fmt.Errorf("clone the host's mount %s (open_tree): %w", mp.MountPoint, err)
		}
		// Private: a clone of a shared mount would otherwise propagate what the init stage
		// mounts on it (its private /tmp) back to the host.
		if err := prepareClone(fd, idmap, usernsFD); err != nil {
			if idmap && mp.MountPoint != "/" && (errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EPERM)) {
				r.Plain = append(r.Plain, fmt.Sprintf("%s (%s)", mp.MountPoint, mp.FSType))
				err = prepareClone(fd, false, -1)
			} else if idmap && mp.MountPoint == "/" {
				err = fmt.Errorf("the root filesystem (%s) cannot be idmapped here: %w", mp.FSType, err)
			}
			if err != nil {
				unix.Close(fd)
				r.Close()
				return nil, fmt.Errorf("prepare the clone of %s: %w", mp.MountPoint, err)
			}
		}
		r.Paths = append(r.Paths, mp.MountPoint)
		r.FDs = append(r.FDs, fd)
	}
	if len(r.Paths) == 0 || r.Paths[0] != "/" {
		r.Close()
		return nil, errors.New("no mount at / in this mount namespace")
	}
	return r, nil
}

// pruneAbove is the number of visible mounts above which PrepareReplica carries only those the
// plan reaches.
const pruneAbove = 64

// resolved is paths with their symlinks resolved as well (the path as named, and where it leads).
func resolved(paths []string) []string {
	out := slices.Clone(paths)
	for _, p := range paths {
		if r, err := filepath.EvalSymlinks(p); err == nil && r != p {
			out = append(out, r)
		}
	}
	return out
}

// reaches reports whether the mount at mp holds one of paths or lies on the way to one.
func reaches(mp string, paths []string) bool {
	for _, p := range paths {
		if under(p, []string{mp}) || under(mp, []string{p}) {
			return true
		}
	}
	return false
}

// Reach is every path the plan names: what a replica of the host's mounts must carry for it.
// The private tmp dirs are not among them: their tmpfs covers whatever the host mounted there
// (paths the plan names below them are).
func (p *Plan) Reach() []string {
	out := slices.Concat(p.Writable, p.Hidden, p.ReadOnly, p.NoExec, maskedPaths(p.Masked))
	for _, s := range p.Staged {
		out = append(out, s.Path, s.Upper, s.Work)
	}
	if l := p.Landlock; l != nil {
		out = slices.Concat(out, l.Read, l.Write, l.Exec, l.List, l.Hidden, l.Devices)
	}
	return out
}

// prepareClone makes the detached clone fd private (with what is below it) and, with idmap,
// idmapped with the user namespace usernsFD.
func prepareClone(fd int, idmap bool, usernsFD int) error {
	attr := &unix.MountAttr{Propagation: unix.MS_PRIVATE}
	if idmap {
		attr.Attr_set, attr.Userns_fd = unix.MOUNT_ATTR_IDMAP, uint64(usernsFD)
		// One mount: idmapping needs every mount of a recursive change to allow it.
		return unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, attr)
	}
	return unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, attr)
}

// mountPoints are the distinct mount points of ms, sorted (a parent is a prefix of its children:
// it comes first), with the filesystem type of the last mount listed at each and the mounts by
// id.
func mountPoints(ms []mountinfo.Entry) (points []string, byPoint map[string]string, byID map[uint64]mountinfo.Entry) {
	byPoint = map[string]string{}
	byID = make(map[uint64]mountinfo.Entry, len(ms))
	for _, m := range ms {
		if _, ok := byPoint[m.MountPoint]; !ok {
			points = append(points, m.MountPoint)
		}
		byPoint[m.MountPoint] = m.FSType
		byID[uint64(m.ID)] = m
	}
	slices.Sort(points)
	return points, byPoint, byID
}

// visibleAt is the mount a path lookup of p reaches, when it is one of the mounts at p (the top
// one where mounts are stacked); ok is false when p is gone or covered by a later mount of an
// ancestor (its path then leads into the covering mount).
func visibleAt(p string, byID map[uint64]mountinfo.Entry) (mountinfo.Entry, bool) {
	var stx unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, p, unix.AT_SYMLINK_NOFOLLOW|unix.AT_STATX_DONT_SYNC, unix.STATX_MNT_ID, &stx); err != nil {
		return mountinfo.Entry{}, false
	}
	m, ok := byID[stx.Mnt_id]
	return m, ok && m.MountPoint == p
}

// Close closes the clones (once they are sent, the receiver holds its own).
func (r *Replica) Close() {
	for _, fd := range r.FDs {
		unix.Close(fd)
	}
	r.FDs = nil
}

// Send passes the replica over the unix socket conn (SOCK_SEQPACKET): a first message with the
// number of mounts, then the mounts in messages of at most maxRightsPerMessage, each with its
// mount points in the payload and its clones as SCM_RIGHTS.
func (r *Replica) Send(conn int) error {
	if err := unix.Sendmsg(conn, []byte(strconv.Itoa(len(r.FDs))), nil, nil, 0); err != nil {
		return fmt.Errorf("send the mount replica: %w", err)
	}
	for i := 0; i < len(r.FDs); i += maxRightsPerMessage {
		j := min(i+maxRightsPerMessage, len(r.FDs))
		if err := unix.Sendmsg(conn, []byte(strings.Join(r.Paths[i:j], "\x00")), unix.UnixRights(r.FDs[i:j]...), nil, 0); err != nil {
			return fmt.Errorf("send the mount replica: %w", err)
		}
	}
	return nil
}

// maxRightsPerMessage is what one SCM_RIGHTS message may carry (the kernel's SCM_MAX_FD).
const maxRightsPerMessage = 253

// ReceiveReplica reads what Send sent on conn.
func ReceiveReplica(conn int) (*Replica, error) {
	buf := make([]byte, 1<<16)
	n, _, _, _, err := unix.Recvmsg(conn, buf, nil, 0)
	if err != nil {
		return nil, fmt.Errorf("receive the mount replica: %w", err)
	}
	total, err := strconv.Atoi(string(buf[:n]))
	if err != nil || total < 1 {
		return nil, fmt.Errorf("receive the mount replica: bad header %q", buf[:n])
	}
	r := &Replica{}
	oob := make([]byte, unix.CmsgSpace(4*maxRightsPerMessage))
	for len(r.FDs) < total {
		n, oobn, flags, _, err := unix.Recvmsg(conn, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if err != nil || n == 0 {
			r.Close()
			return nil, fmt.Errorf("receive the mount replica: %d of %d mounts: %v", len(r.FDs), total, err)
		}
		msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
		if err != nil {
			r.Close()
			return nil, fmt.Errorf("receive the mount replica: %w", err)
		}
		var fds []int
		for i := range msgs {
			got, err := unix.ParseUnixRights(&msgs[i])
			if err != nil {
				r.Close()
				return nil, fmt.Errorf("receive the mount replica: %w", err)
			}
			fds = append(fds, got...)
		}
		r.FDs = append(r.FDs, fds...)
		paths := strings.Split(string(buf[:n]), "\x00")
		r.Paths = append(r.Paths, paths...)
		if flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0 || len(paths) != len(fds) {
			r.Close()
			return nil, fmt.Errorf("receive the mount replica: %d mount points, %d clones in one message (truncated: %v)", len(paths), len(fds), flags&(unix.MSG_TRUNC|unix.MSG_CTRUNC) != 0)
		}
	}
	if len(r.FDs) != total || r.Paths[0] != "/" {
		r.Close()
		return nil, fmt.Errorf("receive the mount replica: %d mounts, want %d starting at /", len(r.FDs), total)
	}
	return r, nil
}

// Enter makes the replica the calling process's root: every mount of the mount namespace it
// was created with is replaced by the clones (the old tree is detached), so that the layers
// Apply builds afterwards (binds, stages, covers) are made of idmapped mounts. It runs in the
// init stage, in a new mount namespace, before MountProc and Apply; it closes the clones.
// Needs CAP_SYS_ADMIN in the mount namespace's user namespace.
func (r *Replica) Enter() error {
	defer r.Close()
	if err := checkNewMountNS(); err != nil {
		return err
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / rprivate: %w", err)
	}
	root := r.FDs[0]
	// On top of the old root; the others below it, looked up from the new root itself.
	if err := unix.MoveMount(root, "", unix.AT_FDCWD, "/", unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("attach the replica of / (move_mount): %w", err)
	}
	for i, p := range r.Paths[1:] {
		err := unix.MoveMount(r.FDs[i+1], "", root, strings.TrimPrefix(p, "/"), unix.MOVE_MOUNT_F_EMPTY_PATH)
		if err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTDIR) {
			return fmt.Errorf("attach the replica of %s (move_mount): %w", p, err)
		}
	}
	if err := unix.Fchdir(root); err != nil {
		return fmt.Errorf("enter the replica: %w", err)
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root into the replica: %w", err)
	}
	// The old root is now stacked under the new one: detach it with everything below it.
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach the host's mount tree: %w", err)
	}
	if err := unix.Chdir("/"); err != nil {
		return fmt.Errorf("enter the replica: %w", err)
	}
	return nil
}

// CanIdmap predicts whether the filesystem holding path allows idmapped mounts on this
// kernel (6.x): ext2/3/4, xfs, btrfs, f2fs, tmpfs and vfat do; overlayfs (a container's root),
// NFS, FUSE and 9p do not. It returns nil or the reason. PrepareReplica finds out for sure.
func CanIdmap(path string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return fmt.Errorf("statfs %s: %w", path, err)
	}
	switch uint32(st.Type) {
	case unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC, unix.F2FS_SUPER_MAGIC,
		unix.TMPFS_MAGIC, unix.MSDOS_SUPER_MAGIC:
		return nil
	case unix.OVERLAYFS_SUPER_MAGIC:
		if path == "/" {
			return errors.New("/ is on overlayfs (a container's root?), which cannot be idmapped")
		}
		return fmt.Errorf("%s is on overlayfs, which cannot be idmapped", path)
	}
	return fmt.Errorf("%s is on a filesystem (magic %#x) that cannot be idmapped here", path, uint32(st.Type))
}
