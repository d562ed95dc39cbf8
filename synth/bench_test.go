package synth

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
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

// findTrace looks like `find /usr -xdev`: every directory of a tree listed and stat'ed (as many
// "metadata" as "list" accesses), plus the few reads of the loader and locale files, sorted by
// path as the profiler writes them. dirs is the number of directories, files the number of
// regular files stat'ed in each.
func findTrace(dirs, files int) *trace.Trace {
	exe := "/usr/bin/find"
	tr := &trace.Trace{Version: trace.Version, Command: []string{"find", "/usr", "-xdev"},
		Context: map[string]string{"HOME": "/root", "WORKDIR": "/work/main", "TMPDIR": "/tmp",
			"GOROOT": "/usr/local/go", "GOCACHE": "/root/.cache/go-build", "GOMODCACHE": "/root/go/pkg/mod",
			"CARGO_HOME": "/root/.cargo", "RUSTUP_HOME": "/root/.rustup", "USER": "root"},
		Processes: []trace.Process{{ID: 1, PID: 4242, Exe: exe}},
		Syscalls:  []trace.SyscallCount{{Exe: exe, Arch: trace.ArchX86_64, Name: "newfstatat", Nr: 262, Count: 9}},
	}
	for _, p := range []string{"/etc/ld.so.cache", "/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/locale/locale-archive"} {
		tr.Files = append(tr.Files, trace.FileAccess{Exe: exe, Path: p, Access: trace.AccessRead, OK: true, Count: 1})
	}
	tr.Files = append(tr.Files, trace.FileAccess{Exe: exe, Path: "/etc/ld.so.preload", Access: trace.AccessMetadata, Errno: 2, Count: 1})
	tops := []string{"lib", "share", "include", "local", "libexec", "src", "bin", "lib64"}
	// A tree of fan-out 6 below the top directories, breadth first, names like real ones.
	queue := []string{}
	for _, t := range tops {
		queue = append(queue, "/usr/"+t)
	}
	for n := 0; n < dirs && len(queue) > 0; n++ {
		d := queue[0]
		queue = queue[1:]
		tr.Files = append(tr.Files, trace.FileAccess{Exe: exe, Path: d, Access: trace.AccessList, OK: true, Dir: true, Count: 1})
		tr.Files = append(tr.Files, trace.FileAccess{Exe: exe, Path: d, Access: trace.AccessMetadata, OK: true, Dir: true, Count: 1})
		for i := 0; i < 6; i++ {
			queue = append(queue, fmt.Sprintf("%s/pkg-%d.%d_x%d", d, n%97, i, n%5))
		}
		for i := 0; i < files; i++ {
			tr.Files = append(tr.Files, trace.FileAccess{Exe: exe, Path: fmt.Sprintf("%s/file%d.so.%d", d, i, n%3), Access: trace.AccessMetadata, OK: true, Count: 1})
		}
	}
	slices.SortFunc(tr.Files, func(a, b trace.FileAccess) int {
		return cmp.Or(strings.Compare(a.Path, b.Path), strings.Compare(a.Access, b.Access))
	})
	return tr
}

// BenchmarkSynthesizeFindUsr synthesizes a trace shaped like `find /usr -xdev` (18k listed
// directories, 18k stat'ed entries). SYSPROF_BENCH_TRACE=FILE benchmarks a real trace instead
// (one saved with `sysprof learn --trace-out FILE`).
func BenchmarkSynthesizeFindUsr(b *testing.B) {
	var tr *trace.Trace
	if f := os.Getenv("SYSPROF_BENCH_TRACE"); f == "" {
		tr = findTrace(18000, 0)
	} else {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		tr = &trace.Trace{}
		if err := json.Unmarshal(data, tr); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Synthesize(tr, testOpts()); err != nil {
			b.Fatal(err)
		}
	}
}
