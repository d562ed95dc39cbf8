package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/fscopy"
)

// boundStage is a stage whose upper layer is a bounded tmpfs (Stage.Size), and the host
// directories its writes are copied into when the command ends.
type boundStage struct {
	path  string
	tmpfs int // the tmpfs's root (a detached mount: no path in any tree)
	disk  int // Stage.Upper
	top   int // Stage.Upper's parent: where LimitFile is written
	lock  int // top, flocked while this process lives
	size  int64
	files int64
}

// boundStages are this process's bounded stages, in the order they were made.
var boundStages []boundStage

// LimitFile is written next to a bounded stage's upper layer when its writes filled the tmpfs:
// a JSON LimitHit.
const LimitFile = "limit.json"

// LimitHit says which bound of a stage was reached and what the stage held.
type LimitHit struct {
	Path       string `json:"path"`
	Size       int64  `json:"size"`
	Files      int64  `json:"files"`
	Used       int64  `json:"used"`
	UsedFiles  int64  `json:"usedFiles"`
	BytesFull  bool   `json:"bytesFull,omitempty"`
	FilesFull  bool   `json:"filesFull,omitempty"`
	CopyFailed string `json:"copyFailed,omitempty"`
}

// tmpfsOverhead: inodes of the tmpfs that are not the command's (its root, upper and work
// directories, overlay's work/index entries).
const tmpfsOverhead = 8

