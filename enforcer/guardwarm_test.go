package enforcer

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/enforcer/guard"
	"github.com/sysprof/sysprof/internal/kernrun"
)

// withWarm gives the test warm slots of its own (pins and warm files) and a linger long enough
// that the next run surely starts within it.
func withWarm(t *testing.T) { t.Helper(); withWarmFor(t, 10*time.Second) }

// withWarmFor is withWarm with helpers that linger for linger.
func withWarmFor(t *testing.T, linger time.Duration) {
	t.Helper()
	withPinRoot(t)
	restore := guard.SwapWarm(t.TempDir(), linger)
	t.Cleanup(func() {
		for _, w := range warmFiles(t) {
			unix.Kill(w.Pid, unix.SIGKILL) // the helper still lingering
		}
		restore()
	})
}

// warmFiles are the published slots (helper pids).
func warmFiles(t *testing.T) []guard.WarmSlot {
	t.Helper()
	ws, err := guard.PublishedSlots()
	if err != nil {
		t.Fatal(err)
	}
	return ws
}

// slotAfterRun runs the victim once (a read of the hidden credential) and returns the one slot
// its helper published.
func slotAfterRun(t *testing.T, f *fsFixture) guard.WarmSlot {
	t.Helper()
	if o := f.run(t, f.profile, false, "read="+f.secret); o.err != nil || o.code != 0 {
		t.Fatalf("run 1: %s", o)
	}
	ws := warmFiles(t)
	if len(ws) != 1 {
		t.Fatalf("published slots after run 1: %+v", ws)
	}
	return ws[0]
}

// A run that starts while the previous run's file program lingers takes it over (no attach) and
// still reports its own denials, and only its own.
func TestGuardWarmSlotReused(t *testing.T) {
	withWarm(t)
	f := newFSFixture(t)
	src := filepath.Join(f.work, "src.txt")
	o1 := f.run(t, f.profile, false, "write="+src)
	if o1.err != nil || o1.code != 0 || o1.fileDenial(src, "write") == nil {
		t.Fatalf("run 1: %s", o1)
	}
	ws := warmFiles(t)
	if len(ws) != 1 {
		t.Fatalf("published slots after run 1: %+v", ws)
	}
	before := guard.WarmReuses()
	o2 := f.run(t, f.profile, false, "read="+f.secret)
	if o2.err != nil || o2.code != 0 {
		t.Fatalf("run 2: %s", o2)
	}
	if guard.WarmReuses() != before+1 {
		t.Errorf("run 2 did not take over run 1's slot")
	}
	if o2.fileDenial(f.secret, "read") == nil || len(o2.rep.Denials) != 1 {
		t.Errorf("run 2 reported %+v, want only its own denial", o2.rep.Denials)
	}
	// Run 2 gave the slot back to run 1's helper: no helper was started for it.
	ws2 := warmFiles(t)
	if len(ws2) != 1 || ws2[0].Slot != ws[0].Slot || ws2[0].Pid != ws[0].Pid || ws2[0].Claimer != 0 || ws2[0].Until <= time.Now().UnixNano() {
		t.Errorf("published slots after run 2: %+v, want run 1's helper's (%+v), free, with a deadline ahead", ws2, ws)
	}
	if unix.Kill(ws[0].Pid, 0) != nil {
		t.Errorf("run 1's helper %d is gone", ws[0].Pid)
	}
	o3 := f.run(t, f.profile, false, "write="+src)
	if o3.err != nil || o3.code != 0 || o3.fileDenial(src, "write") == nil || len(o3.rep.Denials) != 1 {
		t.Errorf("run 3: %s", o3)
	}
	if guard.WarmReuses() != before+2 {
		t.Errorf("run 3 did not take over run 2's slot")
	}
}

