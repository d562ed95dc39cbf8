package changeset

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// beneath is how every name below a layer or a staged directory is opened: never through a
// symlink, never out of the directory fd it is relative to.
const beneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// openBeneath opens name (one or more components) below dirfd with openat2 and beneath.
func openBeneath(dirfd int, name string, flags int) (int, error) {
	for {
		fd, err := unix.Openat2(dirfd, name, &unix.OpenHow{Flags: uint64(flags | unix.O_CLOEXEC | unix.O_NOFOLLOW), Resolve: beneath})
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		return fd, err
	}
}

// openRoot opens a layer or staged directory named by the manifest, following no symlink.
func openRoot(dir string, flags int) (int, error) {
	fd, err := unix.Openat2(unix.AT_FDCWD, dir, &unix.OpenHow{Flags: uint64(flags | unix.O_DIRECTORY | unix.O_CLOEXEC | unix.O_NOFOLLOW), Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
	if err != nil {
		return -1, fmt.Errorf("open %s: %w", dir, err)
	}
	return fd, nil
}

// Scan reads every stage's upper layer and returns its changes, classified, ordered by stage and
// path (a directory before what it holds). It reads the layers as hostile input: by directory
// fds, never following a link.
func (r *Run) Scan() ([]Change, error) {
	var out []Change
	for i, s := range r.Stages {
		cs, err := scanStage(i, s)
		if err != nil {
			return nil, fmt.Errorf("run %s: stage %s: %w", r.ID, s.Rules.Dir, err)
		}
		for j, c := range cs {
			cs[j] = Classify(c, s.Rules)
		}
		out = append(out, LearnParents(cs)...)
	}
	return out, nil
}

type scanner struct {
	stage int
	dir   string // the staged host directory
	out   []Change
	links map[[2]uint64][]int // upper inode -> indexes into out of its names
}

func scanStage(i int, s Stage) ([]Change, error) {
	ufd, err := openRoot(s.Upper, unix.O_RDONLY)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil, nil // applied and removed whole
		}
		return nil, err
	}
	defer unix.Close(ufd)
	hfd, err := openRoot(s.Rules.Dir, unix.O_PATH)
	if err != nil && !errors.Is(err, unix.ENOENT) {
		return nil, err
	}
	if hfd >= 0 {
		defer unix.Close(hfd)
	}
	sc := &scanner{stage: i, dir: filepath.Clean(s.Rules.Dir), links: map[[2]uint64][]int{}}
	if err := sc.walk(ufd, hfd, "", false); err != nil {
		return nil, err
	}
	sc.linkNames()
	return sc.out, nil
}

