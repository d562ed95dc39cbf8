package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/mountinfo"
	"github.com/sysprof/sysprof/internal/phase"
)

// privateTmpDirs get a fresh tmpfs each when Plan.PrivateTmp is set. /dev/shm is included: it
// is where POSIX shared memory lives, a channel to host processes that a new IPC namespace does
// not close.
var privateTmpDirs = []string{"/tmp", "/var/tmp", "/dev/shm"}

// WritableMountAttrs are set on every mount the command can write (the writable trees, the
// stages' overlays, the private tmpfs; the covers are read-only and noexec besides): no set-id
// bit or file capability takes effect there and no device node opens. Tests clear it to see
// their checks fail.
var WritableMountAttrs uint64 = unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV

func (p *Plan) wantsMounts() bool {
	return p.ReadOnlyRoot || p.PrivateTmp || len(p.Writable) > 0 || len(p.Hidden) > 0 || len(p.Masked) > 0 || len(p.Staged) > 0 || len(p.NoExecTrees) > 0 || len(p.ExecOutputs) > 0 || len(p.ExecFiles) > 0
}

// applyMounts lays out the mount namespace. Steps, and why in this order:
//
//  1. make every mount private, so nothing propagates back to the host;
//  2. clone each writable tree (open_tree OPEN_TREE_CLONE|AT_RECURSIVE) while the host view is
//     still uncovered: a writable path under /tmp survives the private tmpfs that way; build
//     each stage's overlay (and clone the host mounts below it) and clone the read-only paths
//     inside writable trees, for the same reason;
//  3. fresh tmpfs on /tmp, /var/tmp, /dev/shm;
//  4. attach the stages and the clones onto their own paths, parents first (creating the mount
//     point inside a private tmpfs when needed): each writable path is now a separate mount, a
//     writable directory inside a stage is the host's own; then the read-only paths on top;
//  5. hidden paths: an empty read-only directory or file cloned from a small detached tmpfs,
//     mounted on top (after the writable binds, so a secret inside a writable directory is
//     still hidden);
//  6. a fresh /proc when this process is PID 1 of a new PID namespace (MountProc);
//  7. read-only: mount_setattr(AT_RECURSIVE, RDONLY) on /, then clear it on the writable mounts
//     and private tmpfs, then put it back on hidden mounts and on mounts below a writable path
//     that were read-only before; noexec on the writable mounts no exec rule lies in;
//  8. the noexec trees: each a recursive clone of itself, noexec at its root (the mounts below
//     keep their own flags), then each kept path a clone of itself with noexec cleared, parents
//     first (in a noexec stage too). Last, so that the clones copy every mount and flag the
//     steps before made;
//  9. the watch that binds each exec output directory without noexec when the command makes it.
func (p *Plan) applyMounts(res *Result) error {
	if !p.wantsMounts() {
		return nil
	}
	if err := checkNewMountNS(); err != nil {
		return err
	}
	// 1. Nothing propagates back to the host.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / rprivate: %w", err)
	}

	// 2. Clone writable trees, stages and read-only paths from the host's view.
	h := &hostClones{}
	defer h.close()
	if err := h.take(p, res); err != nil {
		return err
	}

	// 3. Private tmp.
	var tmpRoots []string
	if p.PrivateTmp {
		var err error
		if tmpRoots, err = mountPrivateTmp(p.TmpSize, p.TmpFiles, res); err != nil {
			return err
		}
	}

	// 4. Attach the stages, the writable clones and the read-only clones, parents first.
	writableRoots, readOnlyMounts, err := h.attach(tmpRoots)
	if err != nil {
		return err
	}

	// 5. Hidden paths.
	hiddenMounts, err := p.cover(res)
	if err != nil {
		return err
	}
	hiddenMounts = append(hiddenMounts, readOnlyMounts...)

	// 6. /proc for a new PID namespace (done already when the enforcer called MountProc).
	if os.Getpid() == 1 {
		if err := MountProc(); err != nil {
			return err
		}
	}

	// 7. Read-only root, noexec.
	if err := p.setMountFlags(writableRoots, tmpRoots, hiddenMounts); err != nil {
		return err
	}

	// 8. Noexec trees and what stays exec-mappable inside them.
	start := time.Now()
	defer phase.Since("mounts: noexec trees", start)
	if err := applyNoExecTrees(p.NoExecTrees, p.ExecKeep, p.noExecStages(writableRoots), res); err != nil {
		return err
	}

	// 9. Exec output directories, bound when the command makes them.
	return watchExecOutputs(p.ExecOutputs, res)
}

