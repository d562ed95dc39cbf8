package synth

import (
	"slices"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/trace"
)

// A first pytest run as root after a plugin was installed writes the plugin's rewritten
// bytecode into /usr (xdist/__pycache__/*-pytest-7.2.1.pyc), and every python run writes the
// work tree's (__pycache__/test_a.cpython-311-pytest-7.2.1.pyc). Granting either would let the
// command plant code that a later python outside the sandbox runs (issue 23: a planted .pyc
// with the header of foo.py's mtime and size runs at the next `import foo`). Neither is
// granted, the synthesis says so; a cache in the private /tmp is (nothing of it stays).
func TestBytecodeCacheIsNotGranted(t *testing.T) {
	cache := "/usr/lib/python3/dist-packages/xdist/__pycache__"
	tr := &trace.Trace{
		Version:   trace.Version,
		Command:   []string{"pytest-3", "-q"},
		Context:   map[string]string{"WORKDIR": "/tmp/w", "HOME": "/home/a", "TMPDIR": "/tmp"},
		Host:      trace.Host{Kernel: "6.18", Arch: trace.ArchX86_64},
		Processes: []trace.Process{{ID: 1, PID: 10, Exe: "/usr/bin/python3.11"}},
		Files: []trace.FileAccess{
			{Exe: "/usr/bin/python3.11", Path: "/usr/lib/python3/dist-packages/xdist/plugin.py", Access: trace.AccessRead, OK: true, Count: 1},
			{Exe: "/usr/bin/python3.11", Path: cache, Access: trace.AccessCreate, OK: true, Count: 1},
			{Exe: "/usr/bin/python3.11", Path: cache + "/plugin.cpython-311-pytest-7.2.1.pyc.10", Access: trace.AccessCreate, OK: true, Count: 1},
			{Exe: "/usr/bin/python3.11", Path: cache + "/plugin.cpython-311-pytest-7.2.1.pyc", Access: trace.AccessCreate, OK: true, Count: 1},
			{Exe: "/usr/bin/python3.11", Path: "/tmp/w/__pycache__", Access: trace.AccessCreate, OK: true, Count: 1},
			{Exe: "/usr/bin/python3.11", Path: "/tmp/w/__pycache__/test_a.cpython-311-pytest-7.2.1.pyc", Access: trace.AccessCreate, OK: true, Count: 1},
			{Exe: "/usr/bin/python3.11", Path: "/tmp/w/pkg/__pycache__/a.cpython-311.pyc", Access: trace.AccessWrite, OK: true, Count: 1},
			{Exe: "/usr/bin/python3.11", Path: "/tmp/w/out.txt", Access: trace.AccessCreate, OK: true, Count: 1},
			{Exe: "/usr/bin/python3.11", Path: "/tmp/scratch/__pycache__/t.cpython-311.pyc", Access: trace.AccessCreate, OK: true, Count: 1},
		},
	}
	res, err := Synthesize(tr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range res.Profile.Filesystem.Write {
		got = append(got, w.Path)
		if strings.Contains(w.Path, "__pycache__") && !strings.HasPrefix(w.Path, "$TMPDIR/") && !strings.HasPrefix(w.Path, "/tmp/") {
			t.Errorf("a bytecode cache the host keeps is granted: write %s", w.Path)
		}
	}
	if !slices.ContainsFunc(res.Profile.Filesystem.Write, func(r policy.PathRule) bool { return r.Path == "$WORKDIR/out.txt" }) {
		t.Errorf("the work tree's other write is gone too: %v", got)
	}
	if ex := string(explainText(res)); !strings.Contains(ex, "6 writes of Python's bytecode cache") {
		t.Errorf("the synthesis does not say it left the bytecode cache out:\n%s", ex)
	}
}
