package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/report"
)

// ratchetConfig: gen writes gen.txt, check reads it (the step before wrote it: it exists only in
// the run's changeset) and writes check.txt, then exits $GATE_STATUS.
func ratchetConfig(status string) string {
	return `version: 1
steps:
  - name: gen
    command: [sh, -c, "echo gen > gen.txt"]
  - name: check
    command: [sh, -c, "cat gen.txt > check.txt && exit $GATE_STATUS"]
    env: [GATE_STATUS=` + status + `]
`
}

// TestGatesAreARatchet is issue 22 item 4: the steps of `enforce --all` write into one
// changeset, each sees what the steps before it wrote, and nothing is applied until every step
// passed; a failed gate holds every step's outputs, names the gate in the report and the
// review, and the run stays for `sysprof changes`.
func TestGatesAreARatchet(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTool(t, "sh")
	dir := newProjectDir(t, ratchetConfig("0"))
	if code, stdout, stderr := runSysprof(t, dir, "learn", "--all"); code != 0 {
		t.Fatalf("learn --all: status %d\n%s\n%s", code, stdout, stderr)
	}
	gen, check := filepath.Join(dir, "gen.txt"), filepath.Join(dir, "check.txt")
	clean := func() {
		for _, f := range []string{gen, check} {
			if err := os.Remove(f); err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
		}
	}
	exists := func(p string) bool { _, err := os.Lstat(p); return err == nil }

	// The failing variant first: check fails with 3, gen passed; nothing reaches the host.
	clean()
	writeFile(t, filepath.Join(dir, projectFile), ratchetConfig("3"))
	rep := filepath.Join(dir, "gates.json")
	code, stdout, stderr := runSysprof(t, dir, "enforce", "--all", "--report", rep)
	if code != 3 {
		t.Fatalf("enforce --all with a failing gate: status %d, want 3\n%s\n%s", code, stdout, stderr)
	}
	if exists(gen) || exists(check) {
		t.Errorf("a failed gate let outputs reach the host: gen.txt %v, check.txt %v", exists(gen), exists(check))
	}
	r, err := report.Load(stepFile(rep, "check"))
	if err != nil {
		t.Fatal(err)
	}
	ch := r.Changes
	if ch == nil || ch.Gate != "check" || ch.Applied != 0 || ch.Run == "" {
		t.Fatalf("the failing gate's report does not name the gate and hold everything: %+v", ch)
	}
	for _, f := range []string{gen, check} {
		if !slices.ContainsFunc(ch.Held, func(h report.Change) bool { return h.Path == f }) {
			t.Errorf("%s is not held: %+v", f, ch.Held)
		}
	}
	if !strings.Contains(stderr, "gate check failed: nothing applied") || !strings.Contains(stderr, "sysprof changes diff "+ch.Run) {
		t.Errorf("the review does not say the gate held everything:\n%s", stderr)
	}
	if code, stdout, _ := runSysprof(t, dir, "changes"); code != 0 || !strings.Contains(stdout, ch.Run) {
		t.Errorf("sysprof changes does not list the held run %s:\n%s", ch.Run, stdout)
	}
	if code, _, stderr := runSysprof(t, dir, "changes", "drop", ch.Run); code != 0 {
		t.Fatalf("changes drop: %s", stderr)
	}

	// Every gate passes: check saw gen.txt from the changeset, and both apply at the end.
	clean()
	writeFile(t, filepath.Join(dir, projectFile), ratchetConfig("0"))
	code, stdout, stderr = runSysprof(t, dir, "enforce", "--all")
	if code != 0 {
		t.Fatalf("enforce --all: status %d\n%s\n%s", code, stdout, stderr)
	}
	for _, f := range []string{gen, check} {
		if b, err := os.ReadFile(f); err != nil || string(b) != "gen\n" {
			t.Errorf("%s after every gate passed: %q %v", f, b, err)
		}
	}
	if !strings.Contains(stderr, "sysprof: review: 2 change(s) applied, nothing held") {
		t.Errorf("no review at the end of the gated run:\n%s", stderr)
	}
}
