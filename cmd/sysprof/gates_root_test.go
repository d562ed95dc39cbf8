package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/diffreport"
	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/project"
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
    hosts: ["127.0.0.1:9"]
  - name: mark
    command: [sh, -c, "echo ran > mark.txt"]
`
}

// runSysprof runs the built sysprof binary in dir and returns its status and output (the test's
// environment without SUDO_*: runSysprofEnv).
func runSysprof(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	return runSysprofEnv(t, dir, nil, args...)
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
		if w.Path == "$WORKDIR/reports" && w.Note == project.FromConfigNote {
			found = true
		}
	}
	if !found {
		t.Errorf("check profile lacks the writable path from sysprof.yaml: %+v", check.Filesystem.Write)
	}
	if c := check.Network.Connect; len(c) != 1 || c[0].Endpoint != "127.0.0.1:9" || c[0].Proto != "tcp" || c[0].By != project.FromConfigNote {
		t.Errorf("check profile lacks the host from sysprof.yaml: %+v", c)
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

	// Drift of the unchanged project: one JSON report for every step, the allowances from
	// sysprof.yaml are not drift.
	code, stdout, stderr = runSysprof(t, dir, "drift", "--all", "--format", "json")
	if code != 0 && code != exitWidened {
		t.Fatalf("drift --all: status %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	var drift struct {
		Format string
		Steps  []struct {
			Name    string
			Changes []policy.Change
		}
	}
	if err := json.Unmarshal([]byte(stdout), &drift); err != nil {
		t.Fatalf("drift --all --format json: %v\n%s", err, stdout)
	}
	if drift.Format != diffreport.StepsJSONFormat || len(drift.Steps) != 3 {
		t.Fatalf("drift report: %s", stdout)
	}
	for _, st := range drift.Steps {
		for _, c := range st.Changes {
			if strings.Contains(c.Item, "reports") || strings.Contains(c.Item, "127.0.0.1:9") {
				t.Errorf("step %s: an allowance from sysprof.yaml shows as drift: %v", st.Name, c)
			}
		}
	}
	if code != 0 {
		t.Logf("drift on an unchanged project is not empty (synthesis stability, not gates): %s", stdout)
	}

	// Narrow the committed check profile: drift --all now fails with 1.
	checkPath := filepath.Join(dir, ".sysprof", "check.yaml")
	checkYAML, err := os.ReadFile(checkPath)
	if err != nil {
		t.Fatal(err)
	}
	check.Syscalls.Allow = check.Syscalls.Allow[:len(check.Syscalls.Allow)/2]
	if err := policy.Save(filepath.Join(dir, ".sysprof", "check.yaml"), check); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = runSysprof(t, dir, "drift", "--all")
	if code != exitWidened || !strings.Contains(stderr, "step check (") || stdout != "" {
		t.Fatalf("drift --all after narrowing a profile: status %d, want 1 and the table on stderr only\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}

	writeFile(t, checkPath, string(checkYAML))

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

// A step that starts reading a credential store is drift, as it is for a plain command:
// synthesis keeps the store hidden in both profiles, so only the touch itself shows it.
// drift --step once compared the profiles alone and passed.
func TestDriftStepReportsCredentialStore(t *testing.T) {
	testutil.RequireRoot(t)
	dir := newProjectDir(t, `version: 1
steps:
  - name: read
    command: [sh, -c, 'test -z "$READ_KEY" || cat "$HOME/.ssh/id_test"']
`)
	home := filepath.Join(dir, "home")
	testutil.WriteFile(t, filepath.Join(home, ".ssh", "id_test"), "-----BEGIN FAKE KEY-----\n", 0o600)
	bin, err := sysprofBinary()
	if err != nil {
		t.Fatal(err)
	}
	sysprof := func(env []string, args ...string) (int, string, string) {
		r := testutil.Run(t, dir, append(append(slices.Clone(origEnv), "HOME="+home), env...), append([]string{bin}, args...)...)
		return r.Code, r.Stdout, r.Stderr
	}
	if code, _, stderr := sysprof(nil, "learn", "--step", "read"); code != 0 {
		t.Fatalf("learn: status %d:\n%s", code, stderr)
	}
	if code, stdout, stderr := sysprof(nil, "drift", "--step", "read"); code != 0 {
		t.Fatalf("drift of the unchanged step: status %d:\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr := sysprof([]string{"READ_KEY=1"}, "drift", "--step", "read", "--format", "json")
	if code != exitWidened || !strings.Contains(stdout, ".ssh/id_test") {
		t.Fatalf("drift of a step that now reads ~/.ssh/id_test: status %d (want %d), report:\n%s\nstderr:\n%s", code, exitWidened, stdout, stderr)
	}
}

// learn's flags apply to a step as to a plain command: --pass-env, --arch, --exact and --runs
// were once accepted with --step and not applied.
func TestLearnStepTakesTheFlags(t *testing.T) {
	testutil.RequireRoot(t)
	dir := newProjectDir(t, "version: 1\nsteps:\n  - {name: s, command: [\"true\"]}\n")
	if code, _, stderr := runSysprof(t, dir, "learn", "--step", "s", "--pass-env", "GITHUB_TOKEN", "--arch", "x86_64", "--runs", "2"); code != 0 {
		t.Fatalf("learn: status %d:\n%s", code, stderr)
	}
	p, err := policy.Load(filepath.Join(dir, ".sysprof", "s.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(p.Env.Pass, "GITHUB_TOKEN") {
		t.Errorf("--pass-env not in the step's profile: env.pass %v", p.Env.Pass)
	}
	if !slices.Equal(p.Syscalls.Architectures, []string{"x86_64"}) {
		t.Errorf("--arch not applied to the step: architectures %v", p.Syscalls.Architectures)
	}
	if p.Metadata.Runs != 2 {
		t.Errorf("--runs 2: the step's profile records %d run(s)", p.Metadata.Runs)
	}
}
