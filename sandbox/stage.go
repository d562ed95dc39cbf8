package sandbox

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/mountinfo"
)

// Stage is a directory the command sees writable but whose writes land in Upper, an overlay's
// upper layer on the host: the run's changeset (package changeset), which the enforcer
// classifies once the command is gone, applying what the profile names and holding the rest
// for review. It is how a file rule, or a directory that does not exist yet, is granted without
// making its parent writable: Landlock and bind mounts can only name what exists, and a tool
// replaces files (rename over, unlink and create).
type Stage struct {
	Path  string `json:"path"`  // the directory staged (host path, no symlinks)
	Upper string `json:"upper"` // the overlay's upper and work directories (on one filesystem)
	Work  string `json:"work"`
	// Size and Files bound what the stage's writes may hold (bytes, inodes; 0: unbounded):
	// the overlay's upper layer is then a tmpfs of that size, copied into Upper when the
	// command ends (FlushBoundStages), and a write beyond it answers ENOSPC.
	Size  int64 `json:"size,omitempty"`
	Files int64 `json:"files,omitempty"`
	// Shared: the layers hold an earlier step's writes (a gated run's changeset), which a
	// tmpfs upper would hide: never bounded.
	Shared bool `json:"shared,omitempty"`
}

// stageMount is a detached overlay for one stage, and clones of the host's mounts below its
// path (an overlay shows one filesystem: without them a mount below the work tree would show
// the directory it covers).
type stageMount struct {
	path string
	fd   int
	subs []clonedMount
}

type clonedMount struct {
	path string
	fd   int
	dir  bool
}