// walk reads upper directory ufd (rel below the stage) against host directory hfd (-1: the
// host has none). replace: the upper directory replaced the host's (opaque, or below one), so
// what the host holds beyond it is deleted.
func (sc *scanner) walk(ufd, hfd int, rel string, replace bool) error {
	names, err := readNames(ufd)
	if err != nil {
		return fmt.Errorf("read %s: %w", sc.host(rel), err)
	}
	if replace && hfd >= 0 {
		if err := sc.deleted(ufd, hfd, rel, names); err != nil {
			return err
		}
	}
	for _, name := range names {
		r := filepath.Join(rel, name)
		var st unix.Stat_t
		if err := unix.Fstatat(ufd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if errors.Is(err, unix.ENOENT) {
				continue
			}
			return fmt.Errorf("stat %s in the changeset: %w", sc.host(r), err)
		}
		var hst unix.Stat_t
		hok := hfd >= 0 && unix.Fstatat(hfd, name, &hst, unix.AT_SYMLINK_NOFOLLOW) == nil
		c := Change{Path: sc.host(r), Rel: r, Stage: sc.stage, Type: TypeOf(st.Mode), Mode: st.Mode & 0o7777,
			dev: st.Dev, ino: st.Ino, HostExists: hok, HostParent: hfd >= 0}
		if hok {
			c.HostMode = hst.Mode & 0o7777
		}
		switch {
		case isWhiteout(&st):
			if !hok {
				continue // nothing left to delete on the host
			}
			c.Type, c.Mode, c.Op = TypeOf(hst.Mode), hst.Mode&0o7777, OpDelete
			if c.Type == TypeDir {
				c.Op = OpRmdir
			}
			sc.out = append(sc.out, c)
		case st.Mode&unix.S_IFMT == unix.S_IFDIR:
			opaque := replace || isOpaque(ufd, name)
			hostDir := hok && hst.Mode&unix.S_IFMT == unix.S_IFDIR
			switch {
			case !hostDir:
				c.Op = OpMkdir
				sc.out = append(sc.out, c)
			case opaque:
				c.Op, c.opaque = OpMkdir, true
				sc.out = append(sc.out, c)
			case c.Mode != c.HostMode:
				c.Op = OpMode
				sc.out = append(sc.out, c)
			}
			cfd, err := openBeneath(ufd, name, unix.O_RDONLY|unix.O_DIRECTORY)
			if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
				// The command made it unreadable (chmod 000): it stays held, whole, and the rest
				// of the changeset is still read.
				if n := len(sc.out); n > 0 && sc.out[n-1].Rel == r {
					sc.out[n-1].Unreadable = err.Error()
				} else {
					c.Op, c.Unreadable = OpMode, err.Error()
					sc.out = append(sc.out, c)
				}
				continue
			}
			if err != nil {
				return fmt.Errorf("open %s in the changeset: %w", c.Path, err)
			}
			chfd := -1
			if hostDir {
				chfd, _ = openBeneath(hfd, name, unix.O_PATH|unix.O_DIRECTORY)
			}
			err = sc.walk(cfd, chfd, r, opaque)
			unix.Close(cfd)
			if chfd >= 0 {
				unix.Close(chfd)
			}
			if err != nil {
				return err
			}
		case st.Mode&unix.S_IFMT == unix.S_IFREG:
			c.Size = st.Size
			c.Caps = hasXattr(ufd, name, "security.capability")
			c.Op = OpCreate
			if hok {
				c.Op = OpModify
				if hst.Mode&unix.S_IFMT == unix.S_IFREG && c.Mode != c.HostMode &&
					(isMetacopy(ufd, name) || hst.Size == st.Size && sameContent(ufd, hfd, name)) {
					c.Op = OpMode
				}
			}
			if c.Op != OpMode && IsGitConfig(c.Path) {
				c.GitConfig = gitConfigChange(ufd, hfd, name, c.Path, hok)
			}
			sc.out = append(sc.out, c)
			if st.Nlink > 1 {
				c.Links = int(st.Nlink)
				k := [2]uint64{st.Dev, st.Ino}
				sc.links[k] = append(sc.links[k], len(sc.out)-1)
				sc.out[len(sc.out)-1].Links = int(st.Nlink)
			}
		case st.Mode&unix.S_IFMT == unix.S_IFLNK:
			t, err := readlinkat(ufd, name)
			if err != nil {
				return fmt.Errorf("read link %s in the changeset: %w", c.Path, err)
			}
			c.Op, c.Target, c.Size = OpSymlink, t, st.Size
			sc.out = append(sc.out, c)
		default:
			c.Op = OpSpecial
			sc.out = append(sc.out, c)
		}
	}
	return nil
}

