package kernrun

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"

	"golang.org/x/sys/unix"
)

// The fd escrow of the warm hand-overs (learn's, profiler/warm.go, and the guard's,
// enforcer/guard/warm_linux.go): a run that ends gives copies of its BPF objects' and perf
// events' fds to a holder process (StartHolder) and describes the holder in a file of an
// escrow directory (Publish); a run that starts meanwhile finds the file under the directory's
// lock and takes its own references to the fds (Take, pidfd_getfd), so nothing is closed,
// detached or loaded between back-to-back runs. What the fds must be, how long the holder
// stays and who ends it are the users' own.

// Holder is a process holding escrowed fds: the pid and its start time (/proc/PID/stat), so
// that a reused pid does not pass for it.
type Holder struct {
	Pid   int    `json:"pid"`
	Start uint64 `json:"start"`
}

// Alive reports whether h is still there (not a zombie, not another process by its pid).
func (h Holder) Alive() bool {
	if h.Pid <= 0 {
		return false
	}
	start, ok := ProcStart(h.Pid)
	return ok && start == h.Start
}

// StartHolder starts cmd with copies of fds (cmd.ExtraFiles; in a session of its own) and
// returns the holder and the fds' numbers in it (in the order of fds). The caller's fds stay
// its own (the kernel objects live on while either side holds them); a reaper waits for cmd.
func StartHolder(cmd *exec.Cmd, fds []int) (Holder, []int, error) {
	files := make([]*os.File, 0, len(fds))
	defer func() {
		for _, f := range files {
			f.Close() // the holder has its own now (or there is none)
		}
	}()
	nums := make([]int, 0, len(fds))
	for _, fd := range fds {
		d, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			return Holder{}, nil, fmt.Errorf("dup fd %d for the holder: %w", fd, err)
		}
		files = append(files, os.NewFile(uintptr(d), "escrow"))
		nums = append(nums, 3+len(cmd.ExtraFiles)+len(nums)) // ExtraFiles start at 3
	}
	cmd.ExtraFiles = append(cmd.ExtraFiles, files...)
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setsid = true
	if err := cmd.Start(); err != nil {
		return Holder{}, nil, fmt.Errorf("start the fd holder: %w", err)
	}
	go cmd.Wait() // reap it if this process is still there
	h := Holder{Pid: cmd.Process.Pid}
	h.Start, _ = ProcStart(h.Pid) // 0 when it is gone already (then Take fails)
	return h, nums, nil
}

// Take takes this process's own references to the fds numbered nums in holder h (close-on-exec,
// in the order of nums) and returns them with a pidfd of h (the caller closes it: it signals
// or watches the holder through it). On an error nothing is left open.
func Take(h Holder, nums []int) (pidfd int, fds []int, err error) {
	pidfd, err = unix.PidfdOpen(h.Pid, 0)
	if err != nil {
		return -1, nil, fmt.Errorf("pidfd_open %d: %w", h.Pid, err)
	}
	fail := func(err error) (int, []int, error) {
		for _, fd := range fds {
			unix.Close(fd)
		}
		unix.Close(pidfd)
		return -1, nil, err
	}
	// Checked after the pidfd is open: from here on the pid cannot name another process.
	if !h.Alive() {
		return fail(fmt.Errorf("holder %d is gone", h.Pid))
	}
	if fds, err = GetFDs(pidfd, nums); err != nil {
		return fail(fmt.Errorf("holder %d: %w", h.Pid, err))
	}
	return pidfd, fds, nil
}

// GetFDs takes this process's own references to the fds numbered nums in the process pidfd
// names (close-on-exec, in the order of nums), for Take and for the callers that have a pidfd
// of their own child already. On an error none is left open.
func GetFDs(pidfd int, nums []int) ([]int, error) {
	fds := make([]int, 0, len(nums))
	for _, n := range nums {
		fd, err := unix.PidfdGetfd(pidfd, n, 0)
		if err != nil {
			for _, f := range fds {
				unix.Close(f)
			}
			return nil, fmt.Errorf("pidfd_getfd fd %d: %w", n, err)
		}
		fds = append(fds, fd)
	}
	return fds, nil
}

// Escrow is a directory of holders' files (under /run: a tmpfs gone with the boot on most
// hosts; the users' file names carry what ties them to one boot), and the lock they are
// claimed under.
type Escrow struct{ Dir string }

// Lock takes the directory's lock (creating the directory when create) and returns what
// releases it.
func (e Escrow) Lock(create bool) (unlock func(), err error) { return LockDir(e.Dir, create) }

// Publish writes rec (JSON) as the file name, complete or not at all (a reader without the
// lock never sees half of it).
func (e Escrow) Publish(name string, rec any) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	path := filepath.Join(e.Dir, name)
	tmp := filepath.Join(e.Dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// Rewrite replaces the record in the existing file name in place, for a file read only under
// the lock (a reader without it may see half of it): no temporary file and no rename. Where
// /run is not a tmpfs (ext4 on these VMs) a rename over a file makes ext4 flush the new one at
// once (auto_da_alloc; so does a truncation to zero): ~1 ms a Publish, on the way out of every
// run. The record is padded with spaces to the file's size, so nothing of the old one is left
// (JSON ignores the spaces). A file that is not there, a symlink, or not a regular file with
// one link, this user's and writable by nobody else, is an error (then Publish replaces it).
func (e Escrow) Rewrite(name string, rec any) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	fd, err := unix.Open(filepath.Join(e.Dir, name), unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return fmt.Errorf("rewrite escrow file %s: %w", name, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1 ||
		int(st.Uid) != os.Geteuid() || st.Mode&0o022 != 0 {
		return fmt.Errorf("rewrite escrow file %s: not a regular file of this user's own, closed to others' writes", name)
	}
	if pad := int(st.Size) - len(b); pad > 0 {
		b = append(b, bytes.Repeat([]byte(" "), pad)...)
	}
	if n, err := unix.Pwrite(fd, b, 0); err != nil || n != len(b) {
		return fmt.Errorf("rewrite escrow file %s: wrote %d of %d bytes: %v", name, n, len(b), err)
	}
	return nil
}

// Read reads the file name into rec; a file that does not parse is an error (remove it).
func (e Escrow) Read(name string, rec any) error {
	b, err := os.ReadFile(filepath.Join(e.Dir, name))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, rec); err != nil {
		return fmt.Errorf("escrow file %s: %w", name, err)
	}
	return nil
}

// Remove removes the file name.
func (e Escrow) Remove(name string) { os.Remove(filepath.Join(e.Dir, name)) }

// Files are the names of the files that match pattern (filepath.Match), sorted.
func (e Escrow) Files(pattern string) []string {
	paths, _ := filepath.Glob(filepath.Join(e.Dir, pattern))
	names := make([]string, 0, len(paths))
	for _, p := range paths {
		names = append(names, filepath.Base(p))
	}
	slices.Sort(names)
	return names
}
