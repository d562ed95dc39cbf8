package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
)

// runSysprofEnv is runSysprof with the test's environment minus SUDO_* (sudo may have started
// the tests) plus env.
func runSysprofEnv(t *testing.T, dir string, env []string, args ...string) (int, string, string) {
	t.Helper()
	bin, err := sysprofBinary()
	if err != nil {
		t.Fatal(err)
	}
	var full []string
	for _, kv := range origEnv {
		if !strings.HasPrefix(kv, "SUDO_") {
			full = append(full, kv)
		}
	}
	r := testutil.Run(t, dir, append(full, env...), append([]string{bin}, args...)...)
	return r.Code, r.Stdout, r.Stderr
}

// denyScript succeeds whatever happens; with ./write present it first tries to write
// out.txt in the work tree (read-only under enforce: a denial the command shrugs off), with
// ./fail present it exits 3 without any denial.
const denyScript = `if [ -e write ]; then echo x > out.txt || true; fi; if [ -e fail ]; then exit 3; fi; echo done`

// TestEnforceFailOnDenial: --fail-on-denial turns a run whose command succeeded with a denial
// into exit 1, leaves a clean run and a failing command's own status alone, and says what this
// run could not observe when the command failed with no denial reported.
func TestEnforceFailOnDenial(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTool(t, "sh")
	dir := newProjectDir(t, "version: 1\n")
	prof := filepath.Join(dir, "p.yaml")
	argv := []string{"sh", "-c", denyScript}
	if code, _, stderr := runSysprofEnv(t, dir, nil, append([]string{"learn", "-p", prof, "--"}, argv...)...); code != 0 {
		t.Fatalf("learn: status %d\n%s", code, stderr)
	}
	enforce := func(flags ...string) (int, string) {
		t.Helper()
		args := append(append([]string{"enforce", "-p", prof}, flags...), "--")
		code, _, stderr := runSysprofEnv(t, dir, nil, append(args, argv...)...)
		return code, stderr
	}

	// Benign control: nothing denied, exit 0 with the flag too.
	if code, stderr := enforce("--fail-on-denial"); code != 0 {
		t.Fatalf("clean run with --fail-on-denial: status %d, want 0\n%s", code, stderr)
	}
	writeFile(t, filepath.Join(dir, "write"), "")
	// Without the flag the command's status stands (the denial is only reported).
	if code, stderr := enforce(); code != 0 || !strings.Contains(stderr, "out.txt") {
		t.Fatalf("denied write without --fail-on-denial: status %d, want 0 and the denial reported\n%s", code, stderr)
	}
	code, stderr := enforce("--fail-on-denial")
	if code != exitDenied || !strings.Contains(stderr, "--fail-on-denial: the command succeeded, but") {
		t.Fatalf("denied write with --fail-on-denial: status %d, want %d\n%s", code, exitDenied, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "out.txt")); err == nil {
		t.Fatal("out.txt was written: the write was not denied")
	}
	// Under --audit the write goes through, and the flag still fails the run.
	if code, stderr := enforce("--audit", "--fail-on-denial"); code != exitDenied {
		t.Errorf("--audit --fail-on-denial with a would-be denial: status %d, want %d\n%s", code, exitDenied, stderr)
	}
	os.Remove(filepath.Join(dir, "out.txt"))
	os.Remove(filepath.Join(dir, "write"))

	// The command fails with nothing reported: its status, plus the one-line pointer.
	writeFile(t, filepath.Join(dir, "fail"), "")
	code, stderr = enforce("--fail-on-denial")
	if code != 3 {
		t.Fatalf("failing command with --fail-on-denial: status %d, want 3\n%s", code, stderr)
	}
	if n := strings.Count(stderr, "with no denial reported; this run could not observe: "); n != 1 {
		t.Errorf("want one pointer to the unobservable kinds, got %d:\n%s", n, stderr)
	}
	if code, stderr := enforce(); code != 3 || strings.Contains(stderr, "could not observe") {
		t.Errorf("failing command without the flag: status %d (want 3) and no pointer:\n%s", code, stderr)
	}
}

// TestGatesFailOnDenial: failOnDenial in sysprof.yaml fails the gate that succeeded with a
// denial (exit 1, later steps not run); --fail-on-denial=false overrides it.
func TestGatesFailOnDenial(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTool(t, "sh")
	config := func(fail string) string {
		return "version: 1\nfailOnDenial: " + fail + "\nsteps:\n  - name: write\n    command: [sh, -c, '" + denyScript + "']\n  - name: mark\n    command: [sh, -c, 'echo ran > mark.txt']\n"
	}
	dir := newProjectDir(t, config("true"))
	if code, _, stderr := runSysprofEnv(t, dir, nil, "learn", "--all"); code != 0 {
		t.Fatalf("learn --all: status %d\n%s", code, stderr)
	}
	os.Remove(filepath.Join(dir, "mark.txt"))
	if code, _, stderr := runSysprofEnv(t, dir, nil, "enforce", "--all"); code != 0 {
		t.Fatalf("clean gates: status %d, want 0\n%s", code, stderr)
	}
	os.Remove(filepath.Join(dir, "mark.txt"))
	writeFile(t, filepath.Join(dir, "write"), "")
	code, _, stderr := runSysprofEnv(t, dir, nil, "enforce", "--all")
	if code != exitDenied || !strings.Contains(stderr, "write        FAILED: 1 denial(s)") || !strings.Contains(stderr, "mark         not run") {
		t.Fatalf("failOnDenial: true with a denied write: status %d, want %d, the gate FAILED and mark not run\n%s", code, exitDenied, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "mark.txt")); err == nil {
		t.Error("the step after the failed gate ran")
	}
	if code, _, stderr := runSysprofEnv(t, dir, nil, "enforce", "--all", "--fail-on-denial=false"); code != 0 {
		t.Errorf("--fail-on-denial=false over failOnDenial: true: status %d, want 0\n%s", code, stderr)
	}
	os.Remove(filepath.Join(dir, "mark.txt"))
	writeFile(t, filepath.Join(dir, projectFile), config("false"))
	if code, _, stderr := runSysprofEnv(t, dir, nil, "enforce", "--all"); code != 0 {
		t.Errorf("failOnDenial: false with a denied write: status %d, want 0\n%s", code, stderr)
	}
}

