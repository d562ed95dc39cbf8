package guard

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/bpf"
	"github.com/sysprof/sysprof/internal/kernrun"
	"github.com/sysprof/sysprof/internal/testutil"
)

// The shapes cache_linux.go checks pins against are guard.c's.
func TestGuardObjectMatchesExpectations(t *testing.T) {
	spec, err := guardSpec()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range guardMaps() {
		got := spec.Maps[name]
		if got == nil {
			t.Errorf("guard.c has no map %s", name)
			continue
		}
		if got.Type != want.Type || got.KeySize != want.KeySize || got.ValueSize != want.ValueSize ||
			got.MaxEntries != want.MaxEntries || got.Flags != want.Flags {
			t.Errorf("map %s: guard.c %v %d/%d max %d flags %#x, expected %v %d/%d max %d flags %#x", name,
				got.Type, got.KeySize, got.ValueSize, got.MaxEntries, got.Flags,
				want.Type, want.KeySize, want.ValueSize, want.MaxEntries, want.Flags)
		}
	}
	inner := spec.Maps["rings"].InnerMap
	if r := ringSpec(); inner == nil || inner.Type != r.Type || inner.MaxEntries != r.MaxEntries {
		t.Errorf("rings' inner map %+v, expected %+v", inner, r)
	}
	if p := spec.Programs[fileProgram]; p == nil || p.Type != ebpf.TracePoint {
		t.Errorf("file program: %+v", p)
	}
	if len(spec.Programs) != 1 {
		t.Errorf("guard.c has %d programs: the pins keep only %s", len(spec.Programs), fileProgram)
	}
	for name := range spec.Maps {
		if strings.Contains(pinName(name), ".") || mapName(pinName(name)) != name {
			t.Errorf("map %s has no bpffs name", name)
		}
	}
}

// withPinRoot points the guard's pins at a bpffs instance of the test's own, so that no test
// depends on whether the host mounted /sys/fs/bpf.
func withPinRoot(t *testing.T) string {
	t.Helper()
	root := filepath.Join(testutil.BPFFS(t), "sysprof")
	restore, err := SwapPinRoot(root)
	t.Cleanup(restore)
	testutil.RequireNoErr(t, "pins in the test's bpffs", err)
	return root
}

// runsID names the runs map o opened or loaded: the same ID is the same pins.
func runsID(t *testing.T, o *guardObjs) ebpf.MapID {
	t.Helper()
	info, err := o.maps["runs"].Info()
	if err != nil {
		t.Fatal(err)
	}
	id, _ := info.ID()
	return id
}

// A second open uses the pins; pins of another build go; an unusable pin makes the next run
// load afresh and publish again.
func TestGuardPinsReusedAndRepaired(t *testing.T) {
	root := withPinRoot(t)
	stale := filepath.Join(root, "guard-00000000000000000000000000000000")
	if err := os.MkdirAll(stale, 0o700); err != nil {
		t.Fatal(err)
	}
	o1, err := openGuard()
	if err != nil {
		t.Fatal(err)
	}
	defer o1.close()
	if !o1.pinned() {
		t.Fatal("not pinned")
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("another build's pins are still there: %v", err)
	}
	first := runsID(t, o1)

	o2, err := openGuard()
	if err != nil {
		t.Fatal(err)
	}
	if !o2.pinned() || o2.dir != o1.dir || runsID(t, o2) != first {
		t.Errorf("the second open did not use the pins (%s, %s)", o1.dir, o2.dir)
	}
	o2.close()

	// A pin of the wrong kind where a map should be.
	if err := os.Remove(mapPin(o1.dir, "runs")); err != nil {
		t.Fatal(err)
	}
	wrong, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Array, KeySize: 4, ValueSize: 4, MaxEntries: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer wrong.Close()
	if err := wrong.Pin(mapPin(o1.dir, "runs")); err != nil {
		t.Fatal(err)
	}
	o3, err := openGuard()
	if err != nil {
		t.Fatal(err)
	}
	defer o3.close()
	if !o3.pinned() || runsID(t, o3) == first {
		t.Errorf("a broken pin was used, or nothing was published again")
	}
	want := guardMaps()["runs"]
	if err := want.Compatible(o3.maps["runs"]); err != nil {
		t.Errorf("runs: %v", err)
	}
	second := runsID(t, o3)

	// A pin missing, and a slot's file program pin that is not a program.
	if err := os.Remove(mapPin(o3.dir, "slot_cgid")); err != nil {
		t.Fatal(err)
	}
	o4, err := openGuard()
	if err != nil {
		t.Fatal(err)
	}
	defer o4.close()
	if !o4.pinned() || runsID(t, o4) == second {
		t.Errorf("a directory with a pin missing was used, or nothing was published again")
	}
	if err := wrong.Pin(filePin(o4.dir, 7)); err != nil {
		t.Fatal(err)
	}
	if p, err := o4.fileProgram(7, false); err != nil || p.Type() != ebpf.TracePoint {
		t.Errorf("slot 7's file program: %v %v", p, err)
	}
}

