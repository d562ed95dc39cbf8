package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/changeset"
)

// BenchmarkChangesDiff10k: `sysprof changes diff` of a run holding 10,000 modified text files
// (20 lines each, one changed), rendered as text.
func BenchmarkChangesDiff10k(b *testing.B) {
	b.Setenv("SYSPROF_STATE_DIR", filepath.Join(b.TempDir(), "runs"))
	w := filepath.Join(b.TempDir(), "w")
	r, err := changeset.Begin(changeset.Run{Command: []string{"bench"}, WorkDir: w})
	if err != nil {
		b.Fatal(err)
	}
	if err := os.Mkdir(w, 0o755); err != nil {
		b.Fatal(err)
	}
	s, err := r.AddStage(changeset.Rules{Dir: w, Tree: w, Vars: map[string]string{"WORKDIR": w}}, os.Getuid(), os.Getgid())
	if err != nil {
		b.Fatal(err)
	}
	for i := range 10000 {
		rel := filepath.Join(fmt.Sprintf("d%03d", i%100), fmt.Sprintf("f%05d.c", i))
		text := ""
		for l := range 20 {
			text += fmt.Sprintf("int line_%d = %d;\n", l, l)
		}
		for _, root := range []string{w, s.Upper} {
			if root == s.Upper {
				text += "int added = 1;\n"
			}
			p := filepath.Join(root, rel)
			_ = os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := r.Finish(); err != nil {
		b.Fatal(err)
	}
	o := &changesOptions{streams: streams{Out: io.Discard, Err: io.Discard}, Action: "diff", Run: r.ID, Format: "table"}
	cpu := cpuTime()
	for b.Loop() {
		if err := runChanges(context.Background(), o); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((cpuTime()-cpu).Milliseconds())/float64(b.N), "cpu-ms/op")
}

// cpuTime is this process's user+system time: on a loaded machine, wall time says little.
func cpuTime() time.Duration {
	var ru unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
