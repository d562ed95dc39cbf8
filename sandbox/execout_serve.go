package sandbox

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"

	"golang.org/x/sys/unix"
)

// boundOutputs are the exec output directories bound so far (by a request or the watch).
var boundOutputs = struct {
	sync.Mutex
	done map[string]bool
}{done: map[string]bool{}}

// bindOnce binds output directory o (bindExecOutput) unless it is bound already.
func bindOnce(o string) {
	boundOutputs.Lock()
	defer boundOutputs.Unlock()
	if !boundOutputs.done[o] && bindExecOutput(o) == nil {
		boundOutputs.done[o] = true
	}
}

// ExecFileUnbind is the mode of a request that undoes an exec output file's bind (the command is
// about to remove or replace that name: a mount point cannot be, EBUSY).
const ExecFileUnbind = 1

// unbindFile detaches the bind of exec output file f when it is bound (the next exec binds what
// is there then); 0, or the errno.
func unbindFile(f string) unix.Errno {
	boundOutputs.Lock()
	defer boundOutputs.Unlock()
	if !boundOutputs.done[f] {
		return 0
	}
	if err := unix.Unmount(f, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW); err != nil {
		if e, ok := errors.AsType[unix.Errno](err); ok {
			return e
		}
		return unix.EIO
	}
	delete(boundOutputs.done, f)
	return 0
}

// bindFileOnce binds exec output file f (bindExecFile) unless it is bound already; it returns
// the errno of a failed bind (0 when bound).
func bindFileOnce(f string) unix.Errno {
	boundOutputs.Lock()
	defer boundOutputs.Unlock()
	if boundOutputs.done[f] {
		return 0
	}
	if err := bindExecFile(f); err != nil {
		if e, ok := errors.AsType[unix.Errno](err); ok {
			return e
		}
		return unix.EIO
	}
	boundOutputs.done[f] = true
	return 0
}

// AskExecFileBind asks, on fd (the socket ServeExecOutputMkdirs returned, used by nobody else
// yet), for exec output file f to be bound; it returns the answer's error.
func AskExecFileBind(fd int, f string) error {
	req := binary.NativeEndian.AppendUint32(nil, 0)
	if _, err := unix.Write(fd, append(req, f...)); err != nil {
		return err
	}
	var ans [4]byte
	if n, err := unix.Read(fd, ans[:]); err != nil || n != 4 {
		return fmt.Errorf("exec output %s: no answer (%v)", f, err)
	}
	if e := int32(binary.NativeEndian.Uint32(ans[:])); e != 0 {
		return fmt.Errorf("exec output %s: %w", f, unix.Errno(e))
	}
	return nil
}

// ServeExecOutputMkdirs serves, on a goroutine of its own, the requests to make one of
// outputs (Plan.ExecOutputs) that arrive on the returned socket (the enforcer's supervisor
// holds it: the command's mkdir of an output directory goes to it): each makes the directory
// and binds it exec (bindExecOutput) before it answers, so that nothing the command runs from it
// right away meets the noexec stage. A request is the mode (4 bytes, native order, the caller's
// umask applied) and the absolute path; the answer the mkdir's errno (4 bytes, 0 when made).
// A request naming one of files (Plan.ExecFiles: the command is about to exec it) binds that
// file exec over itself (bindExecFile) and answers 0, or the errno when it is not there as a
// regular file of one name reached without a symlink; with mode ExecFileUnbind (the command
// is about to remove or rename that name) it detaches that bind.
// A path that is not an output, or whose parent is reached through a symlink, answers
// -1: the supervisor lets the call go on as the command made it (the inotify watch binds it).
// Must run in a process whose other threads keep the user namespace's capabilities and that
// lives as long as the command (the init stage as PID 1).
func ServeExecOutputMkdirs(outputs, files []string) (int, error) {
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	outputs, files = sortedClean(outputs), sortedClean(files)
	go func() {
		defer unix.Close(pair[1])
		buf := make([]byte, 4+unix.PathMax)
		for {
			n, err := unix.Read(pair[1], buf)
			if err == unix.EINTR {
				continue
			}
			if err != nil || n == 0 {
				return
			}
			answer := int32(-1)
			if n > 4 {
				mode, o := binary.NativeEndian.Uint32(buf), filepath.Clean(string(buf[4:n]))
				if slices.Contains(outputs, o) {
					if errno, made := makeOutputDir(o, mode&0o1777); made {
						answer = int32(errno)
					}
				} else if slices.Contains(files, o) {
					if mode == ExecFileUnbind {
						answer = int32(unbindFile(o))
					} else {
						answer = int32(bindFileOnce(o))
					}
				}
			}
			var out [4]byte
			binary.NativeEndian.PutUint32(out[:], uint32(answer))
			if _, err := unix.Write(pair[1], out[:]); err != nil {
				return
			}
		}
	}()
	return pair[0], nil
}

// makeOutputDir makes directory o with mode (this process's umask aside) below its parent
// reached without a symlink, and binds it exec. made is false when the parent cannot be reached
// so; errno is the mkdir's.
func makeOutputDir(o string, mode uint32) (errno unix.Errno, made bool) {
	pfd, err := unix.Openat2(unix.AT_FDCWD, filepath.Dir(o), &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return 0, false
	}
	defer unix.Close(pfd)
	if err := unix.Mkdirat(pfd, filepath.Base(o), mode); err != nil {
		if e, ok := err.(unix.Errno); ok {
			return e, true
		}
		return unix.EIO, true
	}
	if fd, err := unix.Openat(pfd, filepath.Base(o), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
		_ = unix.Fchmod(fd, mode) // the caller's umask is in mode already; this process's is not
		unix.Close(fd)
	}
	bindOnce(o)
	return 0, true
}
