package changeset

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// benchRun begins a run over a fresh tree whose upper layer holds n files of size bytes in
// dirs directories (allocated with fallocate: real blocks, nothing to copy on a rename), the
// host holding modified originals when modify.
func benchRun(b *testing.B, n, dirs int, size int64, modify bool) (*Run, string) {
	b.Helper()
	b.Setenv("SYSPROF_STATE_DIR", filepath.Join(b.TempDir(), "runs"))
	w := filepath.Join(b.TempDir(), "w")
	r, err := Begin(Run{Command: []string{"bench"}, WorkDir: w})
	if err != nil {
		b.Fatal(err)
	}
	if err := os.Mkdir(w, 0o755); err != nil {
		b.Fatal(err)
	}
	s, err := r.AddStage(Rules{Dir: w, Tree: w, Keep: []string{w + "/**"}, Vars: map[string]string{"WORKDIR": w}}, os.Getuid(), os.Getgid())
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		rel := filepath.Join(fmt.Sprintf("d%03d", i%dirs), fmt.Sprintf("f%05d.txt", i))
		for _, root := range []string{s.Upper, w} {
			if root == w && !modify {
				continue
			}
			p := filepath.Join(root, rel)
			_ = os.MkdirAll(filepath.Dir(p), 0o755)
			f, err := os.Create(p)
			if err != nil {
				b.Fatal(err)
			}
			if size > 0 {
				if err := unix.Fallocate(int(f.Fd()), 0, 0, size); err != nil {
					b.Fatal(err)
				}
			} else {
				fmt.Fprintf(f, "line 1\nline 2 of %s in %s\n", rel, root)
			}
			f.Close()
		}
	}
	b.Cleanup(r.unlock)
	return r, w
}

// BenchmarkScan10k: Scan (read and classify) a changeset of 10,000 modified files.
func BenchmarkScan10k(b *testing.B) {
	r, _ := benchRun(b, 10000, 100, 0, true)
	cpu := cpuTime()
	for b.Loop() {
		cs, err := r.Scan()
		if err != nil || len(cs) != 10000 {
			b.Fatalf("%d changes, %v", len(cs), err)
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

// BenchmarkApply1GB: apply a 1 GiB output tree (1,024 files of 1 MiB in 32 new directories)
// on one file system.
func BenchmarkApply1GB(b *testing.B) {
	b.SetBytes(1 << 30)
	var cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		r, _ := benchRun(b, 1024, 32, 1<<20, false)
		b.StartTimer()
		c0 := cpuTime()
		res, err := r.Apply(ApplyLearned, nil)
		cpu += cpuTime() - c0
		if err != nil || len(res.Applied) != 1024+32 {
			b.Fatalf("applied %d: %v %v", len(res.Applied), err, res.Errors)
		}
	}
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
}

// BenchmarkRunLifecycle: what every enforce run with a staged directory pays for its changeset
// when the command wrote nothing: Begin, AddStage, Apply, Finish.
func BenchmarkRunLifecycle(b *testing.B) {
	b.Setenv("SYSPROF_STATE_DIR", filepath.Join(b.TempDir(), "runs"))
	w := b.TempDir()
	cpu := cpuTime()
	for b.Loop() {
		r, err := Begin(Run{Command: []string{"true"}, WorkDir: w})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := r.AddStage(Rules{Dir: w, Tree: w}, os.Getuid(), os.Getgid()); err != nil {
			b.Fatal(err)
		}
		if _, err := r.Apply(ApplyLearned, nil); err != nil {
			b.Fatal(err)
		}
		if err := r.Finish(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/1000/float64(b.N), "cpu-ms/op")
}
