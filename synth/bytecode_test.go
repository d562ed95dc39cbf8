package synth

import (
	"slices"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/trace"
)

// A first pytest run as root after a plugin was installed writes the plugin's rewritten
// bytecode into /usr (xdist/__pycache__/*-pytest-7.2.1.pyc). Granting it would let the command
// plant code every later python runs, and a drift after it (the cache now there) finds a
// different profile. It is not granted; the synthesis says so; the work tree's cache is.
func TestSystemBytecodeCacheIsNotGranted(t *testing.T) {
	cache := "/usr/lib/python3/dist-packages/xdist/__pycache__"
	tr := &trace.Trace{
		Version:   trace.Version,
		Command:   []string{"pytest-3", "-q"},
		Context:   map[string]string{"WORKDIR": "/w", "HOME": "/home/a", "TMPDIR": "/tmp"},
		Host:      trace.Host{Kernel: "6.18", Arch: trace.ArchX86_64},
		Processes: []trace.Process{{ID: 1, PID: 10, Exe: "/usr/bin/python3.11"}},
		Files: []trace.FileAccess{
			{Exe: "/usr/bin/python3.11", Path: "/usr/lib/python3/dist-packages/xdist/plugin.py", Access: trace.AccessRead, OK: true, Count: 1},
			{Exe: "/usr/bin/python3.11", Path: cache, Access: trace.AccessCreate, OK: true, Count: 1},
			{Exe: "/usr/bin/python3.11", Path: cache + "/plugin.cpython-311-pytest-7.2.1.pyc.10", Access: trace.AccessCreate, OK: true, Count: 1},
			{Exe: "/usr/bin/python3.11", Path: cache + "/plugin.cpython-311-pytest-7.2.1.pyc", Access: trace.AccessCreate, OK: true, Count: 1},
			{Exe: "/usr/bin/python3.11", Path: "/w/__pycache__/test_a.cpython-311-pytest-7.2.1.pyc", Access: trace.AccessCreate, OK: true, Count: 1},
		},
	}
	res, err := Synthesize(tr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range res.Profile.Filesystem.Write {
		if strings.HasPrefix(w.Path, "/usr/") {
			t.Errorf("a system tree's bytecode cache is granted: write %s", w.Path)
		}
	}
	if !slices.ContainsFunc(res.Profile.Filesystem.Write, func(r policy.PathRule) bool { return strings.HasPrefix(r.Path, "$WORKDIR/__pycache__") }) {
		t.Errorf("the work tree's bytecode cache is gone too: %v", res.Profile.Filesystem.Write)
	}
	if ex := string(explainText(res)); !strings.Contains(ex, "bytecode cache in a system tree") {
		t.Errorf("the synthesis does not say it left the bytecode cache out:\n%s", ex)
	}
}