// A published slot whose helper was killed is not used: the run attaches afresh and observes
// all the same.
func TestGuardWarmSlotHelperKilled(t *testing.T) {
	withWarm(t)
	f := newFSFixture(t)
	first := slotAfterRun(t, f)
	if err := unix.Kill(first.Pid, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for unix.Kill(first.Pid, 0) == nil { // until reaped (this process is its parent)
		time.Sleep(5 * time.Millisecond)
	}
	before := guard.WarmReuses()
	o2 := f.run(t, f.profile, false, "read="+f.secret)
	if o2.err != nil || o2.code != 0 || o2.fileDenial(f.secret, "read") == nil || len(o2.rep.Denials) != 1 {
		t.Fatalf("run 2: %s", o2)
	}
	if guard.WarmReuses() != before {
		t.Error("run 2 took over the slot of a killed helper")
	}
}

// An audit run needs every path syscall: a slot attached for fewer is not taken.
func TestGuardWarmSlotTooNarrowForAudit(t *testing.T) {
	withWarm(t)
	f := newFSFixture(t)
	first := slotAfterRun(t, f)
	if len(first.Names) == len(guard.FileSyscalls()) {
		t.Fatal("the fixture's profile allows every path syscall: this test needs one it refuses")
	}
	before := guard.WarmReuses()
	var stdout, stderr bytes.Buffer
	rep, code, err := Run(context.Background(), Options{
		Profile: f.profile, Command: []string{f.victim, "read=" + f.secret}, Dir: f.work, Vars: f.vars,
		Audit: true, Stdout: &stdout, Stderr: &stderr,
	})
	o2 := runOut{rep, code, err, stdout.String(), stderr.String()}
	if err != nil || code != 0 || o2.fileDenial(f.secret, "read") == nil {
		t.Fatalf("audit run: %s", o2)
	}
	if guard.WarmReuses() != before {
		t.Errorf("the audit run took over a slot attached for %v only", first.Names)
	}
}

// A helper that dies while a run holds its slot: the run hands off to a new helper when it ends,
// and the next run takes that one's slot over.
func TestGuardWarmSlotHelperDiesWhileClaimed(t *testing.T) {
	withWarm(t)
	f := newFSFixture(t)
	first := slotAfterRun(t, f)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	before := guard.WarmReuses()
	go func() {
		_, _, err := Run(ctx, Options{Profile: f.profile, Command: []string{f.victim, "pause"}, Dir: f.work, Vars: f.vars, Stdout: w, Stderr: w})
		w.Close()
		done <- err
	}()
	if line, err := bufio.NewReader(r).ReadString('\n'); err != nil || line != "paused\n" {
		t.Fatalf("run 2 did not start: %q %v", line, err)
	}
	if guard.WarmReuses() != before+1 {
		t.Fatal("run 2 did not take over run 1's slot")
	}
	if c := warmFiles(t); len(c) != 1 || c[0].Claimer != os.Getpid() || c[0].ClaimerStart == 0 {
		t.Errorf("slot while run 2 holds it: %+v, want claimed by this process", c)
	}
	unix.Kill(first.Pid, unix.SIGKILL)
	for unix.Kill(first.Pid, 0) == nil { // until reaped (this process is its parent)
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run 2: %v", err)
	}
	ws2 := warmFiles(t)
	if len(ws2) != 1 || ws2[0].Pid == first.Pid || ws2[0].Claimer != 0 {
		t.Fatalf("published slots after run 2: %+v, want a new helper's", ws2)
	}
	o3 := f.run(t, f.profile, false, "read="+f.secret)
	if o3.err != nil || o3.code != 0 || o3.fileDenial(f.secret, "read") == nil || len(o3.rep.Denials) != 1 {
		t.Fatalf("run 3: %s", o3)
	}
	if guard.WarmReuses() != before+2 {
		t.Error("run 3 did not take over the new helper's slot")
	}
}

// A helper whose slot is claimed by a run that died (killed before it could give the slot
// back) detaches and withdraws the slot instead of waiting for it forever.
func TestGuardWarmSlotClaimerDied(t *testing.T) {
	withWarmFor(t, 200*time.Millisecond)
	f := newFSFixture(t)
	first := slotAfterRun(t, f)
	dead := exec.Command("sleep", "30")
	if err := dead.Start(); err != nil {
		t.Fatal(err)
	}
	start, ok := kernrun.ProcStart(dead.Process.Pid)
	if !ok {
		t.Fatal("no start time of a running child")
	}
	dead.Process.Kill()
	dead.Wait()
	if err := guard.ClaimPublished(dead.Process.Pid, start); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for unix.Kill(first.Pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("the helper %d still waits for a dead claimer", first.Pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if left := warmFiles(t); len(left) != 0 {
		t.Errorf("slots still published: %+v", left)
	}
}
