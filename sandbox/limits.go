package sandbox

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// LayerLimits is the limits layer (here: the rlimits part; the run's cgroup is the caller's).
const LayerLimits = "limits"

// Rlimit is one resource limit of the command: unix.RLIMIT_NPROC, RLIMIT_AS, ... The hard
// limit is Max, so the command cannot raise it again; a soft limit below it stays (a soft
// RLIMIT_NOFILE above 1024 breaks select()).
type Rlimit struct {
	Resource int    `json:"resource"`
	Max      uint64 `json:"max"`
}

// setRlimits lowers each limit (never raises one: a limit already lower stays).
func setRlimits(rl []Rlimit) error {
	for _, r := range rl {
		var cur unix.Rlimit
		if err := unix.Getrlimit(r.Resource, &cur); err != nil {
			return fmt.Errorf("getrlimit %d: %w", r.Resource, err)
		}
		v := min(r.Max, cur.Max)
		if err := unix.Setrlimit(r.Resource, &unix.Rlimit{Cur: min(cur.Cur, v), Max: v}); err != nil {
			return fmt.Errorf("setrlimit %d to %d: %w", r.Resource, v, err)
		}
	}
	return nil
}

// UserCount is one of the kernel's per-user counts, by its name under /proc/sys/user
// (max_inotify_instances, ...), and the most the sandbox's user namespace may hold of it.
type UserCount struct {
	Name string `json:"name"`
	Max  int    `json:"max"`
}

// SetUserCounts sets each count's limit in the calling process's user namespace. The kernel
// counts an inotify instance or a fanotify group against every user namespace up to the host's,
// per uid: without a limit of its own, a run could hold the whole of its host user's count
// (128 inotify instances), and the user's editor and other programs get EMFILE until it ends.
// It needs CAP_SYS_RESOURCE in the namespace and /proc/sys writable: the init stage calls it
// before its layers (Landlock and the capability drop take both). A count this kernel lacks is
// skipped.
func SetUserCounts(counts []UserCount) error {
	for _, c := range counts {
		p := "/proc/sys/user/" + c.Name
		if err := os.WriteFile(p, []byte(strconv.Itoa(c.Max)), 0); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("set %s to %d: %w", p, c.Max, err)
		}
	}
	return nil
}

// JoinOwnKeyring gives the calling thread (the one that forks the command) a new, empty session
// keyring. A session keyring survives clone, unshare and execve: without this the command
// possesses the host session's keyring (the login's Kerberos tickets, NFS, CIFS and ecryptfs
// keys) and, where keyctl is allowed, reads and links its keys with the possessor's rights.
func JoinOwnKeyring() error {
	// A NULL name: an anonymous keyring ("" would join any keyring of that name the user
	// may search).
	if _, _, e := unix.RawSyscall(unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING, 0, 0); e != 0 {
		return fmt.Errorf("a session keyring of the sandbox's own: %w", e)
	}
	return nil
}
