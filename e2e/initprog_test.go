package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
)

// The CLI these tests run is built as make builds it (scripts/build.sh): with the enforce init
// stage's program embedded (the sysprof_init tag, the program non-empty in the binary), so
// that every enforce test here goes through the program started from a sealed memfd, the
// path that ships, not sysprof re-executing itself.
func TestCLIEmbedsTheInitProgram(t *testing.T) {
	out, err := exec.Command("go", "version", "-m", testutil.SysprofBin).CombinedOutput()
	if err != nil {
		t.Fatalf("go version -m: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "-tags=sysprof_init") {
		t.Errorf("sysprof built without the sysprof_init tag (no init program embedded):\n%s", out)
	}
	prog, err := os.ReadFile(testutil.SysprofBin + ".init")
	if err != nil {
		t.Fatalf("the init program scripts/build.sh built: %v", err)
	}
	bin, err := os.ReadFile(testutil.SysprofBin)
	if err != nil {
		t.Fatal(err)
	}
	if len(prog) < 1<<20 || !strings.Contains(string(bin), string(prog[:4096])) {
		t.Error("the init program is not in the sysprof binary")
	}
}

// TestDenialParentsStopBelowTheInitStage: the init stage (the program from its sealed memfd in
// the CLI as it ships) is nobody's parent in a report: a denial of the command itself has no
// parents, and a child's names the command alone.
func TestDenialParentsStopBelowTheInitStage(t *testing.T) {
	testutil.RequireRoot(t)
	root := t.TempDir()
	b := newBox(t, root, "x", "alice", "project", "")
	testutil.WriteFile(t, filepath.Join(b.Work, "in.txt"), "in\n", 0o644)
	profile := filepath.Join(root, "profile.yaml")
	testutil.MustCode(t, "learn", b.Sysprof(t, "learn", "-p", profile, "--", "sh", "-c", "cat in.txt; sh -c true"), 0)
	rep := filepath.Join(root, "report.json")
	b.Sysprof(t, "enforce", "-p", profile, "--report", rep, "--", "sh", "-c",
		"cat in.txt; echo x > /etc/sysprof-e2e-outer; sh -c 'echo x > /etc/sysprof-e2e-inner'")
	found := 0
	for _, d := range testutil.ReadReport(t, rep).Denials {
		for _, p := range d.Parents {
			if strings.Contains(p, "memfd") || strings.Contains(p, "sysprof") {
				t.Errorf("denial %s names the init stage as a parent: %q", testutil.DenialString(d), d.Parents)
			}
		}
		switch {
		case strings.Contains(d.What, "sysprof-e2e-outer"):
			found++
			if len(d.Parents) != 0 {
				t.Errorf("the command's own denial has parents %q, want none", d.Parents)
			}
		case strings.Contains(d.What, "sysprof-e2e-inner"):
			found++
			if len(d.Parents) != 1 {
				t.Errorf("the child's denial has parents %q, want the command alone", d.Parents)
			}
		}
	}
	if found != 2 {
		t.Errorf("want the outer and the inner write to /etc on the record, found %d:\n%s", found, b.Sysprof(t, "show", "-p", profile).Stdout)
	}
}