// noExecStages are the stages mounted noexec (step 7) among the writable roots: kept exec
// paths inside them are made exec-mappable like those inside a noexec tree.
func (p *Plan) noExecStages(writableRoots []string) []string {
	var out []string
	for _, s := range p.Staged {
		if slices.Contains(p.NoExec, s.Path) && slices.Contains(writableRoots, s.Path) {
			out = append(out, s.Path)
		}
	}
	return out
}

// hostClones are what applyMounts takes from the host's view while it is still uncovered
// (step 2): the writable trees, the stages' overlays (with the host's mounts below them) and
// the read-only paths inside writable trees. close releases them all, attached or not.
type hostClones struct {
	writable []clonedMount
	stages   []*stageMount
	readOnly []clonedMount
}

func (h *hostClones) close() {
	for _, c := range h.readOnly {
		unix.Close(c.fd)
	}
	for _, s := range h.stages {
		s.close()
	}
	for _, c := range h.writable {
		unix.Close(c.fd)
	}
}

// take clones each writable tree (a writable path under /tmp survives the private tmpfs that
// way), builds each stage's overlay and clones the read-only paths inside writable trees. What
// it took before an error is in h for close.
func (h *hostClones) take(p *Plan, res *Result) error {
	for _, w := range topLevel(p.Writable) {
		c, ok, err := cloneWritable(w, res)
		if err != nil {
			return err
		}
		if ok {
			h.writable = append(h.writable, c)
		}
	}
	if len(p.Staged) > 0 {
		mounts, err := mountinfo.Read()
		if err != nil {
			return err
		}
		for _, s := range p.Staged {
			sm, err := openStage(s, mounts, p.Writable, res)
			if err != nil {
				return err
			}
			h.stages = append(h.stages, sm)
		}
	}
	var err error
	h.readOnly, err = cloneReadOnly(p.ReadOnly, p.Writable, res)
	return err
}

// cloneWritable clones the tree at the writable path w (open_tree OPEN_TREE_CLONE|AT_RECURSIVE);
// ok is false when w is skipped (it does not exist, or is read-only on the host).
func cloneWritable(w string, res *Result) (c clonedMount, ok bool, err error) {
	resolved, err := filepath.EvalSymlinks(w)
	if errors.Is(err, os.ErrNotExist) {
		res.skip(LayerMounts, w, "writable path does not exist")
		return c, false, nil
	}
	if err != nil {
		return c, false, fmt.Errorf("resolve writable %s: %w", w, err)
	}
	if fi, err := os.Lstat(w); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		// The enforcer refuses a writable path that became a symlink; one swapped in since
		// would make its target (say $HOME) writable.
		return c, false, fmt.Errorf("writable %s is a symlink (to %s): refusing", w, resolved)
	}
	var st unix.Stat_t
	if err := unix.Stat(resolved, &st); err != nil {
		return c, false, fmt.Errorf("stat writable %s: %w", resolved, err)
	}
	var sfs unix.Statfs_t
	if err := unix.Statfs(resolved, &sfs); err != nil {
		return c, false, fmt.Errorf("statfs writable %s: %w", resolved, err)
	}
	if sfs.Flags&unix.ST_RDONLY != 0 {
		res.skip(LayerMounts, w, "read-only on the host: stays read-only")
		return c, false, nil
	}
	fd, err := unix.OpenTree(unix.AT_FDCWD, resolved, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
	if err != nil {
		return c, false, fmt.Errorf("clone writable %s (open_tree): %w", resolved, err)
	}
	// What the command writes never runs set-id or opens a device: a setuid-root binary it
	// copies here (root in the user namespace owns host root's files through the idmapped
	// replica) would run as host root otherwise.
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: WritableMountAttrs}); err != nil {
		unix.Close(fd)
		return c, false, fmt.Errorf("mount writable %s nosuid,nodev (mount_setattr): %w", resolved, err)
	}
	return clonedMount{path: resolved, fd: fd, dir: st.Mode&unix.S_IFMT == unix.S_IFDIR}, true, nil
}

