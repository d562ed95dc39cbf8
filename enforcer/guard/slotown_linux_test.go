package guard

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sysprof/sysprof/internal/testutil"
)

// collectEnv makes the test binary another sysprof process that collects dead slots of the
// pins under its value (collectAt), as every run's setup does.
const collectEnv = "SYSPROF_GUARD_TEST_COLLECT"

func collectAt(root string) int {
	restore, err := SwapPinRoot(root)
	defer restore()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	o, err := openGuard()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer o.close()
	o.collectDead()
	return 0
}

// collectElsewhere runs collectDead in another process, in a pid namespace of its own when
// newNS (as a sysprof run under `unshare -pf` or in another sandbox does: no pid of this
// one's is visible to it).
func collectElsewhere(t *testing.T, root string, newNS bool) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), collectEnv+"="+root)
	if newNS {
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("collect dead slots in another process: %v\n%s", err, out)
	}
}

// Issue 23: concurrent runs each keep a complete record. A sysprof process in another pid
// namespace sees none of this one's pids: it took the slot of a live run for dead and freed
// it, the next run took it and guard.c reported that run's file denials only. The owner's
// lock keeps the slot, whatever pid namespace collects.
func TestGuardSlotOfALiveRunStaysAcrossPidNamespaces(t *testing.T) {
	testutil.RequireRoot(t)
	root := withPinRoot(t)
	t.Cleanup(SwapWarm(t.TempDir(), 10*time.Millisecond))
	g, err := Start(Config{Files: true})
	testutil.RequireNoErr(t, "start the guard", err)
	testutil.RequireNoErr(t, "guard setup", g.Wait())

	collectElsewhere(t, root, true)

	var owner uint64
	if err := g.objs.maps["slot_owner"].Lookup(uint32(g.slot), &owner); err != nil {
		t.Errorf("a sysprof process in another pid namespace freed the live run's slot %d: %v", g.slot, err)
	}
	// The next run takes another slot.
	g2, err := Start(Config{Files: true})
	testutil.RequireNoErr(t, "start a second guard", err)
	testutil.RequireNoErr(t, "second guard setup", g2.Wait())
	if g2.slot == g.slot {
		t.Errorf("the second run took the first run's slot %d", g.slot)
	}
	_, notes2 := g2.Close()
	_, notes := g.Close()
	for _, n := range append(notes, notes2...) {
		if strings.Contains(n, "may be missing") {
			t.Errorf("a run lost its record: %q", n)
		}
	}
	if g.Lost() != 0 || g2.Lost() != 0 {
		t.Errorf("lost records: %d and %d", g.Lost(), g2.Lost())
	}
}

// An owner that held the lock and is gone frees its slot, even when its pid now names a live
// process (pid reuse); an owner that holds it keeps the slot, even under a pid that is gone.
func TestGuardSlotOwnerIsItsLock(t *testing.T) {
	testutil.RequireRoot(t)
	root := withPinRoot(t)
	o, err := openGuard()
	testutil.RequireNoErr(t, "open the guard", err)
	defer o.close()
	done := exec.Command("true")
	testutil.RequireNoErr(t, "run true", done.Run())
	owners := o.maps["slot_owner"]

	// Slot 5: its owner died; its pid is this (live) process's now.
	testutil.RequireNoErr(t, "own slot 5", owners.Put(uint32(5), ownerValue(os.Getpid(), true)))
	// Slot 6: held by its lock under a pid that is gone (seen from another namespace).
	lock, held := o.tryLockSlot(6)
	if lock < 0 {
		t.Fatalf("lock slot 6 (held: %v)", held)
	}
	defer syscall.Close(lock)
	testutil.RequireNoErr(t, "own slot 6", owners.Put(uint32(6), ownerValue(done.Process.Pid, true)))

	for _, newNS := range []bool{false, true} {
		collectElsewhere(t, root, newNS)
		var v uint64
		if err := owners.Lookup(uint32(6), &v); err != nil {
			t.Errorf("the slot whose owner holds its lock was freed (collected in a new pid namespace: %v)", newNS)
		}
	}
	var v uint64
	if owners.Lookup(uint32(5), &v) == nil {
		t.Error("the slot of an owner that is gone stays taken under its reused pid")
	}
	// Another taker cannot take a slot whose lock is held.
	if fd, held := o.tryLockSlot(6); fd >= 0 || !held {
		t.Errorf("slot 6's lock taken twice (fd %d, held %v)", fd, held)
	}
}

// A warm slot's helper and its claimer compare pids (owner, claimer alive): only runs of the
// helper's pid namespace take it over. The helper holds the slot's lock while it lingers.
func TestGuardWarmSlotStaysInItsPidNamespace(t *testing.T) {
	testutil.RequireRoot(t)
	withPinRoot(t)
	t.Cleanup(SwapWarm(t.TempDir(), 2*time.Second))
	run := func() *Guard {
		g, err := Start(Config{Files: true})
		testutil.RequireNoErr(t, "start the guard", err)
		testutil.RequireNoErr(t, "guard setup", g.Wait())
		return g
	}
	g := run()
	g.Close()
	slots, err := PublishedSlots()
	if err != nil || len(slots) != 1 {
		t.Fatalf("published slots %+v: %v", slots, err)
	}
	w := slots[0]
	if w.Lock <= 0 || w.PidNS != pidNS() {
		t.Errorf("the published slot names no lock or another pid namespace: %+v", w)
	}
	o, err := openGuard()
	testutil.RequireNoErr(t, "open the guard", err)
	defer o.close()
	if fd, held := o.tryLockSlot(w.Slot); fd >= 0 || !held {
		t.Errorf("the lingering helper does not hold slot %d's lock (fd %d)", w.Slot, fd)
		if fd >= 0 {
			syscall.Close(fd)
		}
	}

	setNS := func(ns uint64) {
		unlock, err := lockWarm(false)
		testutil.RequireNoErr(t, "lock the warm slots", err)
		defer unlock()
		w.PidNS = ns
		if !publishWarm(warmPath(o.dir, w.Slot), w) {
			t.Fatal("rewrite the published slot")
		}
	}
	setNS(pidNS() + 1) // as published from another pid namespace
	before := WarmReuses()
	g2 := run()
	if g2.warm || WarmReuses() != before || g2.slot == int(w.Slot) {
		t.Errorf("a run took over the warm slot %d of another pid namespace (took slot %d, warm %v)", w.Slot, g2.slot, g2.warm)
	}
	g2.Close()
	setNS(pidNS())
	g3 := run()
	if !g3.warm {
		t.Errorf("a run did not take over the warm slot of its own pid namespace")
	}
	g3.Close()
}

// What slot ownership adds to a run (BENCHMARKS.md, issue 23): taking a slot's lock and
// letting it go; collectDead pays the same per slot in use, off the run's critical path.
func BenchmarkSlotLock(b *testing.B) {
	testutil.RequireRoot(b)
	root := filepath.Join(testutil.BPFFS(b), "sysprof")
	restore, err := SwapPinRoot(root)
	b.Cleanup(restore)
	testutil.RequireNoErr(b, "pins in the test's bpffs", err)
	o, err := openGuard()
	testutil.RequireNoErr(b, "open the guard", err)
	defer o.close()
	for b.Loop() {
		fd, _ := o.tryLockSlot(7)
		if fd < 0 {
			b.Fatal("lock slot 7")
		}
		syscall.Close(fd)
	}
}
