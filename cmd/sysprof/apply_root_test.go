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

// TestEnforceApplyModes: --apply none applies nothing (a learned output stays in the changeset,
// class learned, and does not fail --fail-on-denial); a held change fails --fail-on-denial,
// and the default applies what was learned.
func TestEnforceApplyModes(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTool(t, "sh")
	dir := newProjectDir(t, "version: 1\n")
	prof := filepath.Join(dir, "p.yaml")
	out := filepath.Join(dir, "out.txt")
	if code, _, stderr := runSysprofEnv(t, dir, nil, "learn", "-p", prof, "--", "sh", "-c", "echo x > out.txt"); code != 0 {
		t.Fatalf("learn: %s", stderr)
	}
	os.Remove(out)
	rep := filepath.Join(dir, "r.json")

	code, _, stderr := runSysprofEnv(t, dir, nil, "enforce", "-p", prof, "--apply", "none", "--fail-on-denial", "--report", rep, "--", "sh", "-c", "echo x > out.txt")
	if code != 0 {
		t.Fatalf("--apply none with only a learned change: status %d, want 0\n%s", code, stderr)
	}
	if _, err := os.Lstat(out); err == nil {
		t.Errorf("--apply none applied out.txt")
	}
	r, err := report.Load(rep)
	if err != nil {
		t.Fatal(err)
	}
	if r.Changes == nil || r.Changes.Apply != "none" || !slices.ContainsFunc(r.Changes.Held, func(h report.Change) bool { return h.Path == out && h.Class == "learned" }) {
		t.Fatalf("--apply none: out.txt not kept as a learned change: %+v", r.Changes)
	}

	code, _, stderr = runSysprofEnv(t, dir, nil, "enforce", "-p", prof, "--fail-on-denial", "--", "sh", "-c", "echo x > out.txt; echo y > other.txt")
	if code != exitDenied || !strings.Contains(stderr, "held for review") {
		t.Errorf("a held change with --fail-on-denial: status %d, want %d\n%s", code, exitDenied, stderr)
	}
	if b, err := os.ReadFile(out); err != nil || string(b) != "x\n" {
		t.Errorf("the default --apply learned did not apply out.txt: %q %v", b, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "other.txt")); err == nil {
		t.Errorf("other.txt, held, reached the host")
	}
}
