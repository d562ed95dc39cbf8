package sandbox

import (
	"fmt"
	"path/filepath"
	"unsafe"

	"golang.org/x/sys/unix"
)

// watchExecOutputs makes each output directory of outputs (Plan.ExecOutputs: an output
// directory of a noexec stage that an exec rule lies in, missing when the run starts) a mount
// of its own without noexec at the moment the command makes it, so that what the run writes
// there runs and maps executable while the rest of the stage (the files the tree already had:
// a package's evil.so) stays noexec. A Landlock rule or a bind needs an existing inode, and the
// directory must not be made before the command makes it (`mkdir out` without -p, `[ -d build
// ] || ./configure`): an inotify watch on its parent sees it appear.
//
// The watches are set here, before the command starts; a goroutine binds each directory when
// its IN_CREATE (or IN_MOVED_TO) arrives. It runs on one of the process's other threads, which keep the
// capabilities of the sandbox's user namespace (the init stage drops them, and applies
// Landlock and seccomp, on its locked thread only), so it works only in a process that lives
// as long as the command: the init stage as PID 1. Anywhere else the outputs stay noexec
// (fail closed). A directory that is there before the watch stays noexec. One renamed into
// place is bound too (cargo makes target/ as a temporary directory and renames it): in a stage
// only a directory made in the run can be renamed (overlayfs without redirect_dir refuses a
// directory of the lower layer, EXDEV), so what a new directory holds when it is bound (`mkdir
// -p target/debug` makes both before the bind) the command put there.
// Requires Linux 5.12 (mount_setattr).
func watchExecOutputs(outputs []string, res *Result) error {
	if len(outputs) == 0 {
		return nil
	}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		return fmt.Errorf("exec outputs: inotify_init1: %w", err)
	}
	byWatch := map[int32][]string{}
	for _, o := range sortedClean(outputs) {
		var st unix.Stat_t
		if unix.Lstat(o, &st) == nil {
			res.skip(LayerMounts, o, "exists before the command runs: stays noexec")
			continue
		}
		wd, err := unix.InotifyAddWatch(fd, filepath.Dir(o), unix.IN_CREATE|unix.IN_MOVED_TO|unix.IN_ONLYDIR|unix.IN_DONT_FOLLOW)
		if err != nil {
			unix.Close(fd)
			return fmt.Errorf("exec outputs: watch %s: %w", filepath.Dir(o), err)
		}
		byWatch[int32(wd)] = append(byWatch[int32(wd)], o)
		// Made between the check and the watch: bind it now (nothing of the command runs yet).
		if unix.Lstat(o, &st) == nil {
			bindOnce(o)
		}
	}
	if len(byWatch) == 0 {
		unix.Close(fd)
		return nil
	}
	go serveExecOutputs(fd, byWatch)
	return nil
}

// serveExecOutputs reads the watch's events for as long as the process lives and binds each
// output directory the command makes.
func serveExecOutputs(fd int, byWatch map[int32][]string) {
	buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.NAME_MAX+1))
	for {
		n, err := unix.Read(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			return
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
			off += unix.SizeofInotifyEvent + int(ev.Len)
			if ev.Mask&unix.IN_ISDIR == 0 || ev.Mask&(unix.IN_CREATE|unix.IN_MOVED_TO) == 0 {
				continue
			}
			base := unix.ByteSliceToString(name)
			for _, o := range byWatch[ev.Wd] {
				if filepath.Base(o) == base {
					bindOnce(o)
				}
			}
		}
	}
}

// bindExecOutput covers directory o, reached without a symlink, with a clone of itself without
// noexec (nosuid and nodev stay). Once it is a mount point it cannot be renamed or removed, nor
// can a file be linked or renamed into it from the stage (EXDEV).
func bindExecOutput(o string) error {
	dfd, err := unix.Openat2(unix.AT_FDCWD, o, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return fmt.Errorf("exec output %s: %w", o, err)
	}
	defer unix.Close(dfd)
	tree, err := unix.OpenTree(dfd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH)
	if err != nil {
		return fmt.Errorf("exec output %s: clone (open_tree): %w", o, err)
	}
	defer unix.Close(tree)
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH, &unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_NOEXEC}); err != nil {
		return fmt.Errorf("exec output %s: mount_setattr: %w", o, err)
	}
	if err := unix.MoveMount(tree, "", dfd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("exec output %s: move_mount: %w", o, err)
	}
	return nil
}

// bindExecFile covers regular file f, reached without a symlink, with a clone of
// itself without noexec (nosuid and nodev stay): that file alone runs and maps executable in its
// noexec stage.
// A mount point cannot be removed or replaced by a rename (EBUSY): the supervisor has the bind
// undone (unbindFile) before the command's unlink or rename of that name.
func bindExecFile(f string) error {
	fd, err := unix.Openat2(unix.AT_FDCWD, f, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return fmt.Errorf("exec output %s: %w", f, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("exec output %s: %w", f, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("exec output %s: not a regular file: %w", f, unix.EACCES)
	}
	// A file of several names is bound too: cargo hard-links target/debug/NAME to its deps/
	// build, and `ln ./evil app` gains an attacker nothing `cp ./evil app` (a file the command
	// wrote) does not.
	tree, err := unix.OpenTree(fd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH)
	if err != nil {
		return fmt.Errorf("exec output %s: clone (open_tree): %w", f, err)
	}
	defer unix.Close(tree)
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH, &unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_NOEXEC}); err != nil {
		return fmt.Errorf("exec output %s: mount_setattr: %w", f, err)
	}
	if err := unix.MoveMount(tree, "", fd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("exec output %s: move_mount: %w", f, err)
	}
	return nil
}
