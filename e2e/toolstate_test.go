package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
)

// TestCargoStateEitherWay (issue 24, a CI flake): cargo writes its last-use database
// ($CARGO_HOME/.global-cache, with a journal and a sync of $CARGO_HOME) when it is new and at
// most about once a day, and only opens it otherwise. A profile learned in one state is drifted
// and enforced in the other: nothing widens, nothing about the database narrows, no denial.
func TestCargoStateEitherWay(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTools(t, hostPath, "cargo")
	root := t.TempDir()
	b := newBox(t, root, "x", "alice", filepath.Join("src", "project"), "crate")
	build := []string{"cargo", "build", "--offline"}
	cold := "rm -rf target \"$CARGO_HOME\"/.global-cache*"
	warm := "rm -rf target && cargo build --offline -q && rm -rf target"
	for _, c := range []struct{ name, learnIn, runIn string }{
		{"learned-warm", warm, cold},
		{"learned-cold", cold, warm},
	} {
		t.Run(c.name, func(t *testing.T) {
			profile := filepath.Join(root, c.name+".yaml")
			b.Sh(t, c.learnIn)
			if r := b.Sysprof(t, append([]string{"learn", "-p", profile, "--"}, build...)...); r.Code != 0 {
				t.Fatalf("learn: %s", r)
			}
			b.Sh(t, c.runIn)
			rep := filepath.Join(root, c.name+"-report.json")
			if r := b.Sysprof(t, append([]string{"enforce", "-p", profile, "--report", rep, "--"}, build...)...); r.Code != 0 {
				t.Errorf("enforce: %s", r)
			}
			for _, d := range testutil.ReadReport(t, rep).Denials {
				t.Errorf("denial: [%s] %s by %s: suggest %q", d.Kind, d.What, d.Exe, d.Suggest)
			}
			b.Sh(t, c.runIn)
			r := b.Sysprof(t, append([]string{"drift", "--fail-on", "low", "-p", profile, "--"}, build...)...)
			if r.Code != 0 {
				t.Errorf("drift widened: %s", r)
			}
			if strings.Contains(r.Stderr, ".global-cache") || strings.Contains(r.Stderr, "$CARGO_HOME ") {
				t.Errorf("drift reports cargo's database:\n%s", r.Stderr)
			}
		})
	}
}

// TestPytestColdAndWarm (issue 24): pytest keeps the newest three of its
// $TMPDIR/pytest-of-USER/pytest-N directories; once there are enough, a run renames the oldest
// aside (garbage-*) and removes it. Learned with none (cold) or with three (warm), the profile
// holds for a run in the other state, enforced and drifted: no denial, nothing widens (the
// rotate family).
func TestPytestColdAndWarm(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTools(t, hostPath, "pytest-3")
	root := t.TempDir()
	b := newBox(t, root, "x", "alice", filepath.Join("src", "project"), "")
	testutil.WriteFile(t, filepath.Join(b.Work, "test_tmp.py"), `def test_tmp_path(tmp_path):
    (tmp_path / "f.txt").write_text("x")
    assert (tmp_path / "f.txt").read_text() == "x"
`, 0o644)
	pytest := []string{"pytest-3", "-q", "-p", "no:cacheprovider", "test_tmp.py"}
	cold := `rm -rf "$TMPDIR"/pytest-of-*`
	warm := cold + ` && for i in 1 2 3 4; do pytest-3 -q -p no:cacheprovider test_tmp.py >/dev/null || exit 1; done`
	// The tests' bytecode is cached (pytest writes it through a rename of its own), as in a
	// checkout whose tests ran before /tmp was emptied.
	b.Sh(t, warm)
	for _, c := range []struct{ name, learnIn, runIn string }{
		{"learned-cold", cold, warm},
		{"learned-warm", warm, cold},
	} {
		t.Run(c.name, func(t *testing.T) {
			profile := filepath.Join(root, c.name+".yaml")
			b.Sh(t, c.learnIn)
			if r := b.Sysprof(t, append([]string{"learn", "-p", profile, "--"}, pytest...)...); r.Code != 0 {
				t.Fatalf("learn: %s", r)
			}
			b.Sh(t, c.runIn)
			rep := filepath.Join(root, c.name+"-report.json")
			if r := b.Sysprof(t, append([]string{"enforce", "-p", profile, "--report", rep, "--"}, pytest...)...); r.Code != 0 {
				t.Errorf("enforce: %s", r)
			}
			for _, d := range testutil.ReadReport(t, rep).Denials {
				t.Errorf("denial: [%s] %s by %s: suggest %q", d.Kind, d.What, d.Exe, d.Suggest)
			}
			b.Sh(t, c.runIn)
			if r := b.Sysprof(t, append([]string{"drift", "--fail-on", "low", "-p", profile, "--"}, pytest...)...); r.Code != 0 {
				t.Errorf("drift widened: %s", r)
			}
		})
	}
}
