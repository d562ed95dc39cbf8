package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

// learnGC raises GOGC while learn runs, gives the default back once the heap goal is big, and
// restores what was set before; a GOGC of off stays off.
func TestLearnGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer func(g uint64) { learnGCHeapGoal = g }(learnGCHeapGoal)

	restore := learnGC()
	if got := debug.SetGCPercent(learnGCPercent); got != learnGCPercent {
		t.Errorf("during learn GOGC is %d, want %d", got, learnGCPercent)
	}
	restore()
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("after learn GOGC is %d, want 100 back", got)
	}

	// A heap whose goal passes the threshold: the watcher puts the default back.
	learnGCHeapGoal = 32 << 20
	restore = learnGC()
	live := make([][]byte, 0, 64)
	for range 64 {
		live = append(live, make([]byte, 1<<20))
	}
	runtime.GC()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := gogc()
		if got == 100 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GOGC still %d with a %d MB heap, want 100", got, len(live))
		}
		time.Sleep(20 * time.Millisecond)
	}
	restore()
	runtime.KeepAlive(live)

	debug.SetGCPercent(-1)
	restore = learnGC()
	if got := debug.SetGCPercent(-1); got != -1 {
		t.Errorf("GOGC=off became %d during learn", got)
	}
	restore()
}

// gogc reads GOGC without setting it (the watcher may set it meanwhile).
func gogc() int64 {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}
