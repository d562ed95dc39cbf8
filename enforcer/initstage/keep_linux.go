package initstage

import (
	"encoding/json"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// KeepArg is the hidden first argument that makes the init program the keeper of its own
// sealed memfd between enforce runs (package enforcer, initkeep_linux.go): KeepArg DIR NAME
// MILLISECONDS, the memfd on fd 3. The program is its own keeper because it is small: its
// start costs about a third of sysprof's.
const KeepArg = "__sysprof_keep_init__"

// Kept is the escrow file DIR/NAME of a kept memfd: the keeper's pid and start time
// (/proc/PID/stat, so that a reused pid does not pass for it), the memfd's number in it, and
// what package enforcer needs to trust it without reading it: the memfd's identity (Dev, Ino)
// and the identities of the sysprof binaries whose embedded program it holds (Exes: the one
// that wrote it, and those that compared it byte for byte since).
type Kept struct {
	Pid   int      `json:"pid"`
	Start uint64   `json:"start"`
	FD    int      `json:"fd"`
	Exes  []string `json:"exes,omitempty"`
	Dev   uint64   `json:"dev,omitempty"`
	Ino   uint64   `json:"ino,omitempty"`
}

// Keep is the keeper's main: it holds fd 3 while DIR/NAME names it and was touched (each run
// that takes the memfd touches it) less than the linger ago, then withdraws the file and
// exits. The lock is the escrow's (internal/kernrun.LockDir: flock of DIR/lock).
func Keep(args []string) int {
	if len(args) != 3 {
		return 125
	}
	dir, name := args[0], args[1]
	ms, err := time.ParseDuration(args[2] + "ms")
	if err != nil || ms <= 0 {
		return 125
	}
	path := filepath.Join(dir, name)
	for wait := ms; ; {
		time.Sleep(wait)
		lock, err := unix.Open(filepath.Join(dir, "lock"), unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			return 0 // the directory is gone: nobody can take the memfd
		}
		for unix.Flock(lock, unix.LOCK_EX) == unix.EINTR {
		}
		var k Kept
		st, err := os.Stat(path)
		b, rerr := os.ReadFile(path)
		// A live process's pid names nobody else: the file is this keeper's.
		if err != nil || rerr != nil || json.Unmarshal(b, &k) != nil || k.Pid != os.Getpid() {
			unix.Close(lock)
			return 0 // withdrawn or replaced
		}
		if wait = time.Until(st.ModTime().Add(ms)); wait > 0 {
			unix.Close(lock)
			continue
		}
		os.Remove(path)
		unix.Close(lock)
		return 0
	}
}
