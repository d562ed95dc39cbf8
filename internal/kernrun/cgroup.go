package kernrun

import (
	"context"
	"errors"
	"fmt"
	"github.com/sysprof/sysprof/internal/hostcheck"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Cgroup2Mount returns where the cgroup2 hierarchy is mounted, read from /proc/self/mountinfo
// (on hybrid v1/v2 hosts it is not /sys/fs/cgroup). It is doctor's probe, shared.
func Cgroup2Mount() (string, error) { return hostcheck.Cgroup2Mount() }

var runSeq atomic.Uint64

// Cgroup is a per-run cgroup2 directory (<cgroup2>/sysprof/run-PID-N) a command is born into
// with SysProcAttr{UseCgroupFD: true, CgroupFD: FD}.
type Cgroup struct {
	Dir string
	FD  int    // O_RDONLY|O_DIRECTORY (clone3 rejects O_PATH); -1 once closed
	ID  uint64 // what bpf_get_current_cgroup_id returns: the directory's inode
}

// NewCgroup creates a fresh run directory, removing the empty ones of sysprof processes that
// are gone first.
func NewCgroup() (*Cgroup, error) {
	mnt, err := Cgroup2Mount()
	if err != nil {
		return nil, err
	}
	parent := filepath.Join(mnt, "sysprof")
	if err := os.Mkdir(parent, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("create cgroup %s: %w", parent, err)
	}
	sweep(func() { removeStale(parent) })
	// The pid alone is not unique: sysprof processes in other pid namespaces have the same
	// (often 1).
	dir := filepath.Join(parent, fmt.Sprintf("run-%d-%d-%x", os.Getpid(), runSeq.Add(1), time.Now().UnixNano()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create cgroup %s: %w", dir, err)
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		os.Remove(dir)
		return nil, fmt.Errorf("open cgroup %s: %w", dir, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		os.Remove(dir)
		return nil, fmt.Errorf("stat cgroup %s: %w", dir, err)
	}
	// Held while fd is open: removeStale leaves the directory of a live run alone, whatever
	// pid namespace it looks from (a pid it cannot see is not a dead one).
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		unix.Close(fd)
		os.Remove(dir)
		return nil, fmt.Errorf("lock cgroup %s: %w", dir, err)
	}
	return &Cgroup{Dir: dir, FD: fd, ID: st.Ino}, nil
}

// sweeps are the removals of stale directories under way: beside the run's start, which need
// not wait for them (each lists every run's directory: ~0.1 ms).
var sweeps sync.WaitGroup

func sweep(f func()) {
	sweeps.Add(1)
	go func() {
		defer sweeps.Done()
		f()
	}()
}

// removeStale removes the empty run directories of sysprof processes that are gone (killed
// before they could clean up). Populated ones are left alone, and so are this process's (its
// own runs'), so it may run beside them.
func removeStale(parent string) {
	dirs, _ := filepath.Glob(filepath.Join(parent, "run-*-*"))
	for _, d := range dirs {
		f := strings.SplitN(filepath.Base(d), "-", 3)
		pid, err := strconv.Atoi(f[1])
		if err != nil || pid == os.Getpid() || unix.Kill(pid, 0) != unix.ESRCH {
			continue
		}
		if locked(d) {
			continue // its run is alive (in another pid namespace)
		}
		c := Cgroup{Dir: d, FD: -1}
		if !c.Populated() {
			os.Remove(d)
		}
	}
}

// Pids lists the processes still in the cgroup.
func (c *Cgroup) Pids() []int {
	b, err := os.ReadFile(filepath.Join(c.Dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// Populated reports whether a process is left in the cgroup or below it.
func (c *Cgroup) Populated() bool {
	b, err := os.ReadFile(filepath.Join(c.Dir, "cgroup.events"))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "populated "); ok {
			return strings.TrimSpace(v) != "0"
		}
	}
	return false
}

// WaitEmpty polls cgroup.events until no process is left, or d passed.
func (c *Cgroup) WaitEmpty(ctx context.Context, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for c.Populated() {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// Kill ends every process left in the cgroup (cgroup.kill, Linux 5.14).
func (c *Cgroup) Kill() error {
	return os.WriteFile(filepath.Join(c.Dir, "cgroup.kill"), []byte("1"), 0)
}

// Remove kills what is left and removes the directory.
func (c *Cgroup) Remove() error {
	if c.FD >= 0 {
		unix.Close(c.FD)
		c.FD = -1
	}
	if c.Populated() {
		c.Kill()
		c.WaitEmpty(context.Background(), 5*time.Second)
	}
	var err error
	for range 50 {
		if err = os.Remove(c.Dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("remove cgroup %s: %w", c.Dir, err)
}

// locked reports whether a run holds dir's lock (see NewCgroup).
func locked(dir string) bool {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	return unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) == unix.EWOULDBLOCK
}

// lockDir holds an flock on directory d while the returned fd is open (-1: none), so that
// removeStale and removeStaleV1 leave it alone.
func lockDir(d string) int {
	fd, err := unix.Open(d, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return -1
	}
	if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil {
		unix.Close(fd)
		return -1
	}
	return fd
}
