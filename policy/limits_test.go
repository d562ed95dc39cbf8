package policy

import (
	"strings"
	"testing"
)

func TestLimitsRoundTripMergeDiffGrant(t *testing.T) {
	p := &Profile{Metadata: Metadata{Name: "x", Command: []string{"x"}, Runs: 1}, Limits: Limits{Pids: 64, MemoryMiB: 512}}
	b, err := Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "limits:\n  pids: 64\n  memoryMiB: 512\n") {
		t.Fatalf("marshal:\n%s", b)
	}
	q, err := Parse("x.yaml", b)
	if err != nil {
		t.Fatal(err)
	}
	if q.Limits != p.Limits {
		t.Fatalf("round trip: %+v, want %+v", q.Limits, p.Limits)
	}
	if _, err := Parse("x.yaml", []byte(strings.Replace(string(b), "pids: 64", "pids: -1", 1))); err == nil {
		t.Error("a negative pids limit parsed")
	}

	// Merge takes the larger limit; a default on either side stays the default.
	m := Merge(p, &Profile{Limits: Limits{Pids: 200, MemoryMiB: 256, TmpMiB: 100}})
	if want := (Limits{Pids: 200, MemoryMiB: 512}); m.Limits != want {
		t.Errorf("merge: %+v, want %+v", m.Limits, want)
	}

	// A raised limit widens; a lowered one narrows; left out is the default.
	for _, tc := range []struct {
		old, new Limits
		section  string
		widens   bool
	}{
		{Limits{Pids: 64}, Limits{Pids: 256}, SectionLimitPids, true}, // one step (128) is noise: TestLearnedLimitsStableAcrossRuns
		{Limits{Pids: 128}, Limits{Pids: 64}, SectionLimitPids, false},
		{Limits{Pids: 64}, Limits{}, SectionLimitPids, true}, // back to 1024
		{Limits{}, Limits{Pids: 2048}, SectionLimitPids, true},
		{Limits{MemoryMiB: 512}, Limits{}, SectionLimitMemory, true}, // back to a share of the host
		{Limits{}, Limits{TmpMiB: 64}, SectionLimitTmp, false},
	} {
		cs := Diff(&Profile{Limits: tc.old}, &Profile{Limits: tc.new})
		if len(cs) != 1 || cs[0].Section != tc.section || cs[0].Widens != tc.widens {
			t.Errorf("Diff(%+v, %+v) = %v, want one %s change widening=%v", tc.old, tc.new, cs, tc.section, tc.widens)
		}
	}

	g := LimitGrant(SectionLimitPids, 256)
	back, err := ParseGrant(g.String())
	if err != nil || back.Section != g.Section || back.Item != g.Item {
		t.Errorf("ParseGrant(%q) = %+v, %v", g.String(), back, err)
	}
	if _, err := ParseGrant("limits.pids: many"); err == nil {
		t.Error("a limit grant without a number parsed")
	}

	if l := LearnedLimits(3, 10<<20, 0); l.Pids != MinPids || l.MemoryMiB != MinMemoryMiB || l.TmpMiB != 0 {
		t.Errorf("LearnedLimits(3, 10MiB, 0) = %+v: want the floors, tmp left to its default", l)
	}
	if l := LearnedLimits(100, 1<<30, 100<<20); l.Pids != 512 || l.MemoryMiB != 4096 || l.TmpMiB != 512 {
		t.Errorf("LearnedLimits(100, 1GiB, 100MiB) = %+v", l)
	}
}

// Peaks that differ by chance between runs (the perturbation test's cold cache and fresh HOME:
// 1223 and 1274 MiB before rounding) give one limit, and one step up is no widening.
func TestLearnedLimitsStableAcrossRuns(t *testing.T) {
	a, b := LearnedLimits(17, 306<<20, 0), LearnedLimits(16, 318<<20, 0)
	if a.MemoryMiB != b.MemoryMiB {
		t.Errorf("memory %d vs %d MiB for peaks 306 and 318 MiB: want one power of two", a.MemoryMiB, b.MemoryMiB)
	}
	old, grown := &Profile{Limits: b}, &Profile{Limits: a}
	for _, c := range Diff(old, grown) {
		if c.Widens {
			t.Errorf("pids %d -> %d (one step) is a widening: %+v", b.Pids, a.Pids, c)
		}
	}
	far := &Profile{Limits: Limits{Pids: 4 * b.Pids}}
	widens := false
	for _, c := range Diff(old, far) {
		widens = widens || (c.Widens && c.Section == SectionLimitPids)
	}
	if !widens {
		t.Errorf("pids %d -> %d is not a widening", b.Pids, far.Limits.Pids)
	}
}

// The write limits: learned as the others (x4, a power of two, a floor), parsed, merged to the
// larger, raising one widens, refine's grant raises it.
func TestWriteLimits(t *testing.T) {
	var l Limits
	if l.LearnedWrites(0, 0); l.WriteMiB != MinWriteMiB || l.WriteFiles != MinWriteFiles {
		t.Errorf("nothing written: %+v, want the floors", l)
	}
	l.LearnedWrites(3<<20, 10)
	if l.WriteMiB != MinWriteMiB || l.WriteFiles != MinWriteFiles {
		t.Errorf("small writes: %+v, want the floors", l)
	}
	l.LearnedWrites(300<<20, 20000)
	if l.WriteMiB != 2048 || l.WriteFiles != 131072 {
		t.Errorf("300 MiB in 20000 files: %+v, want 2048 MiB and 131072 files", l)
	}
	p := &Profile{Metadata: Metadata{Name: "x", Command: []string{"x"}, Runs: 1}, Limits: Limits{WriteMiB: 1024, WriteFiles: 4096}}
	b, err := Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "limits:\n  writeMiB: 1024\n  writeFiles: 4096\n") {
		t.Fatalf("marshal:\n%s", b)
	}
	if q, err := Parse("x.yaml", b); err != nil || q.Limits != p.Limits {
		t.Fatalf("round trip: %+v %v", q, err)
	}
	if m := Merge(p, &Profile{Limits: Limits{WriteMiB: 2048, WriteFiles: 1024}}); m.Limits.WriteMiB != 2048 || m.Limits.WriteFiles != 4096 {
		t.Errorf("merge: %+v", m.Limits)
	}
	d := Diff(p, &Profile{Limits: Limits{WriteMiB: 8192, WriteFiles: 4096}})
	if len(d) != 1 || d[0].Section != SectionLimitWrite || !d[0].Widens {
		t.Errorf("diff: %+v, want writeMiB widened", d)
	}
	g, err := ParseGrant(SectionLimitFiles + ": 8192")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Limits.Raise(g.Section, g.Item); err != nil || p.Limits.WriteFiles != 8192 {
		t.Errorf("raise: %+v %v", p.Limits, err)
	}
}