// mountPrivateTmp mounts a fresh tmpfs on each of privateTmpDirs that is a directory (step 3)
// and returns those it mounted on; size bounds each (0: the kernel's default, half of RAM).
func mountPrivateTmp(size, files int64, res *Result) ([]string, error) {
	opts := "mode=1777"
	if size > 0 {
		opts += fmt.Sprintf(",size=%d", size)
	}
	if files > 0 {
		opts += fmt.Sprintf(",nr_inodes=%d", files)
	}
	var tmpRoots []string
	for _, d := range privateTmpDirs {
		var st unix.Stat_t
		if err := unix.Lstat(d, &st); err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue
			}
			return nil, fmt.Errorf("lstat %s: %w", d, err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			// A symlink (e.g. /var/tmp -> /tmp) leads into a private tmp already, or
			// somewhere this layer does not own: leave it, say so.
			res.skip(LayerMounts, d, "not a directory (symlink?): no private tmpfs mounted on it")
			continue
		}
		if err := unix.Mount("tmpfs", d, "tmpfs", msFlags(WritableMountAttrs), opts); err != nil {
			return nil, fmt.Errorf("private tmpfs on %s: %w", d, err)
		}
		tmpRoots = append(tmpRoots, d)
	}
	return tmpRoots, nil
}

// attach mounts the stages, the writable clones and the read-only clones on their own paths
// (step 4), parents first: a stage before a writable directory inside it, a read-only host
// path in the private tmp before a writable one inside it, a writable tree before a protected
// path inside it. A mount point inside a private tmpfs (tmpRoots) is made first. It returns
// the writable roots (stages and writable trees) and the mounts that stay read-only (the
// read-only paths, and the host's mounts below a stage).
func (h *hostClones) attach(tmpRoots []string) (writableRoots, readOnlyMounts []string, err error) {
	type attachment struct {
		path string
		rank int // at one path: stage, then writable, then read-only
		do   func() error
	}
	var steps []attachment
	for _, sm := range h.stages {
		steps = append(steps, attachment{sm.path, 0, func() error {
			if err := sm.attach(under(sm.path, tmpRoots)); err != nil {
				return err
			}
			writableRoots = append(writableRoots, sm.path)
			// The host's mounts below a stage stay as read-only as the rest of the host.
			for _, c := range sm.subs {
				readOnlyMounts = append(readOnlyMounts, c.path)
			}
			return nil
		}})
	}
	for _, c := range h.writable {
		steps = append(steps, attachment{c.path, 1, func() error {
			if under(c.path, tmpRoots) {
				if err := makeMountPoint(c.path, c.dir); err != nil {
					return fmt.Errorf("mount point for writable %s in private tmp: %w", c.path, err)
				}
			}
			if err := unix.MoveMount(c.fd, "", unix.AT_FDCWD, c.path, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
				return fmt.Errorf("bind writable %s (move_mount): %w", c.path, err)
			}
			writableRoots = append(writableRoots, c.path)
			return nil
		}})
	}
	for _, c := range h.readOnly {
		steps = append(steps, attachment{c.path, 2, func() error {
			if under(c.path, tmpRoots) {
				if err := makeMountPoint(c.path, c.dir); err != nil {
					return fmt.Errorf("mount point for read-only %s in private tmp: %w", c.path, err)
				}
			}
			if err := unix.MoveMount(c.fd, "", unix.AT_FDCWD, c.path, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
				return fmt.Errorf("keep %s read-only (move_mount): %w", c.path, err)
			}
			readOnlyMounts = append(readOnlyMounts, c.path)
			return nil
		}})
	}
	slices.SortStableFunc(steps, func(a, b attachment) int {
		if c := strings.Compare(a.path, b.path); c != 0 {
			return c
		}
		return a.rank - b.rank
	})
	for _, st := range steps {
		if err := st.do(); err != nil {
			return nil, nil, err
		}
	}
	return writableRoots, readOnlyMounts, nil
}