// deleted adds a delete for each entry of host directory hfd that the replacing upper
// directory does not hold.
func (sc *scanner) deleted(ufd, hfd int, rel string, upper []string) error {
	dfd, err := openBeneath(hfd, ".", unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return fmt.Errorf("open %s: %w", sc.host(rel), err)
	}
	host, err := readNames(dfd)
	unix.Close(dfd)
	if err != nil {
		return fmt.Errorf("read %s: %w", sc.host(rel), err)
	}
	for _, name := range host {
		if _, found := slices.BinarySearch(upper, name); found {
			continue
		}
		var hst unix.Stat_t
		if unix.Fstatat(hfd, name, &hst, unix.AT_SYMLINK_NOFOLLOW) != nil {
			continue
		}
		r := filepath.Join(rel, name)
		c := Change{Path: sc.host(r), Rel: r, Stage: sc.stage, Type: TypeOf(hst.Mode), Mode: hst.Mode & 0o7777,
			Op: OpDelete, HostExists: true, HostParent: true, HostMode: hst.Mode & 0o7777}
		if c.Type == TypeDir {
			c.Op = OpRmdir
		}
		sc.out = append(sc.out, c)
	}
	return nil
}

// linkNames turns the second and further names of one upper inode into hard links to the
// first, and counts the names outside the changeset.
func (sc *scanner) linkNames() {
	for _, idx := range sc.links {
		first := sc.out[idx[0]]
		outside := max(first.Links-len(idx), 0)
		for j, i := range idx {
			sc.out[i].LinksOutside = outside
			if j > 0 {
				sc.out[i].Op, sc.out[i].Target = OpHardlink, first.Path
			}
			for _, o := range idx {
				if o != i {
					sc.out[i].Names = append(sc.out[i].Names, sc.out[o].Path)
				}
			}
		}
	}
}

func (sc *scanner) host(rel string) string {
	if rel == "" {
		return sc.dir
	}
	return filepath.Join(sc.dir, rel)
}

// readNames returns the sorted names of directory fd (read from its start).
func readNames(fd int) ([]string, error) {
	d, err := unix.Dup(fd)
	if err != nil {
		return nil, err
	}
	unix.CloseOnExec(d)
	f := os.NewFile(uintptr(d), "dir")
	defer f.Close()
	if _, err := unix.Seek(d, 0, io.SeekStart); err != nil {
		return nil, err
	}
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	return names, nil
}

func readlinkat(dirfd int, name string) (string, error) {
	buf := make([]byte, 256)
	for {
		n, err := unix.Readlinkat(dirfd, name, buf)
		if err != nil {
			return "", err
		}
		if n < len(buf) {
			return string(buf[:n]), nil
		}
		buf = make([]byte, 2*len(buf))
	}
}

// readFull reads into buf until it is full or the file ends.
func readFull(fd int, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := unix.Read(fd, buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return n, err
		}
		if m == 0 {
			break
		}
		n += m
	}
	return n, nil
}

// TypeOf is the Change type (TypeFile, TypeDir, ...) of a file of stat mode mode.
func TypeOf(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return TypeDir
	case unix.S_IFLNK:
		return TypeSymlink
	case unix.S_IFIFO:
		return TypeFIFO
	case unix.S_IFSOCK:
		return TypeSocket
	case unix.S_IFCHR:
		return TypeChar
	case unix.S_IFBLK:
		return TypeBlock
	}
	return TypeFile
}

// isWhiteout: overlay marks a deleted name with a 0/0 character device.
func isWhiteout(st *unix.Stat_t) bool {
	return st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev == 0
}

// fdPath names an entry of directory fd for the *xattr calls that take a path (they refuse
// O_PATH fds): through this process's own fd, then one component, not followed.
func fdPath(dirfd int, name string) string {
	return "/proc/self/fd/" + strconv.Itoa(dirfd) + "/" + name
}

// xattrArgs is struct xattr_args of getxattrat(2).
type xattrArgs struct {
	value uint64
	size  uint32
	flags uint32
}

// noGetxattrat is set once the kernel said getxattrat (Linux 6.13) is missing.
var noGetxattrat atomic.Bool

