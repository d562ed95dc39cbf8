package hostcheck

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// mountEntry is one line of /proc/self/mountinfo.
type mountEntry struct {
	Root       string // root of the mount within its filesystem
	MountPoint string
	FSType     string
	Source     string
}

// parseMountinfo parses the format of proc(5) /proc/PID/mountinfo.
func parseMountinfo(r io.Reader) ([]mountEntry, error) {
	var out []mountEntry
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		// 36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, f := range fields {
			if f == "-" && i >= 6 {
				sep = i
				break
			}
		}
		if sep < 0 || len(fields) < sep+3 {
			return nil, fmt.Errorf("parse mountinfo: malformed line %q", sc.Text())
		}
		out = append(out, mountEntry{
			Root:       unescapeMountinfo(fields[3]),
			MountPoint: unescapeMountinfo(fields[4]),
			FSType:     fields[sep+1],
			Source:     unescapeMountinfo(fields[sep+2]),
		})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	return out, nil
}

// unescapeMountinfo undoes the octal escapes (\040 for space, …) the kernel writes in paths.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1], '3') && isOctal(s[i+2], '7') && isOctal(s[i+3], '7') {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c, hi byte) bool { return c >= '0' && c <= hi }

func readMountinfo() ([]mountEntry, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return parseMountinfo(f)
}

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
	ms, err := readMountinfo()
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

func cgroup2From(ms []mountEntry) (string, error) {
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
	ms, err := readMountinfo()
	if err != nil {
		return "", fmt.Errorf("find tracefs mount: %w", err)
	}
	return tracefsFrom(ms, func(p string) bool {
		var st unix.Statfs_t
		return unix.Statfs(p, &st) == nil && (st.Type == unix.TRACEFS_MAGIC || st.Type == unix.DEBUGFS_MAGIC)
	})
}

func tracefsFrom(ms []mountEntry, isTracing func(string) bool) (string, error) {
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