// cover mounts the covers of the hidden paths and the masked files (step 5), after the writable
// binds so that a secret inside a writable directory is still hidden, and returns the paths it
// mounted on.
func (p *Plan) cover(res *Result) ([]string, error) {
	hiddenMounts, err := mountHidden(p.Hidden, res)
	if err != nil {
		return nil, err
	}
	masked, err := mountMasked(p.Masked, res)
	if err != nil {
		return nil, err
	}
	return append(hiddenMounts, masked...), nil
}

// setMountFlags makes the root read-only when the plan asks for it, but for the writable roots
// and private tmpfs (tmpRoots), keeping readOnly read-only (step 7); then noexec on the
// writable mounts of the plan's NoExec.
func (p *Plan) setMountFlags(writableRoots, tmpRoots, readOnly []string) error {
	if p.ReadOnlyRoot {
		// A new slice: readOnlyExcept sorts it, and must not reorder writableRoots.
		if err := readOnlyExcept(slices.Concat(writableRoots, tmpRoots), readOnly); err != nil {
			return err
		}
	}
	var noExec []string
	for _, x := range p.NoExec {
		if slices.Contains(writableRoots, x) || slices.Contains(tmpRoots, x) {
			noExec = append(noExec, x)
		}
	}
	return setNoExec(noExec)
}

// ProcReadOnly are the /proc entries that stay read-only whatever the profile says: kernel
// tunables (a "|program" written to /proc/sys/kernel/core_pattern runs as host root at the next
// crash; uid 0 needs no capability for it), the magic SysRq key, IRQ affinities, bus devices.
// /sys is read-only as a whole.
var ProcReadOnly = []string{"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus"}

var procMounted bool

// MountProc gives PID 1 of a new PID namespace (and so the whole sandbox) a /proc of its own,
// which shows the namespace's processes only, with ProcReadOnly bound read-only over it and /sys
// made read-only (recursively); the read-only root then covers the rest of /proc too (a learned
// /proc/self write is the enforcer's supervisor's to grant, file by file). It makes every mount
// private first (nothing may propagate to the host). Runs once per process; later calls do
// nothing. Needs CAP_SYS_ADMIN in the user namespace owning the PID namespace (create both in
// one clone).
func MountProc() error {
	if procMounted {
		return nil
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / rprivate: %w", err)
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc for the new PID namespace: %w", err)
	}
	for _, path := range ProcReadOnly {
		if err := bindReadOnly(path); err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue // not in this kernel (e.g. /proc/bus without PCI)
			}
			return fmt.Errorf("keep %s read-only: %w", path, err)
		}
	}
	err := unix.MountSetattr(unix.AT_FDCWD, "/sys", unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY})
	if err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("make /sys read-only (mount_setattr): %w", err)
	}
	procMounted = true
	return nil
}

// bindReadOnly mounts a read-only clone of path over itself.
func bindReadOnly(path string) error {
	fd, err := unix.OpenTree(unix.AT_FDCWD, path, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_SYMLINK_NOFOLLOW)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
		return err
	}
	return unix.MoveMount(fd, "", unix.AT_FDCWD, path, unix.MOVE_MOUNT_F_EMPTY_PATH)
}

