package guard

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/kernrun"
)

// Warm slots: a run that starts while a finished run's file-denial program is still attached
// (its linger helper holds the links and perf events for lingerFor) takes that attachment over
// instead of attaching its own, so back-to-back runs never attach or detach (both wait for the
// kernel's global bpf_event_mutex, the detach for a grace period under it).
//
// Each slot's instance of the file program is attached with the slot as its cookie and reports
// for the run slot_cgid[slot] names (guard.c), so the attachment belongs to no run. When a run
// hands its links to the helper (handOff) it sets slot_cgid[slot] to 0, makes the helper the
// slot's owner and publishes the slot here: which syscalls are attached, the helper's pid and
// the numbers of its link and perf event fds. Under the lock (flock of warmDir/lock), a run
// whose syscalls are a subset of a published slot's claims it: it checks that the helper still
// owns the slot, takes its own references to every fd (pidfd_getfd: the attachment never depends
// on the helper), checks that the links attach this slot's pinned program, makes itself the
// owner and marks the file claimed by it. The helper stays: when the run ends it gives the slot
// back to the same helper (owner, a later deadline in the file) and closes its own copies, which
// detaches nothing, so back-to-back runs start no helper either (a Go process start, ~4 ms of
// CPU). Only when that helper is gone does the run hand off to a new one. A helper whose linger
// ends checks under the same lock: unclaimed and past its deadline, it removes the file and
// detaches as before; claimed by a live run, it waits on; claimed by a run that died, it
// detaches and frees the slot. Anything unexpected (no pins, no lock, a dead or foreign helper,
// a stale file) leaves the run to attach cold.

// warmDir holds the lock and one file per published slot (named after the record's layout,
// the pin directory and the slot: pins of another build, boot or pin root never match, nor
// does a build that writes WarmSlot differently).
var warmDir = "/run/sysprof/guard-warm"

// warmLayout names WarmSlot's layout (v2: the helper's start time; v3: its pid namespace and
// the slot's lock).
const warmLayout = "v3"

// warmReuses counts the runs of this process that took over a warm slot (for tests).
var warmReuses atomic.Int64

// WarmSlot is a published slot.
type WarmSlot struct {
	kernrun.Holder          // the helper that holds the fds
	Slot           uint32   `json:"slot"`  // ring slot and cookie of the links
	Names          []string `json:"names"` // the syscalls asked for (those this kernel has are attached)
	Links          []int    `json:"links"` // fd numbers in the helper
	Perfs          []int    `json:"perfs"`
	// Until (unix ns): a run gave the slot back; the helper lingers until then.
	Until int64 `json:"until,omitempty"`
	// Claimer is the pid of the run that holds the slot (0: free), ClaimerStart its start time
	// (/proc/PID/stat), so that a reused pid does not pass for it.
	Claimer      int    `json:"claimer,omitempty"`
	ClaimerStart uint64 `json:"claimer_start,omitempty"`
	// PidNS is the helper's pid namespace: its pids (and a claimer's) mean nothing in another,
	// so only runs of the same one claim the slot. Lock is the fd in the helper that holds the
	// slot's lock (0: none; slotown_linux.go).
	PidNS uint64 `json:"pidns"`
	Lock  int    `json:"lock,omitempty"`
}

// warmKeeper is the helper of a slot a run took over: the run gives the slot back to it.
type warmKeeper struct {
	pidfd int
	path  string
	w     WarmSlot // as published, with the helper's fd numbers
}

func warmPath(pinDir string, slot uint32) string {
	return filepath.Join(warmDir, warmPrefix(pinDir)+strconv.Itoa(int(slot)))
}

// warmPrefix names the files of slots of the pins in pinDir.
func warmPrefix(pinDir string) string {
	return warmLayout + "_" + strings.ReplaceAll(strings.Trim(pinDir, "/"), "/", "_") + "-"
}

