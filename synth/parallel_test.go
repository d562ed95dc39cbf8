package synth

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sysprof/sysprof/trace"
)

// TestParallelSameAsSerial checks that the work split over two goroutines gives what the
// serial code gives, on traces large enough to be split: random ones grown with the files of
// more random runs (all kinds of paths, failures, /proc, credential stores), a find-like one
// and a build-like one.
func TestParallelSameAsSerial(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	var traces []*trace.Trace
	for range 4 {
		tr, _ := randomTrace(r)
		for len(tr.Files) < 3*minParallel {
			more, _ := randomTrace(r)
			tr.Files = append(tr.Files, more.Files...)
		}
		traces = append(traces, tr)
	}
	traces = append(traces, findTrace(3000, 2), largeTrace(6000))
	for i, tr := range traces {
		par, err := Synthesize(tr, testOpts())
		if err != nil {
			t.Fatal(err)
		}
		serial := synthesizeSerial(t, tr)
		if d := cmp.Diff(serial, par); d != "" {
			t.Fatalf("trace %d (%d files): the split work differs from the serial (-serial +split):\n%s", i, len(tr.Files), d)
		}
	}
}

func synthesizeSerial(t *testing.T, tr *trace.Trace) *Result {
	t.Helper()
	defer func(n int) { minParallel = n }(minParallel)
	minParallel = math.MaxInt
	res, err := Synthesize(tr, testOpts())
	if err != nil {
		t.Fatal(err)
	}
	return res
}