// mountHidden covers each existing hidden path with an empty read-only directory or file, and
// returns the paths it mounted on.
//
// A hidden path that does not exist is skipped and stays absent: nothing is created on the host
// to mount on. If its parent is writable the tool can create it, but what it creates is its own
// file, not the credential the path names (Landlock has no deny rule that could forbid the
// creation without forbidding the whole writable directory).
func mountHidden(hidden []string, res *Result) ([]string, error) {
	var (
		mfd     = -1
		mounted []string
		files   int // covers of files made so far: each file gets its own (an inode of its own)
	)
	defer func() {
		if mfd >= 0 {
			unix.Close(mfd)
		}
	}()
	for _, h := range sortedClean(hidden) {
		var st unix.Stat_t
		if err := unix.Stat(h, &st); err != nil {
			if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
				res.skip(LayerMounts, h, "hidden path does not exist: stays absent")
				continue
			}
			if errors.Is(err, unix.EACCES) {
				// Out of this uid's reach (root's 0700 $HOME under sudo): the command, with the
				// same uid and no capabilities, cannot reach it either.
				res.skip(LayerMounts, h, "hidden path not reachable by the sandbox's uid: stays out of reach")
				continue
			}
			return nil, fmt.Errorf("stat hidden %s: %w", h, err)
		}
		if mfd < 0 {
			var err error
			if mfd, err = emptyTmpfs(len(hidden)); err != nil {
				return nil, err
			}
		}
		src := "d"
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			src = "f" + strconv.Itoa(files)
			files++
		}
		fd, err := unix.OpenTree(mfd, src, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
		if err != nil {
			return nil, fmt.Errorf("clone empty %s for hidden %s: %w", src, h, err)
		}
		err = unix.MoveMount(fd, "", unix.AT_FDCWD, h, unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_SYMLINKS)
		unix.Close(fd)
		if err != nil {
			return nil, fmt.Errorf("hide %s (move_mount): %w", h, err)
		}
		resolved, err := filepath.EvalSymlinks(h)
		if err != nil {
			return nil, fmt.Errorf("resolve hidden %s: %w", h, err)
		}
		mounted = append(mounted, resolved)
	}
	return mounted, nil
}

// mountMasked covers each existing masked file with a read-only copy holding its Content
// (mode 0444, in a small detached tmpfs of its own), and returns the paths it mounted on.
func mountMasked(masked []Masked, res *Result) ([]string, error) {
	var mounted []string
	for _, m := range masked {
		var st unix.Stat_t
		if err := unix.Stat(m.Path, &st); err != nil {
			if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
				res.skip(LayerMounts, m.Path, "masked file does not exist: stays absent")
				continue
			}
			return nil, fmt.Errorf("stat masked %s: %w", m.Path, err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG {
			return nil, fmt.Errorf("masked %s is not a regular file", m.Path)
		}
		if err := mountCopy(m.Path, m.Content); err != nil {
			return nil, fmt.Errorf("mask %s: %w", m.Path, err)
		}
		resolved, err := filepath.EvalSymlinks(m.Path)
		if err != nil {
			return nil, fmt.Errorf("resolve masked %s: %w", m.Path, err)
		}
		mounted = append(mounted, resolved)
	}
	return mounted, nil
}

// mountCopy mounts a read-only file holding content over path.
func mountCopy(path string, content []byte) error {
	fsfd, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return fmt.Errorf("fsopen tmpfs: %w", err)
	}
	defer unix.Close(fsfd)
	size := fmt.Sprint(len(content) + 4096)
	for _, kv := range [][2]string{{"mode", "0755"}, {"size", size}, {"nr_inodes", "4"}} {
		if err := unix.FsconfigSetString(fsfd, kv[0], kv[1]); err != nil {
			return fmt.Errorf("fsconfig tmpfs %s=%s: %w", kv[0], kv[1], err)
		}
	}
	if err := unix.FsconfigCreate(fsfd); err != nil {
		return fmt.Errorf("fsconfig tmpfs create: %w", err)
	}
	mfd, err := unix.Fsmount(fsfd, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return fmt.Errorf("fsmount tmpfs: %w", err)
	}
	defer unix.Close(mfd)
	f, err := unix.Openat(mfd, "f", unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o444)
	if err != nil {
		return fmt.Errorf("create copy: %w", err)
	}
	for b := content; len(b) > 0; {
		n, err := unix.Write(f, b)
		if err != nil {
			unix.Close(f)
			return fmt.Errorf("write copy: %w", err)
		}
		b = b[n:]
	}
	unix.Close(f)
	if err := setReadOnly(mfd); err != nil {
		return fmt.Errorf("make copy read-only: %w", err)
	}
	fd, err := unix.OpenTree(mfd, "f", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		return fmt.Errorf("clone copy: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.MoveMount(fd, "", unix.AT_FDCWD, path, unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_SYMLINKS); err != nil {
		return fmt.Errorf("move_mount: %w", err)
	}
	return nil
}

// emptyTmpfs makes a small detached, read-only tmpfs (its root owned by the caller with mode
// 0755, so that an unprivileged init stage without CAP_DAC_OVERRIDE can fill it) holding an
// empty directory "d" (mode 0555) and the empty files "f0" … "f<files-1>" (mode 0444), and
// returns its mount fd. It is never attached itself; clones of d and of one f each are mounted
// over hidden paths. A hidden file's cover is an inode of its own, so that an open of it names
// the file it hides (the root run's guard watches each cover: a read of a hidden secret is on
// the record).
func emptyTmpfs(files int) (int, error) {
	fsfd, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("fsopen tmpfs: %w", err)
	}
	defer unix.Close(fsfd)
	for _, kv := range [][2]string{{"mode", "0755"}, {"size", "4k"}, {"nr_inodes", strconv.Itoa(files + 8)}} {
		if err := unix.FsconfigSetString(fsfd, kv[0], kv[1]); err != nil {
			return -1, fmt.Errorf("fsconfig tmpfs %s=%s: %w", kv[0], kv[1], err)
		}
	}
	if err := unix.FsconfigCreate(fsfd); err != nil {
		return -1, fmt.Errorf("fsconfig tmpfs create: %w", err)
	}
	mfd, err := unix.Fsmount(fsfd, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return -1, fmt.Errorf("fsmount tmpfs: %w", err)
	}
	if err := unix.Mkdirat(mfd, "d", 0o555); err != nil {
		unix.Close(mfd)
		return -1, fmt.Errorf("mkdir in empty tmpfs: %w", err)
	}
	for i := range files {
		f, err := unix.Openat(mfd, "f"+strconv.Itoa(i), unix.O_CREAT|unix.O_EXCL|unix.O_RDONLY|unix.O_CLOEXEC, 0o444)
		if err != nil {
			unix.Close(mfd)
			return -1, fmt.Errorf("create in empty tmpfs: %w", err)
		}
		unix.Close(f)
	}
	if err := setReadOnly(mfd); err != nil {
		unix.Close(mfd)
		return -1, fmt.Errorf("make empty tmpfs read-only: %w", err)
	}
	return mfd, nil
}