// warmEscrow is where slots are published (kernrun's fd escrow).
func warmEscrow() kernrun.Escrow { return kernrun.Escrow{Dir: warmDir} }

// lockWarm takes the warm slots' lock (creating warmDir when create); the returned func
// releases it.
func lockWarm(create bool) (func(), error) { return warmEscrow().Lock(create) }

// publishWarm records a slot the helper pid holds (under the lock, with the slot's owner set
// to the helper). It reports whether the slot was published. The slot's file, once there, is
// rewritten in place (every read of it is under the lock): a claim and a give-back each
// rewrite it, and a rename over it costs ~1 ms on the way out of a run (kernrun.Escrow.Rewrite).
func publishWarm(path string, w WarmSlot) bool {
	e := warmEscrow()
	return e.Rewrite(filepath.Base(path), w) == nil || e.Publish(filepath.Base(path), w) == nil
}

// readWarm reads the slot published in path.
func readWarm(path string, w *WarmSlot) error { return warmEscrow().Read(filepath.Base(path), w) }

// claimWarm takes over a published slot of o's pins whose syscalls include names, for a run
// of this process. It returns the slot, its links and the names attached, or ok false (then
// nothing changed for this run).
func claimWarm(o *guardObjs, names []string) (slot int, tps []tpLink, attached []string, keeper *warmKeeper, lock int, ok bool) {
	if !o.pinned() || pidNS() == 0 {
		return -1, nil, nil, nil, -1, false
	}
	unlock, err := lockWarm(false)
	if err != nil {
		return -1, nil, nil, nil, -1, false // nothing published
	}
	defer unlock()
	for _, name := range warmEscrow().Files(warmPrefix(o.dir) + "*") {
		f := filepath.Join(warmDir, name)
		var w WarmSlot
		if readWarm(f, &w) != nil || w.Slot >= ringSlots || f != warmPath(o.dir, w.Slot) ||
			len(w.Links) != len(w.Perfs) {
			os.Remove(f)
			continue
		}
		if w.Claimer != 0 || w.PidNS != pidNS() || !subset(names, w.Names) {
			continue
		}
		tps, keeper, lock, err := takeWarm(o, f, &w)
		if err != nil {
			os.Remove(f) // stale: its helper is gone or not ours
			continue
		}
		return int(w.Slot), tps, w.Names, keeper, lock, true
	}
	return -1, nil, nil, nil, -1, false
}

// takeWarm takes the slot w publishes in path (see claimWarm; under the lock): the fds, then
// the ownership, then it marks the file claimed and returns the helper to give the slot back to
// (nil when the mark failed: then the file is removed and the helper ended, as it cannot tell).
func takeWarm(o *guardObjs, path string, w *WarmSlot) ([]tpLink, *warmKeeper, int, error) {
	owners := o.maps["slot_owner"]
	locked := w.Lock > 0
	var pid uint64
	if err := owners.Lookup(w.Slot, &pid); err != nil || pid != ownerValue(w.Pid, locked) || w.Pid <= 0 {
		return nil, nil, -1, errors.New("the helper does not own the slot")
	}
	if _, err := os.Stat(filePin(o.dir, w.Slot)); err != nil {
		return nil, nil, -1, err // the links cannot be of this slot's pinned program
	}
	progID, err := pinnedProgramID(filePin(o.dir, w.Slot))
	if err != nil {
		return nil, nil, -1, err
	}
	// Links then perf events, each its own reference (the attachment never depends on the
	// helper), then the slot's lock (this run holds it too while it owns the slot).
	nums := slices.Concat(w.Links, w.Perfs)
	if locked {
		nums = append(nums, w.Lock)
	}
	pidfd, fds, err := kernrun.Take(w.Holder, nums)
	if err != nil {
		return nil, nil, -1, err
	}
	lock := -1
	if locked {
		lock = fds[len(fds)-1]
	}
	n := len(w.Links)
	tps := make([]tpLink, n)
	for i := range tps {
		tps[i] = tpLink{Link: fds[i], Perf: fds[n+i]}
	}
	fail := func(err error) ([]tpLink, *warmKeeper, int, error) {
		unix.Close(pidfd)
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, nil, -1, err
	}
	for i, tp := range tps {
		if !slotLink(tp.Link, progID, w) {
			return fail(fmt.Errorf("fd %d of %d is not a link of slot %d's program to a syscall exit it publishes", w.Links[i], w.Pid, w.Slot))
		}
	}
	if locked && !heldLock(lock, slotLockPath(o.dir, w.Slot)) {
		return fail(fmt.Errorf("fd %d of %d does not hold slot %d's lock", w.Lock, w.Pid, w.Slot))
	}
	if err := owners.Update(w.Slot, ownerValue(os.Getpid(), locked), ebpf.UpdateExist); err != nil {
		return fail(err)
	}
	warmReuses.Add(1)
	claimed := *w
	claimed.Until, claimed.Claimer = 0, os.Getpid()
	start, known := kernrun.ProcStart(os.Getpid())
	claimed.ClaimerStart = start
	if !known || !publishWarm(path, claimed) {
		os.Remove(path)
		_ = unix.PidfdSendSignal(pidfd, unix.SIGKILL, nil, 0)
		unix.Close(pidfd)
		return tps, nil, lock, nil
	}
	return tps, &warmKeeper{pidfd: pidfd, path: path, w: *w}, lock, nil
}

