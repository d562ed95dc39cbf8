package enforcer

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// withWarm gives the test warm slots of its own (pins and warm files) and a linger long enough
// that the next run surely starts within it.
func withWarm(t *testing.T) {
	t.Helper()
	withPinRoot(t)
	savedDir, savedFor := warmDir, lingerFor
	warmDir, lingerFor = t.TempDir(), 10*time.Second
	t.Cleanup(func() {
		for _, w := range warmFiles(t) {
			unix.Kill(w.Pid, unix.SIGKILL) // the helper still lingering
		}
		warmDir, lingerFor = savedDir, savedFor
	})
}

// warmFiles are the published slots (helper pids).
func warmFiles(t *testing.T) []warmSlot {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(warmDir, "*-*"))
	var out []warmSlot
	for _, f := range files {
		var w warmSlot
		b, err := os.ReadFile(f)
		if err != nil || json.Unmarshal(b, &w) != nil {
			t.Fatalf("warm file %s: %v %q", f, err, b)
		}
		out = append(out, w)
	}
	return out
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
	before := warmReuses.Load()
	o2 := f.run(t, f.profile, false, "read="+f.secret)
	if o2.err != nil || o2.code != 0 {
		t.Fatalf("run 2: %s", o2)
	}
	if warmReuses.Load() != before+1 {
		t.Errorf("run 2 did not take over run 1's slot")
	}
	if o2.fileDenial(f.secret, "read") == nil || len(o2.rep.Denials) != 1 {
		t.Errorf("run 2 reported %+v, want only its own denial", o2.rep.Denials)
	}
	// Run 1's helper is gone (killed by the claim) and run 2's published the slot again.
	if unix.Kill(ws[0].Pid, 0) == nil {
		if b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(ws[0].Pid), "cmdline")); err == nil && len(b) > 0 {
			t.Errorf("run 1's helper %d still lingers: %q", ws[0].Pid, b)
		}
	}
	if ws2 := warmFiles(t); len(ws2) != 1 || ws2[0].Slot != ws[0].Slot || ws2[0].Pid == ws[0].Pid {
		t.Errorf("published slots after run 2: %+v (run 1's: %+v)", ws2, ws)
	}
	o3 := f.run(t, f.profile, false, "write="+src)
	if o3.err != nil || o3.code != 0 || o3.fileDenial(src, "write") == nil || len(o3.rep.Denials) != 1 {
		t.Errorf("run 3: %s", o3)
	}
	if warmReuses.Load() != before+2 {
		t.Errorf("run 3 did not take over run 2's slot")
	}
}

// A published slot whose helper was killed is not used: the run attaches afresh and observes
// all the same.
func TestGuardWarmSlotHelperKilled(t *testing.T) {
	withWarm(t)
	f := newFSFixture(t)
	o1 := f.run(t, f.profile, false, "read="+f.secret)
	if o1.err != nil || o1.code != 0 {
		t.Fatalf("run 1: %s", o1)
	}
	ws := warmFiles(t)
	if len(ws) != 1 {
		t.Fatalf("published slots after run 1: %+v", ws)
	}
	if err := unix.Kill(ws[0].Pid, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for unix.Kill(ws[0].Pid, 0) == nil { // until reaped (this process is its parent)
		time.Sleep(5 * time.Millisecond)
	}
	before := warmReuses.Load()
	o2 := f.run(t, f.profile, false, "read="+f.secret)
	if o2.err != nil || o2.code != 0 || o2.fileDenial(f.secret, "read") == nil || len(o2.rep.Denials) != 1 {
		t.Fatalf("run 2: %s", o2)
	}
	if warmReuses.Load() != before {
		t.Error("run 2 took over the slot of a killed helper")
	}
}

// An audit run needs every path syscall: a slot attached for fewer is not taken.
func TestGuardWarmSlotTooNarrowForAudit(t *testing.T) {
	withWarm(t)
	f := newFSFixture(t)
	o1 := f.run(t, f.profile, false, "read="+f.secret)
	if o1.err != nil || o1.code != 0 {
		t.Fatalf("run 1: %s", o1)
	}
	ws := warmFiles(t)
	if len(ws) != 1 {
		t.Fatalf("published slots after run 1: %+v", ws)
	}
	if len(ws[0].Names) == len(fileOps()) {
		t.Fatal("the fixture's profile allows every path syscall: this test needs one it refuses")
	}
	before := warmReuses.Load()
	var stdout, stderr bytes.Buffer
	rep, code, err := Run(context.Background(), Options{
		Profile: f.profile, Command: []string{f.victim, "read=" + f.secret}, Dir: f.work, Vars: f.vars,
		Audit: true, Stdout: &stdout, Stderr: &stderr,
	})
	o2 := runOut{rep, code, err, stdout.String(), stderr.String()}
	if err != nil || code != 0 || o2.fileDenial(f.secret, "read") == nil {
		t.Fatalf("audit run: %s", o2)
	}
	if warmReuses.Load() != before {
		t.Errorf("the audit run took over a slot attached for %v only", ws[0].Names)
	}
}