// TestEnforceWarnsIncomplete: a profile marked incomplete is enforced with a warning; a
// complete one without.
func TestEnforceWarnsIncomplete(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTool(t, "true")
	dir := newProjectDir(t, "version: 1\n")
	prof := filepath.Join(dir, "p.yaml")
	if code, _, stderr := runSysprofEnv(t, dir, nil, "learn", "-p", prof, "--", "true"); code != 0 {
		t.Fatalf("learn: status %d\n%s", code, stderr)
	}
	const warning = "is marked incomplete"
	if code, _, stderr := runSysprofEnv(t, dir, nil, "enforce", "-p", prof, "--", "true"); code != 0 || strings.Contains(stderr, warning) {
		t.Fatalf("complete profile: status %d, want 0 without a warning\n%s", code, stderr)
	}
	p, err := policy.Load(prof)
	if err != nil {
		t.Fatal(err)
	}
	p.Metadata.Incomplete = true
	p.Metadata.IncompleteReasons = []string{"interrupted (SIGINT)"}
	if err := policy.Save(prof, p); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runSysprofEnv(t, dir, nil, "enforce", "-p", prof, "--", "true")
	if code != 0 || !strings.Contains(stderr, "WARNING: "+prof+" "+warning+" (interrupted (SIGINT))") {
		t.Errorf("incomplete profile: status %d, want 0 and the warning\n%s", code, stderr)
	}
}

func ownerOf(t *testing.T, path string) uint32 {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Uid
}

// TestLearnUnderSudoOwnsFiles: learn under sudo (SUDO_UID/SUDO_GID) gives the files and
// directories it made to the invoking user, and nothing else: a lock file planted as a
// symlink or as a hard link to a root-owned file leaves that file root's. Without SUDO_UID
// everything stays root's.
func TestLearnUnderSudoOwnsFiles(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTool(t, "true")
	const uid = 65534
	sudo := []string{"SUDO_UID=65534", "SUDO_GID=65534", "SUDO_USER=nobody"}
	dir := newProjectDir(t, "version: 1\n")
	prof := filepath.Join(dir, "new", "sub", "p.yaml")
	tr := filepath.Join(dir, "new", "trace.json")
	if code, _, stderr := runSysprofEnv(t, dir, sudo, "learn", "-p", prof, "--trace-out", tr, "--", "true"); code != 0 {
		t.Fatalf("learn under sudo: status %d\n%s", code, stderr)
	}
	for _, p := range []string{prof, prof + ".lock", tr, filepath.Join(dir, "new"), filepath.Join(dir, "new", "sub")} {
		if got := ownerOf(t, p); got != uid {
			t.Errorf("%s: owner %d, want %d (the user who ran sudo)", p, got, uid)
		}
	}
	if got := ownerOf(t, dir); got != 0 {
		t.Errorf("%s existed before: owner %d, want it left to root", dir, got)
	}

	// Control: not under sudo, root's.
	plain := filepath.Join(dir, "plain", "p.yaml")
	if code, _, stderr := runSysprofEnv(t, dir, nil, "learn", "-p", plain, "--", "true"); code != 0 {
		t.Fatalf("learn: status %d\n%s", code, stderr)
	}
	for _, p := range []string{plain, filepath.Dir(plain)} {
		if got := ownerOf(t, p); got != 0 {
			t.Errorf("%s: owner %d, want root without sudo", p, got)
		}
	}

	// Attacks: the invoking user plants the lock file as a symlink to, or a hard link of, a
	// root-owned file (a stand-in for /etc/shadow). Learn still works; the file stays root's.
	for _, how := range []string{"symlink", "hardlink"} {
		t.Run(how, func(t *testing.T) {
			secret := filepath.Join(t.TempDir(), "shadow")
			writeFile(t, secret, "root:*:\n")
			p := filepath.Join(dir, how, "p.yaml")
			writeFile(t, filepath.Join(dir, how, "keep"), "")
			link := os.Symlink
			if how == "hardlink" {
				link = os.Link
			}
			if err := link(secret, p+".lock"); err != nil {
				t.Fatal(err)
			}
			code, _, stderr := runSysprofEnv(t, dir, sudo, "learn", "-p", p, "--", "true")
			if code != 0 {
				t.Fatalf("learn: status %d\n%s", code, stderr)
			}
			if got := ownerOf(t, secret); got != 0 {
				t.Errorf("%s (reached through a %s lock file): owner %d, want root", secret, how, got)
			}
			if got := ownerOf(t, p); got != uid {
				t.Errorf("%s: owner %d, want %d", p, got, uid)
			}
		})
	}
}