// getxattrAt reads attribute attr of entry name of directory dirfd, not following it, into
// buf (nil: only the size): getxattrat where the kernel has it, else through fdPath.
func getxattrAt(dirfd int, name, attr string, buf []byte) (int, error) {
	if !noGetxattrat.Load() {
		pn, err := unix.BytePtrFromString(name)
		if err != nil {
			return 0, err
		}
		an, err := unix.BytePtrFromString(attr)
		if err != nil {
			return 0, err
		}
		args := xattrArgs{size: uint32(len(buf))}
		if len(buf) > 0 {
			args.value = uint64(uintptr(unsafe.Pointer(&buf[0])))
		}
		n, _, errno := unix.Syscall6(unix.SYS_GETXATTRAT, uintptr(dirfd), uintptr(unsafe.Pointer(pn)), unix.AT_SYMLINK_NOFOLLOW,
			uintptr(unsafe.Pointer(an)), uintptr(unsafe.Pointer(&args)), unsafe.Sizeof(args))
		runtime.KeepAlive(buf)
		if errno != unix.ENOSYS {
			if errno != 0 {
				return 0, errno
			}
			return int(n), nil
		}
		noGetxattrat.Store(true)
	}
	return unix.Lgetxattr(fdPath(dirfd, name), attr, buf)
}

func hasXattr(dirfd int, name, attr string) bool {
	n, err := getxattrAt(dirfd, name, attr, nil)
	return err == nil && n > 0
}

func xattrIs(dirfd int, name, attr, want string) bool {
	buf := make([]byte, 8)
	n, err := getxattrAt(dirfd, name, attr, buf)
	return err == nil && string(buf[:n]) == want
}

// isOpaque reports overlay's opaque mark: the directory replaced what the lower layer had.
// An unprivileged overlay (userxattr) writes user.overlay.*, a privileged one trusted.overlay.*.
func isOpaque(dirfd int, name string) bool {
	return xattrIs(dirfd, name, "user.overlay.opaque", "y") || xattrIs(dirfd, name, "trusted.overlay.opaque", "y")
}

// isMetacopy: a metadata-only copy-up (metacopy=on): the data is still the lower file's.
func isMetacopy(dirfd int, name string) bool {
	return hasXattr(dirfd, name, "user.overlay.metacopy") || hasXattr(dirfd, name, "trusted.overlay.metacopy")
}

// gitConfigChange is GitConfigRuns of the host's file name in hfd (when it has one) and the
// upper one in ufd; a file that cannot be read counts as code-running.
func gitConfigChange(ufd, hfd int, name, hostPath string, hostExists bool) []string {
	newer, err := readSmall(ufd, name)
	if err != nil {
		return []string{"not readable in the changeset (" + err.Error() + ")"}
	}
	var older []byte
	if hostExists {
		older, _ = readSmall(hfd, name)
	}
	return GitRepoFileRuns(hostPath, older, newer)
}

// readSmall reads file name below dirfd, up to one byte more than maxGitConfig.
func readSmall(dirfd int, name string) ([]byte, error) {
	fd, err := openBeneath(dirfd, name, unix.O_RDONLY|unix.O_NONBLOCK)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxGitConfig+1))
}

// sameContent compares file name in upper directory ufd with the one in host directory hfd.
func sameContent(ufd, hfd int, name string) bool {
	a, err := openBeneath(ufd, name, unix.O_RDONLY|unix.O_NONBLOCK)
	if err != nil {
		return false
	}
	defer unix.Close(a)
	b, err := openBeneath(hfd, name, unix.O_RDONLY|unix.O_NONBLOCK)
	if err != nil {
		return false
	}
	defer unix.Close(b)
	ba, bb := make([]byte, 64<<10), make([]byte, 64<<10)
	for {
		na, ea := readFull(a, ba)
		nb, eb := readFull(b, bb)
		if ea != nil || eb != nil || na != nb || !bytes.Equal(ba[:na], bb[:nb]) {
			return false
		}
		if na < len(ba) {
			return true
		}
	}
}