// openStage builds the overlay for s while the host's view of s.Path is still uncovered.
// userxattr keeps overlay's own metadata in user.* attributes, which an overlay mounted in a
// user namespace needs (trusted.* is for the initial namespace's root only).
// Mounts at or below a path of skip (writable trees, cloned on their own) are left out.
func openStage(s Stage, mounts []mountinfo.Entry, skip []string, res *Result) (*stageMount, error) {
	if s.Upper == "" || s.Work == "" {
		return nil, fmt.Errorf("BUG: stage %s has no upper/work directory", s.Path)
	}
	if r, err := filepath.EvalSymlinks(s.Path); err != nil {
		return nil, fmt.Errorf("stage %s: %w", s.Path, err)
	} else if r != s.Path {
		// The enforcer passes resolved paths; one that resolves elsewhere now was swapped.
		return nil, fmt.Errorf("stage %s now resolves to %s (a symlink put in its place?): refusing", s.Path, r)
	}
	fsfd, err := unix.Fsopen("overlay", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("stage %s: fsopen overlay: %w", s.Path, err)
	}
	defer unix.Close(fsfd)
	layers := [][2]string{{"lowerdir", s.Path}, {"upperdir", s.Upper}, {"workdir", s.Work}}
	if s.Size > 0 {
		if err := boundUpper(fsfd, s); err != nil {
			// An older kernel (overlay layers by fd: 6.13; user xattrs on tmpfs: 6.6): the
			// writes go to the host's layers unbounded, and the report says so.
			res.skip(LayerLimits, s.Path, "writes not bounded (limits.writeMiB, writeFiles): "+err.Error())
		} else {
			layers = layers[:1]
		}
	}
	var layerFDs []int
	defer func() {
		for _, fd := range layerFDs {
			unix.Close(fd)
		}
	}()
	for _, kv := range layers {
		if strings.ContainsAny(kv[1], ",:\\") {
			return nil, fmt.Errorf("stage %s: %s %q holds a character overlayfs options cannot carry", s.Path, kv[0], kv[1])
		}
		if err := setLayer(fsfd, kv[0], kv[1], &layerFDs); err != nil {
			return nil, fmt.Errorf("stage %s: overlay %s=%s: %w", s.Path, kv[0], kv[1], err)
		}
	}
	// volatile: no sync of the upper file system when the overlay goes away with the
	// namespace (~10 ms of waiting on ext4's journal per run). The layers outlive the run
	// (the changeset), but only a crash of the host, not of sysprof, can lose unsynced data;
	// a gated run's next step that reuses them empties the work directory first.
	for _, flag := range []string{"userxattr", "volatile"} {
		if err := unix.FsconfigSetFlag(fsfd, flag); err != nil {
			return nil, fmt.Errorf("stage %s: overlay %s: %w", s.Path, flag, err)
		}
	}
	if err := unix.FsconfigCreate(fsfd); err != nil {
		return nil, fmt.Errorf("stage %s: create overlay (upper %s): %w", s.Path, s.Upper, err)
	}
	mfd, err := unix.Fsmount(fsfd, unix.FSMOUNT_CLOEXEC, int(WritableMountAttrs))
	if err != nil {
		return nil, fmt.Errorf("stage %s: fsmount overlay: %w", s.Path, err)
	}
	sm := &stageMount{path: s.Path, fd: mfd}
	var subs []string
	for _, m := range mounts {
		if m.MountPoint != s.Path && under(m.MountPoint, []string{s.Path}) && !under(m.MountPoint, skip) {
			subs = append(subs, m.MountPoint)
		}
	}
	for _, p := range topLevel(subs) {
		fd, err := unix.OpenTree(unix.AT_FDCWD, p, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
		if err != nil {
			sm.close()
			return nil, fmt.Errorf("stage %s: clone the mount at %s: %w", s.Path, p, err)
		}
		sm.subs = append(sm.subs, clonedMount{p, fd, true})
	}
	return sm, nil
}

// setLayer gives the overlay being configured on fsfd one layer. fsconfig takes strings of at
// most 255 bytes: a longer path (a checkout deep in a CI runner's builds directory) goes by an
// O_PATH fd, as FSCONFIG_SET_FD (lowerdir+, upperdir, workdir: Linux 6.13) or, before that,
// as /proc/self/fd/N, looked up like the path. The fd is added to keep, to be closed once the
// overlay is created.
func setLayer(fsfd int, key, path string, keep *[]int) error {
	if len(path) < 256 {
		return unix.FsconfigSetString(fsfd, key, path)
	}
	fd, err := unix.Open(path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	*keep = append(*keep, fd)
	byFD := key
	if key == "lowerdir" {
		byFD = "lowerdir+"
	}
	if unix.FsconfigSetFd(fsfd, byFD, fd) == nil {
		return nil
	}
	return unix.FsconfigSetString(fsfd, key, "/proc/self/fd/"+strconv.Itoa(fd))
}

// attach mounts the overlay on its path, then the host's mounts below it.
func (sm *stageMount) attach(inTmp bool) error {
	if inTmp {
		if err := makeMountPoint(sm.path, true); err != nil {
			return fmt.Errorf("mount point for stage %s in private tmp: %w", sm.path, err)
		}
	}
	if err := unix.MoveMount(sm.fd, "", unix.AT_FDCWD, sm.path, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("attach stage %s (move_mount): %w", sm.path, err)
	}
	for _, c := range sm.subs {
		if err := unix.MoveMount(c.fd, "", unix.AT_FDCWD, c.path, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return fmt.Errorf("stage %s: re-attach the mount at %s: %w", sm.path, c.path, err)
		}
	}
	return nil
}

func (sm *stageMount) close() {
	unix.Close(sm.fd)
	for _, c := range sm.subs {
		unix.Close(c.fd)
	}
}

// setNoExec marks each mount root in paths noexec (that mount only: a mount below it keeps its
// own flag, e.g. a learned-exec output directory inside a noexec stage). Without exec on the
// mount, mmap(PROT_EXEC) of a file there fails too: `ld.so ./evil` and LD_PRELOAD of a file the
// command wrote are refused, which Landlock (exec checks execve only) cannot do.
func setNoExec(paths []string) error {
	for _, p := range sortedClean(paths) {
		if err := unix.MountSetattr(unix.AT_FDCWD, p, 0, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOEXEC}); err != nil {
			return fmt.Errorf("mount %s noexec (mount_setattr): %w", p, err)
		}
	}
	return nil
}

// applyNoExecTrees mounts each tree in trees noexec at its root (a recursive clone of itself:
// the writable binds, covers and stages below keep their own flags) and then each path of keep
// inside one, or inside a mount of noExecMounts (a noexec stage), exec-mappable again (a clone
// of itself with noexec cleared). A tree or kept path that does not exist is skipped and said.
// Requires Linux 5.12 (mount_setattr).
func applyNoExecTrees(trees, keep, noExecMounts []string, res *Result) error {
	done := slices.Clone(noExecMounts)
	for _, t := range sortedClean(trees) {
		if under(t, done) {
			continue
		}
		ok, err := remount(t, unix.MOUNT_ATTR_NOEXEC, 0, res)
		if err != nil {
			return fmt.Errorf("mount %s noexec: %w", t, err)
		}
		if ok {
			done = append(done, t)
		}
	}
	var kept []string
	for _, k := range sortedClean(keep) {
		if !under(k, done) || under(k, kept) {
			continue
		}
		ok, err := remount(k, 0, unix.MOUNT_ATTR_NOEXEC, res)
		if err != nil {
			return fmt.Errorf("keep %s exec-mappable: %w", k, err)
		}
		if ok {
			kept = append(kept, k)
		}
	}
	return nil
}

// remount covers p with a recursive clone of itself whose root mount has the attributes set
// and clr (the mounts below keep theirs). ok is false when p does not exist.
func remount(p string, set, clr uint64, res *Result) (ok bool, err error) {
	fd, err := unix.OpenTree(unix.AT_FDCWD, p, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_SYMLINK_NOFOLLOW)
	if err == unix.ENOENT {
		res.skip(LayerMounts, p, "does not exist: no exec mount made")
		return false, nil
	}
	if err == unix.EACCES {
		// Not reachable by this stage's user (a 0700 home of another user under sudo), so not
		// by the command either, which runs as the same user.
		res.skip(LayerMounts, p, "not reachable by the command's user: no exec mount made")
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("clone (open_tree): %w", err)
	}
	defer unix.Close(fd)
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, &unix.MountAttr{Attr_set: set, Attr_clr: clr}); err != nil {
		return false, fmt.Errorf("mount_setattr: %w", err)
	}
	if err := unix.MoveMount(fd, "", unix.AT_FDCWD, p, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return false, fmt.Errorf("move_mount: %w", err)
	}
	return true, nil
}

// cloneReadOnly clones each existing path in paths (a protected path inside a writable tree)
// for mounting read-only over itself once the writable trees are attached.
func cloneReadOnly(paths, writable []string, res *Result) ([]clonedMount, error) {
	var out []clonedMount
	for _, p := range ReadOnlyMounts(paths, writable) {
		fd, err := unix.OpenTree(unix.AT_FDCWD, p, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_SYMLINK_NOFOLLOW)
		if err != nil {
			if err == unix.ENOENT {
				res.skip(LayerMounts, p, "read-only path does not exist")
				continue
			}
			for _, c := range out {
				unix.Close(c.fd)
			}
			return nil, fmt.Errorf("clone read-only %s: %w", p, err)
		}
		if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("make %s read-only: %w", p, err)
		}
		var st unix.Stat_t
		isDir := unix.Lstat(p, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR
		out = append(out, clonedMount{p, fd, isDir})
	}
	return out, nil
}
