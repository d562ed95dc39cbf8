package profiler

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sysprof/sysprof/trace"
)

// measureWrites counts what the run's writes left in its work tree, once per path: a file's
// bytes in whole pages, files and directories; not what lies outside the work tree, what is
// gone, or what was only read.
func TestMeasureWrites(t *testing.T) {
	wd := t.TempDir()
	other := t.TempDir()
	write := func(p string, n int) {
		if err := os.WriteFile(p, make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(wd, "a"), 5000) // two pages
	if err := os.Mkdir(filepath.Join(wd, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(wd, "d", "b"), 1) // one page
	write(filepath.Join(wd, "read"), 100)
	write(filepath.Join(other, "c"), 1<<20)
	tr := &trace.Trace{Context: map[string]string{"WORKDIR": wd}, Files: []trace.FileAccess{
		{Path: filepath.Join(wd, "a"), Access: trace.AccessCreate, OK: true},
		{Path: filepath.Join(wd, "a"), Access: trace.AccessWrite, OK: true},
		{Path: filepath.Join(wd, "d"), Access: trace.AccessCreate, OK: true, Dir: true},
		{Path: filepath.Join(wd, "d", "b"), Access: trace.AccessWrite, OK: true},
		{Path: filepath.Join(wd, "gone"), Access: trace.AccessCreate, OK: true},
		{Path: filepath.Join(wd, "failed"), Access: trace.AccessCreate, OK: false},
		{Path: filepath.Join(wd, "read"), Access: trace.AccessRead, OK: true},
		{Path: filepath.Join(other, "c"), Access: trace.AccessWrite, OK: true},
	}}
	bytes, files, measured := measureWrites(tr)
	if bytes != 3*pageSize || files != 3 || !measured {
		t.Errorf("measured %d bytes in %d files, want %d bytes in 3 (a, d, d/b)", bytes, files, 3*pageSize)
	}
	if b, f, m := measureWrites(&trace.Trace{}); b != 0 || f != 0 || m {
		t.Errorf("no work tree: %d %d, want nothing measured", b, f)
	}
}