// Entries of runs that were killed go; those of a live run stay.
func TestGuardCollectsKilledRuns(t *testing.T) {
	withPinRoot(t)
	o, err := openGuard()
	if err != nil {
		t.Fatal(err)
	}
	defer o.close()
	cg, err := kernrun.NewCgroup()
	if err != nil {
		t.Fatal(err)
	}
	defer cg.Remove()
	done := exec.Command("true")
	if err := done.Run(); err != nil {
		t.Fatal(err)
	}
	deadPid, deadRun := uint64(done.Process.Pid), uint64(1)<<62|12345
	for _, id := range []uint64{deadRun, cg.ID} {
		if err := o.maps["runs"].Put(id, &bpf.GuardRunCfg{}); err != nil {
			t.Fatal(err)
		}
	}
	for slot, pid := range map[uint32]uint64{3: deadPid, 4: uint64(os.Getpid())} {
		if err := o.maps["slot_owner"].Put(slot, pid); err != nil {
			t.Fatal(err)
		}
	}
	o.collectDead()
	var cfg bpf.GuardRunCfg
	if o.maps["runs"].Lookup(deadRun, &cfg) == nil {
		t.Error("the killed run's entry is still there")
	}
	if err := o.maps["runs"].Lookup(cg.ID, &cfg); err != nil {
		t.Errorf("the live run's entry went: %v", err)
	}
	var pid uint64
	if o.maps["slot_owner"].Lookup(uint32(3), &pid) == nil {
		t.Error("the slot of a process that is gone is still taken")
	}
	if err := o.maps["slot_owner"].Lookup(uint32(4), &pid); err != nil {
		t.Errorf("the slot of a live process was freed: %v", err)
	}
}

// Where nothing mounted bpffs at pinRoot's parent (a fresh VM's /sys/fs/bpf), the first run
// mounts it there and pins; the next run opens those pins.
func TestGuardMountsBPFFS(t *testing.T) {
	testutil.RequireRoot(t)
	mnt := t.TempDir() // a plain directory, like /sys/fs/bpf before anything mounts it
	saved := pinRoot
	pinRoot = filepath.Join(mnt, "sysprof")
	t.Cleanup(func() {
		pinRoot = saved
		for {
			if ok, _ := kernrun.IsBPFFS(mnt); !ok || unix.Unmount(mnt, unix.MNT_DETACH) != nil {
				break
			}
		}
	})
	o1, err := openGuard()
	if err != nil {
		t.Fatal(err)
	}
	defer o1.close()
	if ok, err := kernrun.IsBPFFS(mnt); err != nil || !ok {
		t.Fatalf("no bpffs at %s after a run (%v)", mnt, err)
	}
	if !o1.pinned() {
		t.Fatal("the run did not pin in the bpffs it mounted")
	}
	o2, err := openGuard()
	if err != nil {
		t.Fatal(err)
	}
	defer o2.close()
	if !o2.pinned() || runsID(t, o2) != runsID(t, o1) {
		t.Error("the second run did not open the first run's pins")
	}
	// Mounted once: a second instance over the first would hide its pins.
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(mi), " "+mnt+" "); n != 1 {
		t.Errorf("%d mounts at %s, want 1", n, mnt)
	}
}

// A warm slot's links are checked against the id of the slot's pinned program, read straight
// from the pin: the same id cilium's loader gives, and an error for a pin that is a map.
func TestPinnedProgramID(t *testing.T) {
	withPinRoot(t)
	o, err := openGuard()
	if err != nil {
		t.Fatal(err)
	}
	defer o.close()
	if !o.pinned() {
		t.Fatal("not pinned")
	}
	prog, err := o.fileProgram(0, false)
	if err != nil {
		t.Fatal(err)
	}
	info, err := prog.Info()
	if err != nil {
		t.Fatal(err)
	}
	want, _ := info.ID()
	got, err := pinnedProgramID(filePin(o.dir, 0))
	if err != nil || got != want {
		t.Errorf("pinnedProgramID = %d, %v; want %d", got, err, want)
	}
	if id, err := pinnedProgramID(mapPin(o.dir, "runs")); err == nil {
		t.Errorf("a pinned map read as program %d", id)
	}
	if _, err := pinnedProgramID(filepath.Join(o.dir, "absent")); err == nil {
		t.Error("a missing pin read as a program")
	}
}

// A run whose slot another sysprof process took, or whose entry it removed, reported nothing
// from then on: its report must not pass for complete (slotTaken, counted as lost by Close).
func TestGuardSlotTakenIsSaid(t *testing.T) {
	withPinRoot(t)
	o, err := openGuard()
	if err != nil {
		t.Fatal(err)
	}
	defer o.close()
	cg, err := kernrun.NewCgroup()
	if err != nil {
		t.Fatal(err)
	}
	defer cg.Remove()
	g := &Guard{objs: o, cg: cg, slot: 2, inRuns: true}
	if err := o.maps["runs"].Put(cg.ID, &bpf.GuardRunCfg{Slot: 2}); err != nil {
		t.Fatal(err)
	}
	if err := o.maps["slot_cgid"].Put(uint32(2), cg.ID); err != nil {
		t.Fatal(err)
	}
	if s := g.slotTaken(); s != "" {
		t.Errorf("the run holds its slot, yet: %q", s)
	}
	if err := o.maps["slot_cgid"].Put(uint32(2), cg.ID+1); err != nil {
		t.Fatal(err)
	}
	if s := g.slotTaken(); !strings.Contains(s, "took the run's guard slot 2") {
		t.Errorf("another run's cgroup in the slot is not said: %q", s)
	}
	if err := o.maps["slot_cgid"].Put(uint32(2), cg.ID); err != nil {
		t.Fatal(err)
	}
	if err := o.maps["runs"].Delete(cg.ID); err != nil {
		t.Fatal(err)
	}
	if s := g.slotTaken(); !strings.Contains(s, "removed the run's entry") {
		t.Errorf("the run's entry gone is not said: %q", s)
	}
}
