package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
)

// Helpers the red teams share (redteam7, redteam8): a learned real tool, widened by what a
// payload needs, and what the report must hold.

// widen adds to profile what a payload needs beyond the learned run (as a profile that
// learned them: a tool that makes links, fifos, sets xattrs), saved as name in dir.
func widen(t *testing.T, profile, dir, name string, calls, exec []string) string {
	t.Helper()
	p := loadProfile(t, profile)
	for _, n := range calls {
		if !slices.ContainsFunc(p.Syscalls.Allow, func(s policy.Syscall) bool { return s.Name == n }) {
			p.Syscalls.Allow = append(p.Syscalls.Allow, policy.Syscall{Name: n})
		}
	}
	for _, e := range exec {
		p.Filesystem.Exec = append(p.Filesystem.Exec, policy.PathRule{Path: e})
	}
	out := filepath.Join(dir, name)
	if err := policy.Save(out, p); err != nil {
		t.Fatal(err)
	}
	return out
}

// heldDangerous reports whether the run report holds path as a dangerous change.
func heldDangerous(rp *report.Report, path string) bool {
	return rp.Changes != nil && slices.ContainsFunc(rp.Changes.Held, func(c report.Change) bool {
		return c.Path == path && c.Class == "dangerous"
	})
}

// learnedMakeBox is a work tree whose `make` (a recipe writing build/ with the shell, truncate
// and python3) is learned into profile; setup, when given, adds to the tree before the learn.
// py is the python3 the recipe ran (a payload runs in its place).
func learnedMakeBox(t *testing.T, setup func(b *testutil.Box)) (b *testutil.Box, root, profile, py string) {
	t.Helper()
	testutil.RequireRoot(t)
	testutil.RequireTools(t, hostPath, "make", "setpriv", "truncate")
	root = t.TempDir()
	b = newBox(t, root, "x", "dev", "work", "")
	py = "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Fatalf("%s: %v", py, err)
	}
	testutil.WriteFile(t, filepath.Join(b.Work, "Makefile"), "all:\n\tmkdir -p build && echo hi > build/out && truncate -s 1M build/t && rm build/t && "+py+" -c 'open(\"build/py\", \"w\").write(\"x\")'\n", 0o644)
	if setup != nil {
		setup(b)
	}
	profile = filepath.Join(root, "p.yaml")
	if r := b.Sysprof(t, "learn", "-p", profile, "--", "make"); r.Code != 0 {
		t.Fatalf("learn make: %s", r)
	}
	return b, root, profile, py
}
