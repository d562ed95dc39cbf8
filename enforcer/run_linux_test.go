package enforcer

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
)

// Run executes the compiled profile and changes nothing of it (nor of the profile): what one
// run adds, its stages' overlay directories, goes into the run's copy of the plan.
func TestRunLeavesCompiledUnchanged(t *testing.T) {
	testutil.RequireRoot(t)
	f := newFSFixture(t)
	p := f.profile
	// A file that does not exist yet: its directory is staged, the file applied after the run.
	p.Filesystem.Write = append(p.Filesystem.Write, policy.PathRule{Path: "$WORKDIR/new.txt"})
	var stdout, stderr bytes.Buffer
	out := filepath.Join(f.work, "new.txt")
	r, err := newEnforcedRun(Options{Profile: p, Command: []string{f.victim, "write=" + out}, Dir: f.work, Vars: f.vars,
		Stdout: &stdout, Stderr: &stderr})
	if err != nil {
		t.Fatal(err)
	}
	defer r.discardLoad()
	c, err := Compile(p, r.env)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Plan.Staged) == 0 {
		t.Fatalf("nothing staged: the test needs a stage (plan %+v)", c.Plan)
	}
	snapshot := func() string {
		b, err := json.Marshal(struct {
			C *Compiled
			P *policy.Profile
		}{c, p})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	before := snapshot()

	rep, code, err := r.execute(context.Background(), c)
	if err != nil || code != 0 || stdout.String() != "write: ok\n" {
		t.Fatalf("run: exit %d, %v\nstdout:\n%s\nstderr:\n%s", code, err, stdout.String(), stderr.String())
	}
	if b, err := os.ReadFile(out); err != nil || string(b) != "x" {
		t.Errorf("the staged write was not applied: %q %v\n%v", b, err, rep.Notes)
	}
	if diff := cmp.Diff(before, snapshot()); diff != "" {
		t.Errorf("the run changed the compiled profile (-before +after):\n%s", diff)
	}
}
