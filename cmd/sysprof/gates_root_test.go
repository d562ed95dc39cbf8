package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
)

// gatesConfig is a two-gate project plus a third step: build the C fixture with make, check
// its output file (exit $GATE_STATUS), then leave a mark that says the third step ran.
func gatesConfig(status string) string {
	return `version: 1
steps:
  - name: build
    command: [make]
    workdir: cproj
  - name: check
    command: sh -c 'cat out.txt; exit $GATE_STATUS'
    env: [GATE_STATUS=` + status + `]
    writable: [reports]
  - name: mark
    command: [sh, -c, "echo ran > mark.txt"]
`
}

// runSysprof runs the built sysprof binary in dir and returns its status and output.
func runSysprof(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	bin, err := sysprofBinary()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = origEnv
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, out.String(), errb.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String(), errb.String()
	}
	t.Fatal(err)
	return 0, "", ""
}

// TestGatesLearnEnforceAll learns every step of a project for real (eBPF), enforces them as
// gates (sandbox), then enforces a variant whose second gate fails: the run stops there with
// that gate's status and the third step never runs.
func TestGatesLearnEnforceAll(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTool(t, "make")
	testutil.RequireTool(t, "gcc")
	dir := newProjectDir(t, gatesConfig("0"))
	copyDir(t, testutil.Testdata("projects", "cproj"), filepath.Join(dir, "cproj"))
	writeFile(t, filepath.Join(dir, "out.txt"), "gate output\n")

	code, stdout, stderr := runSysprof(t, dir, "learn", "--all")
	if code != 0 {
		t.Fatalf("learn --all: status %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, name := range []string{"build", "check", "mark"} {
		if !strings.Contains(stderr, "sysprof: step "+name+": learn ") {
			t.Errorf("learn --all did not announce step %s:\n%s", name, stderr)
		}
	}
	if !strings.Contains(stdout, "gate output") {
		t.Errorf("the check step's output did not pass through:\n%s", stdout)
	}
	build, err := policy.Load(filepath.Join(dir, ".sysprof", "build.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(build.Metadata.Command, " "); got != "make" {
		t.Errorf("build profile learned %q", got)
	}
	check, err := policy.Load(filepath.Join(dir, ".sysprof", "check.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, w := range check.Filesystem.Write {
		if w.Path == "$WORKDIR/reports" && w.Note == fromConfigNote {
			found = true
		}
	}
	if !found {
		t.Errorf("check profile lacks the writable path from sysprof.yaml: %+v", check.Filesystem.Write)
	}
	os.Remove(filepath.Join(dir, "mark.txt"))
	for _, f := range []string{"hello", "main.o", "greet.o"} {
		os.Remove(filepath.Join(dir, "cproj", f))
	}

	// All gates pass under their profiles.
	rep := filepath.Join(dir, "gates.json")
	code, stdout, stderr = runSysprof(t, dir, "enforce", "--all", "--report", rep)
	if code != 0 {
		t.Fatalf("enforce --all: status %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "cproj", "hello")); err != nil {
		t.Errorf("the build gate did not build inside the sandbox: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "mark.txt")); err != nil {
		t.Errorf("the mark step did not run: %v", err)
	}
	for _, name := range []string{"build", "check", "mark"} {
		r, err := report.Load(stepFile(rep, name))
		if err != nil {
			t.Errorf("report of step %s: %v", name, err)
			continue
		}
		if r.ExitCode != 0 {
			t.Errorf("report of step %s: exit %d", name, r.ExitCode)
		}
	}
	if !strings.Contains(stderr, "sysprof: gates:") {
		t.Errorf("no gate summary:\n%s", stderr)
	}

	// The variant: the check gate fails with status 3; mark never runs.
	os.Remove(filepath.Join(dir, "mark.txt"))
	writeFile(t, filepath.Join(dir, projectFile), gatesConfig("3"))
	code, stdout, stderr = runSysprof(t, dir, "enforce", "--all", "--report", rep+"2")
	if code != 3 {
		t.Fatalf("enforce --all with a failing gate: status %d, want 3\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "mark.txt")); err == nil {
		t.Error("the step after the failing gate ran")
	}
	if !strings.Contains(stdout, "gate output") {
		t.Errorf("the failing gate did not run:\n%s", stdout)
	}
	for _, want := range []string{"step check: sh -c 'cat out.txt; exit $GATE_STATUS' exited with status 3", "check        FAILED with status 3", "mark         not run"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if _, err := os.Stat(stepFile(rep+"2", "mark")); err == nil {
		t.Error("a report was written for the step that did not run")
	}
	if _, err := report.Load(stepFile(rep+"2", "check")); err != nil {
		t.Errorf("no report for the failing gate: %v", err)
	}
}