// readOnlyExcept makes every mount read-only except the writable roots (and what is below them),
// keeping hidden mounts and mounts that were read-only before read-only.
func readOnlyExcept(writable, hidden []string) error {
	before, err := mountinfo.Read()
	if err != nil {
		return err
	}
	if err := unix.MountSetattr(unix.AT_FDCWD, "/", unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
		return fmt.Errorf("make / read-only (mount_setattr): %w", err)
	}
	slices.Sort(writable)
	for _, w := range writable {
		err := unix.MountSetattr(unix.AT_FDCWD, w, unix.AT_RECURSIVE, &unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_RDONLY})
		if errors.Is(err, unix.EPERM) {
			// A mount below w is locked read-only (inherited from a more privileged namespace):
			// the recursive change is refused as a whole. Clear w itself; the locked mount
			// stays read-only, as it is on the host.
			err = unix.MountSetattr(unix.AT_FDCWD, w, 0, &unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_RDONLY})
		}
		if err != nil {
			return fmt.Errorf("keep %s writable (mount_setattr): %w", w, err)
		}
	}
	// Put read-only back where the recursive clear went too far.
	again := slices.Clone(hidden)
	for _, m := range before {
		if m.ReadOnly && under(m.MountPoint, writable) && !slices.Contains(writable, m.MountPoint) {
			again = append(again, m.MountPoint)
		}
	}
	for _, h := range again {
		err := unix.MountSetattr(unix.AT_FDCWD, h, 0, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY})
		if err != nil && !slices.Contains(hidden, h) && (errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT)) {
			continue // covered by a later mount (e.g. the private tmpfs): not reachable
		}
		if err != nil {
			return fmt.Errorf("keep %s read-only (mount_setattr): %w", h, err)
		}
	}
	return nil
}

