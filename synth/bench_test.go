package synth

import (
	"fmt"
	"testing"

	"github.com/sysprof/sysprof/trace"
)

// largeTrace looks like a big build: n files read across a toolchain tree, n/4 written in a
// target directory, n/10 reads of home config files.
func largeTrace(n int) *trace.Trace {
	exe := "/usr/local/go/bin/go"
	tr := &trace.Trace{Version: trace.Version, Command: []string{"go", "build"},
		Context:   map[string]string{"HOME": "/home/a", "WORKDIR": "/home/a/w", "TMPDIR": "/tmp", "GOROOT": "/usr/local/go"},
		Processes: []trace.Process{{ID: 1, PID: 1, Exe: exe}}}
	for i := 0; i < n; i++ {
		tr.Files = append(tr.Files, trace.FileAccess{Exe: exe, Access: trace.AccessRead, OK: true,
			Path: fmt.Sprintf("/usr/local/go/src/pkg%d/sub%d/file%d.go", i%300, i%7, i)})
		if i%4 == 0 {
			tr.Files = append(tr.Files, trace.FileAccess{Exe: exe, Access: trace.AccessCreate, OK: true,
				Path: fmt.Sprintf("/home/a/w/target/debug/deps/d%d/f%d.o", i%50, i)})
		}
		if i%10 == 0 {
			tr.Files = append(tr.Files, trace.FileAccess{Exe: exe, Access: trace.AccessRead, OK: true,
				Path: fmt.Sprintf("/home/a/.config/tool%d/c%d.toml", i%40, i)})
		}
	}
	return tr
}

func BenchmarkSynthesizeLarge(b *testing.B) {
	tr := largeTrace(20000)
	for b.Loop() {
		if _, err := Synthesize(tr, testOpts()); err != nil {
			b.Fatal(err)
		}
	}
}
