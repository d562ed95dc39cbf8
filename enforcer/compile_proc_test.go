package enforcer

import (
	"slices"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/policy"
)

// TestCompileProcWrites: a learned write under /proc/self never becomes a writable /proc mount:
// it keeps the sandbox's per-process /proc files writable (ProcWritable, Landlock's /proc rule)
// and nothing else; a write under other /proc or /sys paths is refused with a note.
func TestCompileProcWrites(t *testing.T) {
	work := t.TempDir()
	p := testProfile()
	p.Filesystem.Read = []policy.PathRule{{Path: "/usr"}}
	p.Filesystem.Write = []policy.PathRule{{Path: "/proc/self/oom_score_adj"}, {Path: "/proc/sys/kernel/core_pattern"}, {Path: "/sys/kernel/mm/x"}, {Path: "/proc"}}
	c, err := Compile(p, Env{Vars: map[string]string{"WORKDIR": work, "TMPDIR": "/tmp"}, Arch: "x86_64"})
	if err != nil {
		t.Fatal(err)
	}
	if !c.Plan.ProcWritable {
		t.Error("ProcWritable not set for a /proc/self write")
	}
	for _, w := range c.Plan.Writable {
		if kernelTree(w) {
			t.Errorf("writable mount %s", w)
		}
	}
	if ll := c.Plan.Landlock; ll == nil || !slices.Equal(ll.Write, []string{"/proc"}) {
		t.Errorf("Landlock write %v, want [/proc] only", ll)
	}
	refused := 0
	for _, n := range c.Notes {
		if strings.Contains(n, "refused: /proc and /sys stay read-only") {
			refused++
		}
	}
	if refused != 3 {
		t.Errorf("%d refusal notes, want 3: %q", refused, c.Notes)
	}
}
