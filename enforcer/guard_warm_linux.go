package enforcer

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"
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
// owner, removes the file and kills the helper (whose copies close without detaching anything:
// the run holds the attachment). A helper whose linger ends unclaimed checks under the same lock
// that it still owns the slot, removes the file and detaches as before. Anything unexpected
// (no pins, no lock, a dead or foreign helper, a stale file) leaves the run to attach cold.

// warmDir holds the lock and one file per published slot (named after the pin directory and
// the slot: pins of another build, boot or pin root never match).
var warmDir = "/run/sysprof/guard-warm"

// warmReuses counts the runs of this process that took over a warm slot (for tests).
var warmReuses atomic.Int64

// warmSlot is a published slot.
type warmSlot struct {
	Pid   int      `json:"pid"`   // the helper that holds the fds
	Slot  uint32   `json:"slot"`  // ring slot and cookie of the links
	Names []string `json:"names"` // the syscalls asked for (those this kernel has are attached)
	Links []int    `json:"links"` // fd numbers in the helper
	Perfs []int    `json:"perfs"`
}

func warmPath(pinDir string, slot uint32) string {
	return filepath.Join(warmDir, warmPrefix(pinDir)+strconv.Itoa(int(slot)))
}

// warmPrefix names the files of slots of the pins in pinDir.
func warmPrefix(pinDir string) string {
	return strings.ReplaceAll(strings.Trim(pinDir, "/"), "/", "_") + "-"
}

// lockWarm takes the warm slots' lock (creating warmDir when create); the returned func
// releases it.
func lockWarm(create bool) (func(), error) {
	if create {
		if err := os.MkdirAll(warmDir, 0o700); err != nil {
			return nil, err
		}
	}
	fd, err := unix.Open(filepath.Join(warmDir, "lock"), unix.O_RDWR|unix.O_CREAT|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err = unix.Flock(fd, unix.LOCK_EX)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	return func() { unix.Close(fd) }, nil
}

// publishWarm records a slot the helper pid holds (under the lock, with the slot's owner set
// to the helper). It reports whether the slot was published.
func publishWarm(path string, w warmSlot) bool {
	b, err := json.Marshal(w)
	if err != nil {
		return false
	}
	return os.WriteFile(path, b, 0o600) == nil
}

// claimWarm takes over a published slot of o's pins whose syscalls include names, for a run
// of this process. It returns the slot, its links and the names attached, or ok false (then
// nothing changed for this run).
func claimWarm(o *guardObjs, names []string) (slot int, tps []tpLink, attached []string, ok bool) {
	if !o.pinned() {
		return -1, nil, nil, false
	}
	unlock, err := lockWarm(false)
	if err != nil {
		return -1, nil, nil, false // nothing published
	}
	defer unlock()
	files, _ := filepath.Glob(filepath.Join(warmDir, warmPrefix(o.dir)+"*"))
	for _, f := range files {
		var w warmSlot
		b, err := os.ReadFile(f)
		if err != nil || json.Unmarshal(b, &w) != nil || w.Slot >= ringSlots || f != warmPath(o.dir, w.Slot) ||
			len(w.Links) != len(w.Perfs) {
			os.Remove(f)
			continue
		}
		if !subset(names, w.Names) {
			continue
		}
		tps, err := takeWarm(o, &w)
		if err != nil {
			os.Remove(f) // stale: its helper is gone or not ours
			continue
		}
		return int(w.Slot), tps, w.Names, true
	}
	return -1, nil, nil, false
}

// takeWarm takes the slot w publishes (see claimWarm; under the lock): the fds, then the
// ownership, then it removes the file and ends the helper.
func takeWarm(o *guardObjs, w *warmSlot) ([]tpLink, error) {
	owners := o.maps["slot_owner"]
	var pid uint64
	if err := owners.Lookup(w.Slot, &pid); err != nil || pid != uint64(w.Pid) || w.Pid <= 0 {
		return nil, errors.New("the helper does not own the slot")
	}
	if _, err := os.Stat(filePin(o.dir, w.Slot)); err != nil {
		return nil, err // the links cannot be of this slot's pinned program
	}
	prog, err := o.fileProgram(w.Slot, false)
	if err != nil {
		return nil, err
	}
	pinfo, err := prog.Info()
	if err != nil {
		return nil, err
	}
	progID, ok := pinfo.ID()
	if !ok {
		return nil, errors.New("no id for the slot's program")
	}
	pidfd, err := unix.PidfdOpen(w.Pid, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(pidfd)
	var tps []tpLink
	fail := func(err error) ([]tpLink, error) {
		for _, tp := range tps {
			closeFD(tp.link)
			closeFD(tp.perf)
		}
		return nil, err
	}
	for i := range w.Links {
		// pidfd_getfd's fds are close-on-exec.
		l, err := unix.PidfdGetfd(pidfd, w.Links[i], 0)
		if err != nil {
			return fail(err)
		}
		p, err := unix.PidfdGetfd(pidfd, w.Perfs[i], 0)
		if err != nil {
			unix.Close(l)
			return fail(err)
		}
		tps = append(tps, tpLink{perf: p, link: l})
		if !slotLink(l, progID, w) {
			return fail(fmt.Errorf("fd %d of %d is not a link of slot %d's program to a syscall exit it publishes", w.Links[i], w.Pid, w.Slot))
		}
	}
	if err := owners.Update(w.Slot, uint64(os.Getpid()), ebpf.UpdateExist); err != nil {
		return fail(err)
	}
	os.Remove(warmPath(o.dir, w.Slot))
	_ = unix.PidfdSendSignal(pidfd, unix.SIGKILL, nil, 0)
	warmReuses.Add(1)
	return tps, nil
}

func closeFD(fd int) {
	if fd >= 0 {
		unix.Close(fd)
	}
}

// slotLink reports whether the link fd attaches program prog to the exit tracepoint of one of
// w's syscalls with w's slot as the cookie.
func slotLink(fd int, prog ebpf.ProgramID, w *warmSlot) bool {
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

func subset(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// lingerWarm is the helper of a published slot (see lingerStage): after ms, unless a run has
// claimed the slot (then it was killed, or it finds another owner), it withdraws the slot,
// detaches the links and releases the slot.
func lingerWarm(path string, links, perf []int, owners *ebpf.Map, slot uint32, sleep func()) {
	sleep()
	unlock, err := lockWarm(false) // gone: then nobody can claim the slot either
	var pid uint64
	mine := owners.Lookup(slot, &pid) == nil && pid == uint64(os.Getpid())
	if mine && strings.HasPrefix(path, warmDir+"/") {
		os.Remove(path)
	}
	if err == nil {
		unlock()
	}
	if !mine {
		return // claimed: the run holds the attachment; closing these detaches nothing
	}
	closeConcurrently(links)
	owners.Delete(slot)
	for _, fd := range perf {
		unix.Close(fd)
	}
}
