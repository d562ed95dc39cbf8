package guard

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Slot ownership (issue 23). slot_owner[slot] names the process that owns a slot, but a bare
// pid cannot say whether that owner is alive: a sysprof in another pid namespace sees no
// such pid (kill: ESRCH) and so freed the slots of live runs outside it, whose next taker then
// pointed slot_cgid at its own cgroup (the run lost every file denial from then on), and a
// reused pid passes for a dead owner. So an owner also holds an flock on the slot's lock file
// for as long as it owns the slot: the run, then its linger helper, and a run that takes a
// warm slot over all hold one open file description (the fd is passed on, never reopened), so
// the lock is free exactly when none of them is alive, in any pid namespace. A slot is taken
// lock first and freed by collectDead only while collectDead holds the free lock.

// ownerLocked marks slot_owner values whose owner holds the slot's lock (the pid is in the
// low 32 bits: an older build's kill(pid, 0) still reads the pid).
const ownerLocked = uint64(1) << 32

// ownerValue is pid's slot_owner value, with the lock held or not.
func ownerValue(pid int, locked bool) uint64 {
	v := uint64(uint32(pid))
	if locked {
		v |= ownerLocked
	}
	return v
}

// slotLockDir holds the slots' lock files (named after the pin directory and the slot).
var slotLockDir = "/run/sysprof/guard-slots"

func slotLockPath(pinDir string, slot uint32) string {
	return filepath.Join(slotLockDir, strings.ReplaceAll(strings.Trim(pinDir, "/"), "/", "_")+"-"+strconv.Itoa(int(slot)))
}

// tryLockSlot takes the lock of o's slot without waiting: the fd that holds it, or -1 when
// another process holds it or no lock file can be made (held reports which).
func (o *guardObjs) tryLockSlot(slot uint32) (fd int, held bool) {
	if !o.pinned() {
		return -1, false
	}
	if err := os.MkdirAll(slotLockDir, 0o700); err != nil {
		return -1, false
	}
	fd, err := unix.Open(slotLockPath(o.dir, slot), unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return -1, false
	}
	for {
		err = unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		unix.Close(fd)
		return -1, err == unix.EWOULDBLOCK
	}
	return fd, false
}

// initPidNS: this process sees every pid (the initial pid namespace), so kill(pid, 0) ==
// ESRCH means the pid is gone.
var initPidNS = sync.OnceValue(func() bool {
	var st unix.Stat_t
	return unix.Stat("/proc/self/ns/pid", &st) == nil && st.Ino == 0xEFFFFFFC // PROC_PID_INIT_INO
})

// pidNS names this process's pid namespace (0: unknown).
var pidNS = sync.OnceValue(func() uint64 {
	var st unix.Stat_t
	if unix.Stat("/proc/self/ns/pid", &st) != nil {
		return 0
	}
	return st.Ino
})

// ownerGone reports whether the owner recorded as v is gone, given that the slot's lock is
// free: an owner that holds the lock is gone with it; one that does not (an older build's)
// only when its pid is gone, which only the initial pid namespace can tell.
func ownerGone(v uint64) bool {
	if v == 0 || v&ownerLocked != 0 {
		return true
	}
	return initPidNS() && unix.Kill(int(uint32(v)), 0) == unix.ESRCH
}

// heldLock reports whether fd is path's file, locked (held through fd: the lock fd a run takes
// from a helper).
func heldLock(fd int, path string) bool {
	var a, b unix.Stat_t
	if unix.Fstat(fd, &a) != nil || unix.Stat(path, &b) != nil || a.Dev != b.Dev || a.Ino != b.Ino {
		return false
	}
	// A new open file description of it cannot take the lock fd's holders hold.
	other, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return false
	}
	defer unix.Close(other)
	return unix.Flock(other, unix.LOCK_EX|unix.LOCK_NB) == unix.EWOULDBLOCK
}
