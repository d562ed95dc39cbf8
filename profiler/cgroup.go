package profiler

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Cgroup2Mount returns where the cgroup2 hierarchy is mounted, read from /proc/self/mountinfo
// (on hybrid v1/v2 hosts it is not /sys/fs/cgroup).
func Cgroup2Mount() (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// 41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		if fs := strings.Fields(post); len(fs) == 0 || fs[0] != "cgroup2" {
			continue
		}
		if fs := strings.Fields(pre); len(fs) >= 5 {
			return unescapeMountPath(fs[4]), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", errors.New("no cgroup2 file system is mounted (see `sysprof doctor`)")
}

func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

var runSeq atomic.Uint64

// runCgroup is the per-run cgroup2 directory the command is born into.
type runCgroup struct {
	dir string
	fd  int    // O_RDONLY|O_DIRECTORY (clone3 rejects O_PATH), for SysProcAttr.CgroupFD
	id  uint64 // what bpf_get_current_cgroup_id returns: the directory's inode
}

func newRunCgroup() (*runCgroup, error) {
	mnt, err := Cgroup2Mount()
	if err != nil {
		return nil, err
	}
	parent := filepath.Join(mnt, "sysprof")
	if err := os.Mkdir(parent, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("create cgroup %s: %w", parent, err)
	}
	removeStale(parent)
	dir := filepath.Join(parent, fmt.Sprintf("run-%d-%d", os.Getpid(), runSeq.Add(1)))
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
	return &runCgroup{dir: dir, fd: fd, id: st.Ino}, nil
}

// removeStale removes the empty run directories of sysprof processes that are gone (killed
// before they could clean up). Populated ones are left alone.
func removeStale(parent string) {
	dirs, _ := filepath.Glob(filepath.Join(parent, "run-*-*"))
	for _, d := range dirs {
		f := strings.SplitN(filepath.Base(d), "-", 3)
		pid, err := strconv.Atoi(f[1])
		if err != nil || pid == os.Getpid() || unix.Kill(pid, 0) != unix.ESRCH {
			continue
		}
		c := runCgroup{dir: d, fd: -1}
		if !c.populated() {
			os.Remove(d)
		}
	}
}

// pids lists the processes still in the cgroup.
func (c *runCgroup) pids() []int {
	b, err := os.ReadFile(filepath.Join(c.dir, "cgroup.procs"))
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

func (c *runCgroup) populated() bool {
	b, err := os.ReadFile(filepath.Join(c.dir, "cgroup.events"))
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

// waitEmpty polls cgroup.events until no process is left, or d passed.
func (c *runCgroup) waitEmpty(ctx context.Context, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for c.populated() {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// kill ends every process left in the cgroup (cgroup.kill, Linux 5.14).
func (c *runCgroup) kill() error {
	return os.WriteFile(filepath.Join(c.dir, "cgroup.kill"), []byte("1"), 0)
}

// remove kills what is left and removes the directory.
func (c *runCgroup) remove() error {
	if c.fd >= 0 {
		unix.Close(c.fd)
		c.fd = -1
	}
	if c.populated() {
		c.kill()
		c.waitEmpty(context.Background(), 5*time.Second)
	}
	var err error
	for range 50 {
		if err = os.Remove(c.dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("remove cgroup %s: %w", c.dir, err)
}
