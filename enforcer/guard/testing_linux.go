package guard

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/sysprof/sysprof/internal/kernrun"
)

// Seams for the tests of packages that run the guard (the enforcer's run victims under it).

// SwapPinRoot keeps the pins under root from now on (a bpffs directory of the test's own) and
// returns what restores the old root, and why root cannot hold pins (nil: it can).
func SwapPinRoot(root string) (restore func(), err error) {
	saved, savedLocks := pinRoot, slotLockDir
	pinRoot = root
	// The slots' locks beside root's mount (a test's temporary directory), not in /run.
	slotLockDir = filepath.Join(filepath.Dir(filepath.Dir(root)), "guard-slots")
	_, err = pinDir()
	return func() { pinRoot, slotLockDir = saved, savedLocks }, err
}

// SwapWarm publishes warm slots in dir with helpers that linger for linger from now on, and
// returns what restores the old ones.
func SwapWarm(dir string, linger time.Duration) (restore func()) {
	savedDir, savedFor := warmDir, lingerFor
	warmDir, lingerFor = dir, linger
	return func() { warmDir, lingerFor = savedDir, savedFor }
}

// WarmReuses counts the runs of this process that took over a warm slot.
func WarmReuses() int64 { return warmReuses.Load() }

// FileSyscalls are every path syscall the file-denial program can watch.
func FileSyscalls() []string { return slices.Sorted(maps.Keys(fileOps())) }

// PublishedSlots are the warm slots published in the warm directory.
func PublishedSlots() ([]WarmSlot, error) {
	files, _ := filepath.Glob(filepath.Join(warmDir, "*-*"))
	var out []WarmSlot
	for _, f := range files {
		var w WarmSlot
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, &w); err != nil {
			return nil, fmt.Errorf("warm file %s: %w %q", f, err, b)
		}
		out = append(out, w)
	}
	return out, nil
}

// ClaimPublished marks the one published slot claimed by the process pid started at start (as
// a run that took it over does), under the warm lock.
func ClaimPublished(pid int, start uint64) error {
	unlock, err := lockWarm(false)
	if err != nil {
		return err
	}
	defer unlock()
	files, _ := filepath.Glob(filepath.Join(warmDir, "*-*"))
	if len(files) != 1 {
		return fmt.Errorf("published slots %v, want one", files)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		return err
	}
	var w WarmSlot
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	w.Claimer, w.ClaimerStart = pid, start
	if !publishWarm(files[0], w) {
		return errors.New("publish the claim")
	}
	return nil
}

// HoldSlotProgram attaches slot 0's pinned file program to every path syscall's exit, as a
// helper killed before it detached leaves it, until release.
func HoldSlotProgram() (release func(), err error) {
	o, err := openGuard()
	if err != nil {
		return nil, err
	}
	if !o.pinned() {
		o.close()
		return nil, errors.New("not pinned")
	}
	busy, err := o.fileProgram(0, false)
	if err != nil {
		o.close()
		return nil, err
	}
	var tps []tpLink
	release = func() {
		closeTracepoints(tps, nil)
		o.close()
	}
	for _, name := range FileSyscalls() {
		tp, err := kernrun.AttachTracepoint("syscalls", "sys_exit_"+name, busy, 1)
		if err != nil {
			release()
			return nil, err
		}
		if tp.Perf >= 0 {
			tps = append(tps, tp)
		}
	}
	return release, nil
}
