package synth

import (
	"strings"
	"testing"

	"github.com/sysprof/sysprof/trace"
)

// TestPrivateTmpKept (issue 24 item 6): pytest lists and removes its older
// /tmp/pytest-of-USER/pytest-N, which the run did not create; in an empty private /tmp that
// works the same, so the layer stays on. A file of the host's /tmp the command reads is what
// turns it off, and then never silently: a warning names it.
func TestPrivateTmpKept(t *testing.T) {
	const exe = "/usr/bin/python3.11"
	synth := func(files ...trace.FileAccess) *Result {
		tr := &trace.Trace{Version: trace.Version, Command: []string{"python3", "-m", "pytest"},
			Context:   map[string]string{"HOME": "/home/a", "WORKDIR": "/home/a/p", "TMPDIR": "/tmp"},
			Processes: []trace.Process{{ID: 1, PID: 10, Exe: exe}}, Files: files}
		res, err := Synthesize(tr, testOpts())
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	f := func(p, access string) trace.FileAccess {
		return trace.FileAccess{Exe: exe, Path: p, Access: access, OK: true}
	}
	res := synth(
		f("/tmp/pytest-of-alice", trace.AccessList),
		f("/tmp/pytest-of-alice/pytest-0", trace.AccessDelete),
		f("/tmp/pytest-of-alice/pytest-0/test_a0", trace.AccessList),
		f("/tmp/pytest-of-alice/pytest-3", trace.AccessCreate),
		f("/tmp/old-build.lock", trace.AccessDelete), // foreign, but only removed
	)
	if !res.Profile.Filesystem.PrivateTmp {
		t.Errorf("privateTmp off for a run that only listed and removed older temp files")
	}
	res = synth(f("/tmp/shared-config.json", trace.AccessRead))
	if res.Profile.Filesystem.PrivateTmp {
		t.Errorf("privateTmp on for a run that read a file of the host's /tmp")
	}
	warned := false
	for _, w := range res.Warnings {
		warned = warned || strings.Contains(w, "no private /tmp") && strings.Contains(w, "$TMPDIR/shared-config.json")
	}
	if !warned {
		t.Errorf("privateTmp turned off without a warning naming the file: %q", res.Warnings)
	}
}
