package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
)

// TestAuditLetsEverythingThroughAndRefinesInOneRound (issue 15 item 5): enforce --audit as root
// lets files, exec and syscalls through — the command's writes happen — and reports every
// access the profile would have denied; refine --yes from that report, then enforce: zero
// denials, in one round.
func TestAuditLetsEverythingThroughAndRefinesInOneRound(t *testing.T) {
	testutil.RequireRoot(t)
	root := t.TempDir()
	b := newBox(t, root, "x", "alice", filepath.Join("src", "project"), "")
	testutil.WriteFile(t, filepath.Join(b.Work, "a.txt"), "a\n", 0o644)
	profile := filepath.Join(root, "profile.yaml")
	testutil.MustCode(t, "learn", b.Sysprof(t, "learn", "-p", profile, "--", "sh", "-c", "cat a.txt"), 0)

	// More than learned: a new directory and file in the work tree, a listing, other syscalls.
	more := []string{"sh", "-c", "cat a.txt && mkdir -p out && cat a.txt > out/copy.txt && ls out"}
	strict := filepath.Join(root, "strict.json")
	r := b.Sysprof(t, append([]string{"enforce", "-p", profile, "--report", strict, "--"}, more...)...)
	if r.Code == 0 {
		t.Fatalf("control: the wider command passed enforcement unchanged: %s", r)
	}
	os.RemoveAll(filepath.Join(b.Work, "out"))

	rep := filepath.Join(root, "audit.json")
	r = b.Sysprof(t, append([]string{"enforce", "--audit", "-p", profile, "--report", rep, "--"}, more...)...)
	testutil.MustCode(t, "enforce --audit", r, 0)
	if _, err := os.Stat(filepath.Join(b.Work, "out", "copy.txt")); err != nil {
		t.Errorf("audit did not let the write through: %v", err)
	}
	ar := testutil.ReadReport(t, rep)
	if !ar.Audit || len(ar.Denials) == 0 {
		t.Fatalf("audit report: audit=%v with %d denials, want the would-be denials", ar.Audit, len(ar.Denials))
	}
	for _, d := range ar.Denials {
		if !d.Allowed {
			t.Errorf("audit denial not marked allowed: %s %s", d.Kind, d.What)
		}
	}
	os.RemoveAll(filepath.Join(b.Work, "out"))

	// mkdir and ls are new executables: --yes alone keeps them denied (they need a person);
	// naming them accepts them.
	args := []string{"refine", "-p", profile, "--from", rep, "--yes"}
	for _, d := range ar.Denials {
		if d.Access == "exec" {
			args = append(args, "--only", d.Path)
		}
	}
	testutil.MustCode(t, "refine --yes", b.Sysprof(t, args...), 0)
	final := filepath.Join(root, "final.json")
	r = b.Sysprof(t, append([]string{"enforce", "-p", profile, "--report", final, "--"}, more...)...)
	testutil.MustCode(t, "enforce after one refine round", r, 0)
	testutil.RequireNoDenials(t, "enforce after one refine round", final, r)
}