// checkNewMountNS refuses to touch the mounts of the parent's mount namespace: a missing
// CLONE_NEWNS in the enforcer must not make the host's / read-only. The reference is the parent
// process (sysprof itself), else PID 1. When neither can be looked at (an unprivileged init stage
// may not inspect processes outside its user namespace; here even root may not read PID 1's),
// the host's mounts are out of reach for this process anyway, or the check cannot be made; it is
// a guard against a programming error, not a security boundary.
func checkNewMountNS() error {
	var self unix.Stat_t
	if err := unix.Stat("/proc/self/ns/mnt", &self); err != nil {
		return fmt.Errorf("stat /proc/self/ns/mnt: %w", err)
	}
	var refs []string
	if ppid := os.Getppid(); ppid > 0 {
		refs = append(refs, fmt.Sprintf("/proc/%d/ns/mnt", ppid))
	}
	if os.Getpid() != 1 {
		refs = append(refs, "/proc/1/ns/mnt")
	}
	for _, ref := range refs {
		var st unix.Stat_t
		if err := unix.Stat(ref, &st); err != nil {
			continue
		}
		if self.Ino == st.Ino && self.Dev == st.Dev {
			return fmt.Errorf("BUG: in the same mount namespace as %s (start the init stage with CLONE_NEWNS)", strings.TrimSuffix(ref, "/ns/mnt"))
		}
	}
	return nil
}

func makeMountPoint(path string, dir bool) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if dir {
		if err := os.Mkdir(path, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
		return nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	return f.Close()
}

// under reports whether p is one of roots or below one of them.
func under(p string, roots []string) bool {
	for _, r := range roots {
		if p == r || r == "/" || strings.HasPrefix(p, r+"/") {
			return true
		}
	}
	return false
}

func sortedClean(paths []string) []string {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		out = append(out, filepath.Clean(p))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// topLevel drops paths below another path of the list (their tree is cloned with it).
func topLevel(paths []string) []string {
	var out []string
	for _, p := range sortedClean(paths) {
		if !under(p, out) {
			out = append(out, p)
		}
	}
	return out
}

// setReadOnly makes the detached mount mfd read-only. mount_setattr answers EBUSY while a file
// opened for writing on it is still held (the one just written and closed can be, for a moment:
// seen once in ~25 runs of the enforcer package, cause not found); it is retried for up to ~20 ms.
func setReadOnly(mfd int) error {
	var err error
	for range 200 {
		err = unix.MountSetattr(mfd, "", unix.AT_EMPTY_PATH, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY})
		if !errors.Is(err, unix.EBUSY) {
			return err
		}
		_ = unix.Nanosleep(&unix.Timespec{Nsec: 100_000}, nil)
	}
	return err
}

// msFlags is the mount(2) form of mount attributes (nosuid, nodev, noexec).
func msFlags(attr uint64) uintptr {
	var f uintptr
	for _, m := range []struct {
		attr uint64
		ms   uintptr
	}{{unix.MOUNT_ATTR_NOSUID, unix.MS_NOSUID}, {unix.MOUNT_ATTR_NODEV, unix.MS_NODEV}, {unix.MOUNT_ATTR_NOEXEC, unix.MS_NOEXEC}} {
		if attr&m.attr != 0 {
			f |= m.ms
		}
	}
	return f
}

// ReadOnlyMounts are the read-only paths of ro that need a mount of their own: one below
// another is cloned with it, unless a writable path lies between them (a work tree in /tmp
// bound read-only into the private tmp, its .git bound writable, .git/config covered read-only
// again: without its own mount the cover would be writable).
func ReadOnlyMounts(ro, writable []string) []string {
	var out []string
	for _, p := range sortedClean(ro) {
		if !slices.ContainsFunc(out, func(q string) bool {
			return under(p, []string{q}) && !slices.ContainsFunc(writable, func(w string) bool {
				w = filepath.Clean(w)
				return w != q && under(w, []string{q}) && under(p, []string{w})
			})
		}) {
			out = append(out, p)
		}
	}
	return out
}