// boundUpper makes the overlay being configured on ovl take its upper and work directories
// from a new tmpfs of s.Size bytes and s.Files inodes, so that what the command writes beyond
// answers ENOSPC, and opens s.Upper (on the host, hidden from the command later) to copy the
// writes into at the end. Requires Linux 6.13 (overlay layers given by fd) and 6.6 (user.*
// xattrs on tmpfs, which userxattr needs).
func boundUpper(ovl int, s Stage) error {
	fs, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return fmt.Errorf("fsopen tmpfs: %w", err)
	}
	defer unix.Close(fs)
	for _, kv := range [][2]string{{"size", strconv.FormatInt(s.Size, 10)}, {"nr_inodes", strconv.FormatInt(s.Files+tmpfsOverhead, 10)}, {"mode", "0755"}} {
		if err := unix.FsconfigSetString(fs, kv[0], kv[1]); err != nil {
			return fmt.Errorf("tmpfs %s=%s: %w", kv[0], kv[1], err)
		}
	}
	if err := unix.FsconfigCreate(fs); err != nil {
		return fmt.Errorf("create tmpfs: %w", err)
	}
	mfd, err := unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("fsmount tmpfs: %w", err)
	}
	b := boundStage{path: s.Path, tmpfs: mfd, disk: -1, top: -1, lock: -1, size: s.Size, files: s.Files}
	fail := func(err error) error {
		for _, fd := range []int{b.tmpfs, b.disk, b.top, b.lock} {
			if fd >= 0 {
				unix.Close(fd)
			}
		}
		return err
	}
	for _, name := range []string{"upper", "work"} {
		if err := unix.Mkdirat(mfd, name, 0o755); err != nil {
			return fail(fmt.Errorf("mkdir %s in tmpfs: %w", name, err))
		}
		fd, err := unix.Openat(mfd, name, unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		if err != nil {
			return fail(err)
		}
		err = unix.FsconfigSetFd(ovl, name+"dir", fd)
		unix.Close(fd)
		if err != nil {
			return fail(fmt.Errorf("overlay %sdir (a tmpfs, by fd: Linux 6.13): %w", name, err))
		}
	}
	// The host layers through a detached clone of their mount: the read-only root made later
	// does not reach it, and the command has no path to it.
	top := filepath.Dir(s.Upper)
	if b.top, err = unix.OpenTree(unix.AT_FDCWD, top, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fail(fmt.Errorf("clone %s (open_tree): %w", top, err))
	}
	if err := unix.MountSetattr(b.top, "", unix.AT_EMPTY_PATH, &unix.MountAttr{Attr_set: WritableMountAttrs | unix.MOUNT_ATTR_NOEXEC}); err != nil {
		return fail(fmt.Errorf("clone of %s nosuid,nodev,noexec: %w", top, err))
	}
	if b.disk, err = unix.Openat(b.top, filepath.Base(s.Upper), unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0); err != nil {
		return fail(fmt.Errorf("open upper %s: %w", s.Upper, err))
	}
	// Held until this process ends: `sysprof changes` takes the stage as busy while it may
	// still copy (changeset.Run's lock is sysprof's, gone first when sysprof is killed).
	b.lock, err = unix.Openat(b.top, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err == nil {
		err = unix.Flock(b.lock, unix.LOCK_EX|unix.LOCK_NB)
	}
	if err != nil {
		return fail(fmt.Errorf("lock %s: %w", top, err))
	}
	boundStages = append(boundStages, b)
	return nil
}

// HasBoundStages reports whether a stage of this process has a bounded upper layer, whose
// writes FlushBoundStages must copy out before the process ends.
func HasBoundStages() bool { return len(boundStages) > 0 }

// FlushBoundStages copies what each bounded stage's tmpfs holds into the stage's upper layer
// on the host (whiteouts, overlay's xattrs, modes, owners, times and hard links kept), and
// writes LimitFile next to it when a bound was reached. Call it once nothing writes there
// any more, on a thread that keeps the user namespace's capabilities and no Landlock domain
// (not the one that ran the command's exec). It goes on after an error, returning the first.
func FlushBoundStages() error {
	var first error
	for _, b := range boundStages {
		err := b.flush()
		if err != nil && first == nil {
			first = fmt.Errorf("stage %s: copy its writes out: %w", b.path, err)
		}
	}
	return first
}

func (b boundStage) flush() error {
	src, err := unix.Openat(b.tmpfs, "upper", unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer unix.Close(src)
	c := copier{root: b.disk, links: map[uint64]string{}}
	cerr := c.dir(src, b.disk, "")
	var st unix.Statfs_t
	if err := unix.Fstatfs(b.tmpfs, &st); err != nil {
		return errors.Join(cerr, err)
	}
	hit := LimitHit{Path: b.path, Size: b.size, Files: b.files,
		Used:      int64(st.Blocks-st.Bfree) * st.Bsize,
		UsedFiles: min(max(int64(st.Files-st.Ffree)-3, 0), b.files), // root, upper and work are not the command's
		BytesFull: st.Bavail == 0, FilesFull: st.Ffree == 0}
	if cerr != nil {
		hit.CopyFailed = cerr.Error()
	}
	if hit.BytesFull || hit.FilesFull || cerr != nil {
		bs, _ := json.Marshal(hit)
		fd, err := unix.Openat(b.top, LimitFile, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o644)
		if err != nil {
			return errors.Join(cerr, err)
		}
		_, err = unix.Write(fd, bs)
		unix.Close(fd)
		if err != nil {
			return errors.Join(cerr, err)
		}
	}
	return cerr
}

// copier copies an overlay upper layer, entry by entry, through directory fds (no path is
// resolved again: nothing in the tree can redirect a write).
type copier struct {
	root  int               // the destination's root
	links map[uint64]string // source inode -> destination path (relative to root) of a hard-linked file
	err   error
}

func (c *copier) note(err error) {
	if err != nil && c.err == nil {
		c.err = err
	}
}

// dir copies the entries of directory src into dst (rel: dst's path below the root).
func (c *copier) dir(src, dst int, rel string) error {
	f := os.NewFile(uintptr(mustDup(src)), rel)
	if f == nil {
		return fmt.Errorf("dup %s: bad fd", rel)
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return fmt.Errorf("read %s: %w", rel, err)
	}
	for _, name := range names {
		c.note(c.entry(src, dst, name, filepath.Join(rel, name)))
	}
	return c.err
}

func mustDup(fd int) int {
	d, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	return d
}

func (c *copier) entry(src, dst int, name, rel string) error {
	var st unix.Stat_t
	if err := unix.Fstatat(src, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fmt.Errorf("stat %s: %w", rel, err)
	}
	mode := st.Mode & 0o7777
	times := []unix.Timespec{st.Atim, st.Mtim}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		if err := unix.Mkdirat(dst, name, 0o700); err != nil {
			return fmt.Errorf("mkdir %s: %w", rel, err)
		}
		s, err := unix.Openat(src, name, unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		if err != nil {
			return err
		}
		defer unix.Close(s)
		d, err := unix.Openat(dst, name, unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		if err != nil {
			return err
		}
		defer unix.Close(d)
		copyXattrs(s, d)
		c.note(c.dir(s, d, rel))
		_ = unix.Fchown(d, int(st.Uid), int(st.Gid))
		if err := unix.Fchmod(d, mode); err != nil {
			return err
		}
		return unix.UtimesNanoAt(d, "", times, unix.AT_EMPTY_PATH)
	case unix.S_IFREG:
		if st.Nlink > 1 {
			if first, ok := c.links[st.Ino]; ok {
				if err := unix.Linkat(c.root, first, dst, name, 0); err != nil {
					return fmt.Errorf("link %s: %w", rel, err)
				}
				return nil
			}
			c.links[st.Ino] = rel
		}
		s, err := unix.Openat(src, name, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		if err != nil {
			return err
		}
		defer unix.Close(s)
		d, err := unix.Openat(dst, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o600)
		if err != nil {
			return fmt.Errorf("create %s: %w", rel, err)
		}
		defer unix.Close(d)
		// Holes stay holes: a sparse file takes no room in the bounded tmpfs and must take none
		// on the disk layer either.
		if err := fscopy.Data(d, s); err != nil {
			return fmt.Errorf("copy %s: %w", rel, err)
		}
		copyXattrs(s, d)
		_ = unix.Fchown(d, int(st.Uid), int(st.Gid))
		if err := unix.Fchmod(d, mode); err != nil {
			return err
		}
		return unix.UtimesNanoAt(d, "", times, unix.AT_EMPTY_PATH)
	case unix.S_IFLNK:
		target, err := readlinkat(src, name)
		if err != nil {
			return fmt.Errorf("readlink %s: %w", rel, err)
		}
		if err := unix.Symlinkat(target, dst, name); err != nil {
			return fmt.Errorf("symlink %s: %w", rel, err)
		}
	case unix.S_IFCHR, unix.S_IFIFO, unix.S_IFSOCK:
		// A character device in an upper layer is overlay's whiteout (0/0): the only one a
		// mount namespace of a user namespace can make. Others are left out.
		if st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev != 0 {
			return nil
		}
		if err := unix.Mknodat(dst, name, st.Mode&unix.S_IFMT|mode, int(st.Rdev)); err != nil {
			return fmt.Errorf("mknod %s: %w", rel, err)
		}
	default:
		return nil
	}
	_ = unix.Fchownat(dst, name, int(st.Uid), int(st.Gid), unix.AT_SYMLINK_NOFOLLOW)
	return unix.UtimesNanoAt(dst, name, times, unix.AT_SYMLINK_NOFOLLOW)
}

func readlinkat(dir int, name string) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlinkat(dir, name, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// copyXattrs copies the extended attributes of src to dst: overlay's own (user.overlay.opaque,
// redirects) above all. One that cannot be set here is left out.
func copyXattrs(src, dst int) {
	buf := make([]byte, 64<<10)
	n, err := unix.Flistxattr(src, buf)
	if err != nil || n <= 0 {
		return
	}
	val := make([]byte, 64<<10)
	for _, name := range splitNul(buf[:n]) {
		m, err := unix.Fgetxattr(src, name, val)
		if err != nil {
			continue
		}
		_ = unix.Fsetxattr(dst, name, val[:m], 0)
	}
}

func splitNul(b []byte) []string {
	var out []string
	start := 0
	for i, c := range b {
		if c == 0 {
			if i > start {
				out = append(out, string(b[start:i]))
			}
			start = i + 1
		}
	}
	return out
}