// giveBack returns the slot to its helper, lingering lingerFor from now, unless the helper is
// gone or the file is no longer this run's claim. Under the lock. It reports whether the helper
// has the slot again (then the caller closes its own fds: the helper's keep the attachment).
func (k *warmKeeper) giveBack(owners, cgids *ebpf.Map) bool {
	defer unix.Close(k.pidfd)
	unlock, err := lockWarm(false)
	if err != nil {
		return false
	}
	defer unlock()
	var w WarmSlot
	if readWarm(k.path, &w) != nil || w.Pid != k.w.Pid || w.Slot != k.w.Slot || w.Claimer != os.Getpid() {
		return false
	}
	if unix.PidfdSendSignal(k.pidfd, 0, nil, 0) != nil {
		os.Remove(k.path) // the helper is gone: so is what it held
		return false
	}
	_ = cgids.Update(k.w.Slot, uint64(0), ebpf.UpdateAny)
	if owners.Update(k.w.Slot, ownerValue(k.w.Pid, k.w.Lock > 0), ebpf.UpdateExist) != nil {
		return false
	}
	w = k.w
	w.Until, w.Claimer, w.ClaimerStart = time.Now().Add(lingerFor).UnixNano(), 0, 0
	if !publishWarm(k.path, w) {
		// The helper owns the slot but cannot see the deadline: it detaches when it wakes.
		os.Remove(k.path)
	}
	return true
}

// slotLink reports whether the link fd attaches program prog to the exit tracepoint of one of
// w's syscalls with w's slot as the cookie.
func slotLink(fd int, prog ebpf.ProgramID, w *WarmSlot) bool {
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return false
	}
	l, err := link.NewFromFD(dup) // closing it drops this reference only
	if err != nil {
		return false
	}
	defer l.Close()
	info, err := l.Info()
	if err != nil || info.Type != link.PerfEventType || info.Program != prog {
		return false
	}
	pe := info.PerfEvent()
	if pe == nil {
		return false
	}
	tp := pe.Tracepoint()
	return tp != nil && tp.Cookie == uint64(w.Slot) && slices.Contains(w.Names, strings.TrimPrefix(tp.Tracepoint, "sys_exit_"))
}

