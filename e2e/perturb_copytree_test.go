package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
)

// TestRenameFallsBackToCopy (issue 24 item 8): `mv dist dist.old` learned where the rename
// succeeds, then run where the host had dist, which the sandbox binds apart: the rename fails
// with EXDEV and mv copies the tree (mkdir, FICLONE, fadvise64, the xattr calls, rmdir). The
// copy-fallback and copy-tree families close it the same way in learn, enforce and drift:
// zero denials, the unsandboxed run's result, and drift finds nothing that widens.
func TestRenameFallsBackToCopy(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTools(t, hostPath, "mv")
	root := t.TempDir()
	b := newBox(t, root, "x", "alice", filepath.Join("src", "project"), "")
	profile := filepath.Join(root, "profile.yaml")
	fresh := func() {
		t.Helper()
		for _, d := range []string{"dist", "dist.old"} {
			if err := os.RemoveAll(filepath.Join(b.Work, d)); err != nil {
				t.Fatal(err)
			}
		}
		testutil.WriteFile(t, filepath.Join(b.Work, "dist", "app.js"), "console.log(1)\n", 0o644)
		testutil.WriteFile(t, filepath.Join(b.Work, "dist", "assets", "a.css"), "a{}\n", 0o600)
	}
	argv := []string{"mv", "dist", "dist.old"}
	fresh()
	if r := b.Sysprof(t, append([]string{"learn", "-p", profile, "--"}, argv...)...); r.Code != 0 {
		t.Fatalf("learn: %s", r)
	}
	fresh()
	want := b.Run(t, argv...)
	fresh()
	rep := filepath.Join(root, "report.json")
	got := b.Sysprof(t, append([]string{"enforce", "-p", profile, "--report", rep, "--"}, argv...)...)
	if got.Code != want.Code || got.Stderr != want.Stderr && want.Code != 0 {
		t.Errorf("enforce: %s\nunsandboxed: %s", got, want)
	}
	for _, d := range testutil.ReadReport(t, rep).Denials {
		t.Errorf("denial: [%s] %s by %s: suggest %q", d.Kind, d.What, d.Exe, d.Suggest)
	}
	for _, p := range []string{"dist.old/app.js", "dist.old/assets/a.css"} {
		if _, err := os.Stat(filepath.Join(b.Work, p)); err != nil {
			t.Errorf("after the enforced mv: %v", err)
		}
	}
	if _, err := os.Stat(filepath.Join(b.Work, "dist")); err == nil {
		t.Errorf("after the enforced mv, dist is still there")
	}
	fresh()
	if dr := b.Sysprof(t, "drift", "--fail-on", "low", "-p", profile, "--", "mv", "dist", "dist.old"); dr.Code != 0 {
		t.Errorf("drift widened (exit %d):\n%s%s", dr.Code, dr.Stdout, dr.Stderr)
	}
}
