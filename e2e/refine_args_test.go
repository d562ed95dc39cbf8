package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
)

// TestRefineAddsTheRuleACheckRefused: `prlimit --pid 1` reads the init stage's limits under
// enforce, which the filter refuses (prlimit64 on another pid) though the profile has no
// argument rule there; `refine --only` naming its suggestion adds the rule (it used to change
// nothing: "nothing to refine"), the next enforce runs clean, and a drift (whose learn has no
// such rule) finds no widening. A prlimit naming its own pid goes on throughout.
func TestRefineAddsTheRuleACheckRefused(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTools(t, hostPath, "prlimit")
	root := t.TempDir()
	b := newBox(t, root, "x", "alice", "project", "")
	profile := filepath.Join(root, "prlimit.yaml")
	// The second prlimit names its own pid (exec: $$ is its pid), which goes on before and
	// after the refine.
	argv := []string{"sh", "-c", "prlimit --nofile --pid 1; exec prlimit --nofile --pid $$"}
	testutil.MustCode(t, "learn", b.Sysprof(t, append([]string{"learn", "-p", profile, "--"}, argv...)...), 0)

	rep := filepath.Join(root, "report.json")
	r := b.Sysprof(t, append([]string{"enforce", "-p", profile, "--report", rep, "--"}, argv...)...)
	got := testutil.ReadReport(t, rep)
	if len(got.Denials) != 1 || got.Denials[0].Syscall != "prlimit64" || strings.Count(r.Stdout, "NOFILE") != 1 {
		t.Fatalf("enforce: want prlimit64 on pid 1 refused and reported, its own pid read: %+v\n%s", got.Denials, r)
	}
	suggest := got.Denials[0].Suggest
	if !strings.HasPrefix(suggest, "syscalls.args: prlimit64 arg 0: + ") {
		t.Fatalf("suggestion %q is not an argument value", suggest)
	}
	ref := b.Sysprof(t, "refine", "-p", profile, "--from", rep, "--only", suggest)
	testutil.MustCode(t, "refine --only", ref, 0)
	if strings.Contains(ref.Stderr, "nothing to refine") {
		t.Fatalf("refine did not add the rule:\n%s", ref)
	}

	rep2 := filepath.Join(root, "report2.json")
	r = b.Sysprof(t, append([]string{"enforce", "-p", profile, "--report", rep2, "--"}, argv...)...)
	testutil.MustCode(t, "enforce after refine", r, 0)
	testutil.RequireNoDenials(t, "enforce after refine", rep2, r)
	if strings.Count(r.Stdout, "NOFILE") != 2 {
		t.Errorf("both prlimits should print their limits:\n%s", r)
	}
	testutil.MustCode(t, "drift", b.Sysprof(t, append([]string{"drift", "-p", profile, "--"}, argv...)...), 0)
}