// pinnedProgramID is the id of the tracepoint program pinned at path, asked of the kernel
// directly (BPF_OBJ_GET, BPF_OBJ_GET_INFO_BY_FD): ebpf.LoadPinnedProgram and Info also parse
// the program's fdinfo twice, ~1 ms of CPU a warm run. A pin that is not a tracepoint program
// is an error.
func pinnedProgramID(path string) (ebpf.ProgramID, error) {
	name, err := unix.BytePtrFromString(path)
	if err != nil {
		return 0, err
	}
	get := struct {
		pathname  uint64
		bpfFD     uint32
		fileFlags uint32
	}{pathname: uint64(uintptr(unsafe.Pointer(name)))}
	r, _, errno := unix.Syscall(unix.SYS_BPF, unix.BPF_OBJ_GET, uintptr(unsafe.Pointer(&get)), unsafe.Sizeof(get))
	runtime.KeepAlive(name)
	if errno != 0 {
		return 0, fmt.Errorf("open the pinned program %s: %w", path, errno)
	}
	fd := int(r)
	defer unix.Close(fd)
	// A map's info has its type and id in the same places: the fd must be a program's.
	if kind, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd)); err != nil || kind != "anon_inode:bpf-prog" {
		return 0, fmt.Errorf("%s is not a pinned program (%q)", path, kind)
	}
	var info [64]byte // struct bpf_prog_info's head: type, id, ...
	get2 := struct {
		bpfFD   uint32
		infoLen uint32
		info    uint64
	}{uint32(fd), uint32(len(info)), uint64(uintptr(unsafe.Pointer(&info[0])))}
	_, _, errno = unix.Syscall(unix.SYS_BPF, unix.BPF_OBJ_GET_INFO_BY_FD, uintptr(unsafe.Pointer(&get2)), unsafe.Sizeof(get2))
	runtime.KeepAlive(&info)
	if errno != 0 {
		return 0, fmt.Errorf("the pinned program %s: %w", path, errno)
	}
	if typ := binary.NativeEndian.Uint32(info[0:]); typ != uint32(ebpf.TracePoint) {
		return 0, fmt.Errorf("the pinned program %s is of type %d, not a tracepoint program", path, typ)
	}
	return ebpf.ProgramID(binary.NativeEndian.Uint32(info[4:])), nil
}

func subset(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// lingerWarm is the helper of a published slot (see Helper): it lingers for ms, and then
// for as long as the slot is claimed by a live run or a run that gave it back set a later
// deadline; then it withdraws the slot, detaches the links and releases the slot.
func lingerWarm(path string, links, perf []int, owners *ebpf.Map, slot uint32, ms int, locked bool) {
	linger := time.Duration(ms) * time.Millisecond
	for wait := linger; ; {
		time.Sleep(wait)
		unlock, err := lockWarm(false) // gone: then nobody can claim the slot either
		var pid uint64
		mine := owners.Lookup(slot, &pid) == nil && pid == ownerValue(os.Getpid(), locked)
		var w WarmSlot
		published := readWarm(path, &w) == nil && w.Pid == os.Getpid()
		if err == nil && published {
			switch {
			case w.Claimer != 0 && (kernrun.Holder{Pid: w.Claimer, Start: w.ClaimerStart}).Alive():
				// A run holds the slot and gives it back when done.
				unlock()
				wait = linger
				continue
			case w.Claimer == 0 && mine && time.Now().UnixNano() < w.Until:
				unlock()
				wait = time.Until(time.Unix(0, w.Until))
				continue
			case w.Claimer != 0 && pid == ownerValue(w.Claimer, locked):
				// The claimer died holding the slot: nobody reports through it any more.
				mine = owners.Update(slot, ownerValue(os.Getpid(), locked), ebpf.UpdateExist) == nil
			}
		}
		if mine || published {
			os.Remove(path)
		}
		if err == nil {
			unlock()
		}
		if !mine {
			// Another process owns the slot (a run that could not give it back handed it to a
			// new helper): its copies keep the attachment; closing these detaches nothing.
			return
		}
		closeConcurrently(links)
		owners.Delete(slot)
		for _, fd := range perf {
			unix.Close(fd)
		}
		return
	}
}
