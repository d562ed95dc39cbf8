package policy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sysprof/sysprof/paths"
)

// PreloadFamily marks what a run allows for a library the user preloads (WithUserPreload).
const PreloadFamily = "preload"

// PreloadCalls are what a library preloaded into every process does for itself, whatever the
// tool: it tells a forked child from its parent (getpid, gettid) and keeps its state in a
// POSIX semaphore or shared-memory object, which glibc's sem_open makes under a temp name,
// links into place and unlinks, and whose size it sets (ftruncate: libfaketime); with the
// variants synthesis adds beside those (rmdir beside unlink, a runtime's signals to its own
// threads, touch via link), so that enforce and drift close them alike. Which names they
// reach is the filesystem layers' decision.
var PreloadCalls = []string{"getpid", "gettid", "sigaltstack", "tgkill", "link", "linkat", "unlink", "unlinkat", "rmdir",
	"ftruncate", "utime", "utimes", "futimesat", "utimensat"}

// PreloadShm is where those objects live: with a private /tmp, the sandbox's own tmpfs.
const PreloadShm = "/dev/shm"

// WithUserPreload returns p as a run with the user's LD_PRELOAD (lookup: the command's
// environment, set before sysprof) enforces and drifts it: a preload is the user's, like TZ
// or the terminal, not the tool's, so what PreloadCalls names is allowed for that run (family
// preload) and, with a private /tmp, writing the sandbox's own /dev/shm. Only when every
// preloaded library is a system library (paths.UserPreload): a preload of a file in the work
// tree or $HOME gets nothing (and cannot be mapped there). A profile learned --exact closes no
// family, this one neither. p itself is never modified; the note says what was added ("":
// nothing).
func WithUserPreload(p *Profile, lookup paths.Lookup) (*Profile, string) {
	libs, files, system := paths.UserPreload(lookup)
	if len(libs) == 0 || p == nil || !p.ClosesFamilies() {
		return p, ""
	}
	if !system {
		return p, fmt.Sprintf("LD_PRELOAD=%s is not only system libraries (%s): nothing added for it; a library in the work tree or $HOME cannot be mapped", strings.Join(libs, ":"), strings.Join(paths.SystemLibDirs, ", "))
	}
	q := Clone(p)
	var added []string
	for _, n := range PreloadCalls {
		if !slices.ContainsFunc(q.Syscalls.Allow, func(s Syscall) bool { return s.Name == n }) {
			q.Syscalls.Allow = append(q.Syscalls.Allow, Syscall{Name: n, Family: PreloadFamily})
			added = append(added, n)
		}
	}
	slices.SortFunc(q.Syscalls.Allow, func(a, b Syscall) int { return strings.Compare(a.Name, b.Name) })
	for _, f := range files {
		if !slices.ContainsFunc(q.Filesystem.Read, func(r PathRule) bool { return paths.Covers(r.Path, f) }) {
			q.Filesystem.Read = append(q.Filesystem.Read, PathRule{Path: f, Note: "the user's preload"})
			added = append(added, "filesystem.read "+f)
		}
	}
	slices.SortFunc(q.Filesystem.Read, func(a, b PathRule) int { return strings.Compare(a.Path, b.Path) })
	if q.Filesystem.PrivateTmp && !slices.ContainsFunc(q.Filesystem.Write, func(r PathRule) bool { return r.Path == PreloadShm }) {
		q.Filesystem.Write = append(q.Filesystem.Write, PathRule{Path: PreloadShm, Note: "the sandbox's own /dev/shm: the user's preload's semaphores and shared memory"})
		slices.SortFunc(q.Filesystem.Write, func(a, b PathRule) int { return strings.Compare(a.Path, b.Path) })
		added = append(added, "filesystem.write "+PreloadShm+" (the sandbox's own tmpfs)")
	}
	if len(added) == 0 {
		return p, ""
	}
	return q, fmt.Sprintf("LD_PRELOAD=%s set by the user (system libraries): the preload family allowed for this run: %s", strings.Join(libs, ":"), strings.Join(added, ", "))
}
