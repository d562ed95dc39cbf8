package profiler

import (
	"context"
	"time"

	"github.com/sysprof/sysprof/internal/kernrun"
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
