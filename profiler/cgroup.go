package profiler

import (
	"context"
	"os/exec"
	"runtime"
	"time"

	"github.com/sysprof/sysprof/internal/kernrun"
	"github.com/sysprof/sysprof/trace"
)

// Cgroup2Mount returns where the cgroup2 hierarchy is mounted, read from /proc/self/mountinfo
// (on hybrid v1/v2 hosts it is not /sys/fs/cgroup).
func Cgroup2Mount() (string, error) { return kernrun.Cgroup2Mount() }

// runCgroup is the per-run cgroup2 directory the command is born into (shared with the
// enforcer through internal/kernrun).
type runCgroup struct {
	cg  *kernrun.Cgroup
	dir string
	fd  int    // O_RDONLY|O_DIRECTORY (clone3 rejects O_PATH), for SysProcAttr.CgroupFD
	id  uint64 // what bpf_get_current_cgroup_id returns: the directory's inode
}

func newRunCgroup() (*runCgroup, error) {
	cg, err := kernrun.NewCgroup()
	if err != nil {
		return nil, err
	}
	return &runCgroup{cg: cg, dir: cg.Dir, fd: cg.FD, id: cg.ID}, nil
}

func (c *runCgroup) pids() []int     { return c.cg.Pids() }
func (c *runCgroup) populated() bool { return c.cg.Populated() }
func (c *runCgroup) kill() error     { return c.cg.Kill() }
func (c *runCgroup) remove() error   { return c.cg.Remove() }
func (c *runCgroup) waitEmpty(ctx context.Context, d time.Duration) bool {
	return c.cg.WaitEmpty(ctx, d)
}

// peaks measures the run's peaks (tasks, memory) in cgroup directories of its own (in the run
// cgroup itself where cgroup2 has the controllers; v1 hierarchies on hybrid hosts): best
// effort, a host without them learns no limits (the profile keeps the defaults).
type peaks struct{ g *kernrun.LimitGroup }

func newPeaks(c *runCgroup) peaks {
	g, err := kernrun.NewLimitGroup(c.cg)
	if err != nil {
		return peaks{}
	}
	return peaks{g}
}

// start starts cmd in the measured cgroups.
func (p peaks) start(cmd *exec.Cmd) error {
	if p.g == nil {
		return cmd.Start()
	}
	// v1 directories are joined per thread: this one forks the command.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	restore, err := p.g.Measure()
	if err != nil {
		return cmd.Start()
	}
	defer restore()
	return cmd.Start()
}

// read returns the peaks once the run's processes are gone.
func (p peaks) read() trace.Peaks {
	if p.g == nil {
		return trace.Peaks{}
	}
	s := p.g.Stats()
	return trace.Peaks{Pids: s.PidsPeak, Memory: s.MemoryPeak}
}

// remove removes the directories it made (after the run cgroup is empty).
func (p peaks) remove() { p.g.Remove() }
