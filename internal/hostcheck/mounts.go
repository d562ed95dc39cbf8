package hostcheck

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/mountinfo"
)

// Cgroup2Mount returns where the cgroup2 (unified) hierarchy is mounted, read from
// /proc/self/mountinfo: /sys/fs/cgroup on a unified host, /sys/fs/cgroup/unified on a hybrid one.
// When there are several, the first mount of the hierarchy's root wins. The error is an
// *UnsupportedError when no cgroup2 is mounted.
func Cgroup2Mount() (string, error) {
	cgroup2Found.Lock()
	defer cgroup2Found.Unlock()
	if cgroup2Found.mnt != "" {
		return cgroup2Found.mnt, nil
	}
	ms, err := mountinfo.Read()
	if err != nil {
		return "", fmt.Errorf("find cgroup2 mount: %w", err)
	}
	mnt, err := cgroup2From(ms)
	if err == nil {
		cgroup2Found.mnt = mnt
	}
	return mnt, err
}

// cgroup2Found keeps the mount once found (not a failure: a later call may find one). Reading
// mountinfo costs the kernel a walk of the mount table, and one enforce run asks three times.
var cgroup2Found struct {
	sync.Mutex
	mnt string
}

func cgroup2From(ms []mountinfo.Entry) (string, error) {
	fallback := ""
	for _, m := range ms {
		if m.FSType != "cgroup2" {
			continue
		}
		if m.Root == "/" {
			return m.MountPoint, nil
		}
		if fallback == "" {
			fallback = m.MountPoint
		}
	}
	if fallback != "" {
		// Inside a cgroup namespace or container: the mount shows a subtree, which is still
		// where this process can create cgroups.
		return fallback, nil
	}
	return "", &UnsupportedError{
		Feature: CheckCgroup2,
		Reason:  "no cgroup2 filesystem in /proc/self/mountinfo",
		Remedy:  "mount it: mkdir -p /sys/fs/cgroup/unified && mount -t cgroup2 none /sys/fs/cgroup/unified (or boot with systemd.unified_cgroup_hierarchy=1)",
	}
}

// TracefsMount returns where tracefs is: /sys/kernel/tracing or /sys/kernel/debug/tracing when
// its events/ directory is there (a stat: learn and enforce ask on every run), else a tracefs
// mount (or debugfs's tracing/ directory) read from /proc/self/mountinfo. The error is an
// *UnsupportedError when neither is mounted. It does not mount anything (kernrun.Tracefs does).
func TracefsMount() (string, error) {
	for _, d := range []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"} {
		if _, err := os.Stat(d + "/events"); err == nil {
			return d, nil
		}
	}
	ms, err := mountinfo.Read()
	if err != nil {
		return "", fmt.Errorf("find tracefs mount: %w", err)
	}
	return tracefsFrom(ms, func(p string) bool {
		var st unix.Statfs_t
		return unix.Statfs(p, &st) == nil && (st.Type == unix.TRACEFS_MAGIC || st.Type == unix.DEBUGFS_MAGIC)
	})
}

func tracefsFrom(ms []mountinfo.Entry, isTracing func(string) bool) (string, error) {
	for _, m := range ms {
		if m.FSType == "tracefs" && m.Root == "/" {
			return m.MountPoint, nil
		}
	}
	for _, m := range ms {
		if m.FSType == "debugfs" && m.Root == "/" {
			if p := filepath.Join(m.MountPoint, "tracing"); isTracing(p) {
				return p, nil
			}
		}
	}
	return "", &UnsupportedError{
		Feature: CheckTracefs,
		Reason:  "neither tracefs nor debugfs is mounted (see /proc/self/mountinfo)",
		Remedy:  remedyTracefs,
	}
}
