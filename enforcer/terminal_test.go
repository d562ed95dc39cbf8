package enforcer

import (
	"slices"
	"testing"

	"github.com/sysprof/sysprof/policy"
)

// The terminal the command's stdio is on is writable in every profile (node reopens it by
// name); without one, no terminal is.
func TestBaseGrantsTheStdioTerminal(t *testing.T) {
	fs := policy.Filesystem{Write: []policy.PathRule{{Path: "$WORKDIR/out"}}}
	at := EffectiveFilesystem(fs, Env{Vars: map[string]string{"WORKDIR": "/w"}, Terminal: "/dev/pts/5"})
	if !slices.ContainsFunc(at.Write, func(r policy.PathRule) bool { return r.Path == "/dev/pts/5" }) {
		t.Errorf("at a terminal: write rules %v lack /dev/pts/5", at.Write)
	}
	if len(fs.Write) != 1 {
		t.Errorf("the profile's section was modified: %v", fs.Write)
	}
	off := EffectiveFilesystem(fs, Env{Vars: map[string]string{"WORKDIR": "/w"}})
	if slices.ContainsFunc(off.Write, func(r policy.PathRule) bool { return r.Path != "$WORKDIR/out" }) {
		t.Errorf("without a terminal: write rules %v", off.Write)
	}
	for p, want := range map[string]bool{"/dev/pts/0": true, "/dev/pts/12": true, "/dev/pts/ptmx": false, "/dev/pts/": false, "/dev/tty1": false} {
		if ptyPath(p) != want {
			t.Errorf("ptyPath(%q) = %v", p, !want)
		}
	}
}
