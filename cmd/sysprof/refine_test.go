package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/refine"
	"github.com/sysprof/sysprof/report"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// The refine fixtures were recorded on alice's machine: a cargo build of hello-rs whose build
// script read ~/.ssh/id_ed25519 (critical), ran /usr/bin/curl (high), and whose cargo and
// rustc needed utimensat (low).
const (
	refineDir     = "../../testdata/refine"
	refineReport  = refineDir + "/cargo-build.report.json"
	refineProfile = refineDir + "/cargo-build.yaml"
	aliceWorkdir  = "/home/alice/src/hello-rs"
)

// aliceEnv are the variables that make the fixture's host paths portable.
var aliceEnv = map[string]string{
	"HOME":        "/home/alice",
	"CARGO_HOME":  "/home/alice/.cargo",
	"RUSTUP_HOME": "/home/alice/.rustup",
	"TMPDIR":      "/tmp",
}

// origEnv is the environment before any test changed it (go build needs the real HOME).
var origEnv = os.Environ()

var refineNow = time.Date(2026, 11, 30, 5, 0, 0, 0, time.UTC)

// setAliceEnv makes enforcer.HostEnv answer like alice's machine.
func setAliceEnv(t *testing.T) {
	for k, v := range aliceEnv {
		t.Setenv(k, v)
	}
	for _, k := range []string{"GOCACHE", "GOMODCACHE", "GOPATH", "XDG_CACHE_HOME", "NPM_CACHE"} {
		t.Setenv(k, "")
	}
}

// copyProfile puts a copy of the fixture profile in a temp dir and returns its path.
func copyProfile(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(refineProfile)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "cargo-build.yaml")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// runRefineCLI runs `sysprof refine ARGS` in process with stdin not a terminal and a fixed
// clock, and returns the exit status, stdout and stderr.
func runRefineCLI(t *testing.T, stdin io.Reader, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	cmd := newRefineCmd(streams{In: stdin, Out: &out, Err: &errb}, func(ctx context.Context, o *refineOptions) error {
		o.Now = func() time.Time { return refineNow }
		if o.Interactive == nil {
			o.Interactive = func() bool { return false }
		}
		return runRefine(ctx, o)
	})
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	err := cmd.ExecuteContext(context.Background())
	if err != nil {
		var ee *exitError
		if !asExitError(err, &ee) || ee.err != nil {
			fmt.Fprintf(&errb, "sysprof: %v\n", err)
		}
	}
	return codeOf(err), out.String(), errb.String()
}

func asExitError(err error, target **exitError) bool {
	e, ok := err.(*exitError)
	if ok {
		*target = e
	}
	return ok
}

// golden compares got with testdata/refine/NAME, or rewrites it under -update. The temp
// directory of the profile is replaced by PROFILE_DIR.
func golden(t *testing.T, name, got string) {
	t.Helper()
	testutil.Golden(t, filepath.Join(refineDir, name), []byte(got), *update)
}

func normalize(s, profile string) string {
	return strings.ReplaceAll(s, profile, "PROFILE")
}

func TestRefineYes(t *testing.T) {
	setAliceEnv(t)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"yes", []string{"--yes"}},
		{"yes-critical", []string{"--yes", "--max-risk", "critical"}},
		{"only-syscall", []string{"--only", "syscall"}},
		{"only-file", []string{"--only", "file"}},
		{"only-network", []string{"--only", "network"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prof := copyProfile(t)
			args := append([]string{"-p", prof, "--from", refineReport, "--workdir", aliceWorkdir}, tc.args...)
			code, stdout, stderr := runRefineCLI(t, nil, args...)
			if code != 0 {
				t.Fatalf("exit %d, want 0; stderr:\n%s", code, stderr)
			}
			written, err := os.ReadFile(prof)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "refine-"+tc.name+".stdout.golden", normalize(stdout, prof))
			golden(t, "refine-"+tc.name+".stderr.golden", normalize(stderr, prof))
			golden(t, "refine-"+tc.name+".golden.yaml", string(written))
			if _, err := policy.Parse(prof, written); err != nil {
				t.Errorf("written profile does not load: %v", err)
			}
		})
	}
}

// TestRefineYesContent checks the written profiles item by item, so that a wrong golden file
// cannot be accepted with -update unnoticed.
func TestRefineYesContent(t *testing.T) {
	setAliceEnv(t)
	type want struct{ utimensat, curl, sshRead, sshHidden bool }
	for _, tc := range []struct {
		args []string
		want want
	}{
		// A new executable needs a person: never --yes or --only file, at any --max-risk.
		{[]string{"--yes"}, want{utimensat: true, sshHidden: true}},
		{[]string{"--yes", "--max-risk", "low"}, want{utimensat: true, sshHidden: true}},
		{[]string{"--yes", "--max-risk", "critical"}, want{utimensat: true, sshRead: true}},
		{[]string{"--only", "syscall"}, want{utimensat: true, sshHidden: true}},
		{[]string{"--only", "file"}, want{sshHidden: true}},
		{[]string{"--only", "file", "--max-risk", "critical"}, want{sshRead: true}},
		{[]string{"--only", "syscall,file"}, want{utimensat: true, sshHidden: true}},
		// ... unless --only names it.
		{[]string{"--only", "/usr/bin/curl"}, want{curl: true, sshHidden: true}},
		{[]string{"--yes", "--only", "/usr/bin/curl,syscall"}, want{utimensat: true, curl: true, sshHidden: true}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			prof := copyProfile(t)
			code, _, stderr := runRefineCLI(t, nil, append([]string{"-p", prof, "--from", refineReport, "--workdir", aliceWorkdir}, tc.args...)...)
			if code != 0 {
				t.Fatalf("exit %d; stderr:\n%s", code, stderr)
			}
			if got := profileHas(t, prof); got != tc.want {
				t.Errorf("profile has %+v, want %+v", got, tc.want)
			}
		})
	}
}

func profileHas(t *testing.T, path string) (got struct{ utimensat, curl, sshRead, sshHidden bool }) {
	t.Helper()
	p, err := policy.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range p.Syscalls.Allow {
		got.utimensat = got.utimensat || s.Name == "utimensat"
	}
	for _, r := range p.Filesystem.Exec {
		got.curl = got.curl || r.Path == "/usr/bin/curl"
	}
	for _, r := range p.Filesystem.Read {
		got.sshRead = got.sshRead || r.Path == "$HOME/.ssh/id_ed25519"
	}
	for _, r := range p.Filesystem.Hidden {
		got.sshHidden = got.sshHidden || r.Path == "$HOME/.ssh"
	}
	return got
}

func TestRefineNeedsTerminalOrFlags(t *testing.T) {
	setAliceEnv(t)
	prof := copyProfile(t)
	before, _ := os.ReadFile(prof)
	code, stdout, stderr := runRefineCLI(t, nil, "-p", prof, "--from", refineReport, "--workdir", aliceWorkdir)
	if code != exitSysprof {
		t.Errorf("exit %d, want %d", code, exitSysprof)
	}
	if !strings.Contains(stderr, "not a terminal") || !strings.Contains(stderr, "--yes") || !strings.Contains(stderr, "--only") {
		t.Errorf("stderr does not say what to do:\n%s", stderr)
	}
	if stdout != "" {
		t.Errorf("stdout = %q, want nothing", stdout)
	}
	after, _ := os.ReadFile(prof)
	if !bytes.Equal(before, after) {
		t.Errorf("the profile was written")
	}
}

func TestRefineOtherCommand(t *testing.T) {
	setAliceEnv(t)
	prof := copyProfile(t)
	b, err := os.ReadFile(refineReport)
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "report.json")
	if err := os.WriteFile(other, bytes.Replace(b, []byte(`"command": ["cargo", "build"]`), []byte(`"command": ["cargo", "test"]`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runRefineCLI(t, nil, "-p", prof, "--from", other, "--workdir", aliceWorkdir, "--yes")
	if code != exitSysprof || !strings.Contains(stderr, "--force") {
		t.Errorf("exit %d, want %d with a hint at --force; stderr:\n%s", code, exitSysprof, stderr)
	}
	code, _, stderr = runRefineCLI(t, nil, "-p", prof, "--from", other, "--workdir", aliceWorkdir, "--yes", "--force")
	if code != 0 {
		t.Errorf("--force: exit %d; stderr:\n%s", code, stderr)
	}
}

func TestRefineTwiceChangesNothing(t *testing.T) {
	setAliceEnv(t)
	prof := copyProfile(t)
	args := []string{"-p", prof, "--from", refineReport, "--workdir", aliceWorkdir, "--yes", "--max-risk", "critical", "--only", "/usr/bin/curl"}
	if code, _, stderr := runRefineCLI(t, nil, args...); code != 0 {
		t.Fatalf("first run: exit %d\n%s", code, stderr)
	}
	once, _ := os.ReadFile(prof)
	code, stdout, stderr := runRefineCLI(t, nil, args...)
	if code != 0 || stdout != "" || !strings.Contains(stderr, "nothing to refine") {
		t.Errorf("second run: exit %d, stdout %q, stderr %q; want 0, nothing, \"nothing to refine\"", code, stdout, stderr)
	}
	twice, _ := os.ReadFile(prof)
	if !bytes.Equal(once, twice) {
		t.Errorf("the second run rewrote the profile")
	}
}

func TestRefineDryRun(t *testing.T) {
	setAliceEnv(t)
	prof := copyProfile(t)
	before, _ := os.ReadFile(prof)
	code, stdout, stderr := runRefineCLI(t, nil, "-p", prof, "--from", refineReport, "--workdir", aliceWorkdir, "--yes", "--dry-run")
	if code != 0 || !strings.Contains(stdout, "utimensat") || !strings.Contains(stderr, "--dry-run") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	after, _ := os.ReadFile(prof)
	if !bytes.Equal(before, after) {
		t.Errorf("--dry-run wrote the profile")
	}
}

// TestRefineFlags parses flags through the runF seam without running anything.
func TestRefineFlags(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, tc := range []struct {
		args    []string
		code    int
		profile string
	}{
		{[]string{"--from", refineAbs(t), "--yes"}, 0, filepath.Join(".sysprof", "cargo-build.yaml")},
		{[]string{"--from", refineAbs(t), "-p", "x.yaml", "--only", "file,network"}, 0, "x.yaml"},
		{[]string{"--yes"}, exitSysprof, ""},
		{[]string{"--from", refineAbs(t), "--only", "files"}, exitSysprof, ""},
		{[]string{"--from", refineAbs(t), "--max-risk", "severe"}, exitSysprof, ""},
		{[]string{"--from", "/nonexistent/report.json"}, exitSysprof, ""},
	} {
		var got *refineOptions
		cmd := newRefineCmd(streams{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard}, func(_ context.Context, o *refineOptions) error {
			got = o
			return nil
		})
		cmd.SetArgs(tc.args)
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		code := codeOf(cmd.Execute())
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d", tc.args, code, tc.code)
			continue
		}
		if code == 0 && got.Profile != tc.profile {
			t.Errorf("%v: profile %q, want %q", tc.args, got.Profile, tc.profile)
		}
	}
}

func refineAbs(t *testing.T) string {
	t.Helper()
	return filepath.Join(pkgDir, refineReport)
}

// pkgDir is this package's directory, for tests that change the working directory.
var pkgDir, _ = os.Getwd()

// sysprofBinary builds the real sysprof binary once for tests that run it as a process.
var sysprofBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "sysprof-test-bin-")
	if err != nil {
		return "", err
	}
	binDir = dir
	bin := filepath.Join(dir, "sysprof")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = pkgDir
	cmd.Env = origEnv
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

var binDir string

func TestMain(m *testing.M) {
	flag.Parse()
	// The runs' changesets of the tests' enforce runs: never the user's.
	state, err := os.MkdirTemp("", "sysprof-cmd-state-")
	if err == nil {
		_ = os.Chmod(state, 0o1777) // the tests that run sysprof as nobody share it (sticky, like /tmp)
		os.Setenv("SYSPROF_STATE_DIR", state)
		origEnv = append(origEnv, "SYSPROF_STATE_DIR="+state)
	}
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	if state != "" {
		os.RemoveAll(state)
	}
	os.Exit(code)
}

// terminal is the master side of a session: everything the program printed, and a way to
// wait for a prompt before answering it.
type terminal struct {
	mu   sync.Mutex
	cond *sync.Cond
	buf  bytes.Buffer
	done bool
}

func newTerminal(r io.Reader) *terminal {
	tm := &terminal{}
	tm.cond = sync.NewCond(&tm.mu)
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := r.Read(b)
			tm.mu.Lock()
			tm.buf.Write(b[:n])
			if err != nil {
				tm.done = true
			}
			tm.cond.Broadcast()
			tm.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return tm
}

// waitFor blocks until the output holds n occurrences of s, or the program's side closed.
func (tm *terminal) waitFor(s string, n int) bool {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	for strings.Count(tm.buf.String(), s) < n {
		if tm.done {
			return false
		}
		tm.cond.Wait()
	}
	return true
}

func (tm *terminal) String() string {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return tm.buf.String()
}

// session runs the built sysprof refine on a pseudo-terminal and types answers, one per
// prompt, returning everything the terminal showed and the exit status.
func session(t *testing.T, prof string, answers ...string) (string, int) {
	t.Helper()
	bin, err := sysprofBinary()
	if err != nil {
		t.Fatal(err)
	}
	master, slave := testutil.OpenPTY(t)
	defer master.Close()
	cmd := exec.Command(bin, "refine", "-p", prof, "--from", refineReport, "--workdir", aliceWorkdir)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "TERM=dumb"}
	for k, v := range aliceEnv {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		slave.Close()
		t.Fatal(err)
	}
	slave.Close()
	tm := newTerminal(master)
	// A guard against a hung session, not a timing assertion.
	timer := time.AfterFunc(2*time.Minute, func() { cmd.Process.Kill() })
	defer timer.Stop()
	for i, a := range answers {
		if !tm.waitFor("[q]uit [", i+1) {
			t.Errorf("the session ended before prompt %d; it showed:\n%s", i+1, tm.String())
			break
		}
		if _, err := io.WriteString(master, a+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	err = cmd.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	tm.waitFor("\x00never", 1) // drain: returns once the master reads EIO
	return tm.String(), code
}

func TestRefineTerminalSession(t *testing.T) {
	prof := copyProfile(t)
	// Proposals come worst first: ~/.ssh/id_ed25519 (critical), /usr/bin/curl (high),
	// utimensat (low). Keep ~/.ssh hidden with enter (the default), answer nonsense once, then
	// allow curl exactly, and keep utimensat denied.
	out, code := session(t, prof, "", "x", "a", "k")
	if code != 0 {
		t.Fatalf("exit %d; terminal:\n%s", code, out)
	}
	for _, s := range []string{
		"[1/3] CRITICAL  allow reading $HOME/.ssh/id_ed25519",
		"asked by $WORKDIR/target/debug/build/hello-rs-*/build-script-build",
		"under    $RUSTUP_HOME/toolchains/stable-x86_64-unknown-linux-gnu/bin/cargo",
		"denied   2 times",
		"[a]llow exactly / [k]eep denied / [q]uit [k]: ",
		"[2/3] HIGH  allow /usr/bin/curl to run",
		"[a]llow exactly / allow [d]irectory / [k]eep denied / [h]ide / [q]uit [k]: ", // a new executable: default keep
		`"x" is not one of the answers`,
		"[3/3] LOW  allow syscall utimensat",
		"denied   17 times",
		"filesystem.exec", // the printed diff
	} {
		if !strings.Contains(out, s) {
			t.Errorf("terminal does not show %q; it showed:\n%s", s, out)
		}
	}
	if strings.Index(out, "CRITICAL") > strings.Index(out, "HIGH") || strings.Index(out, "HIGH") > strings.Index(out, "LOW") {
		t.Errorf("proposals not worst first:\n%s", out)
	}
	type has = struct{ utimensat, curl, sshRead, sshHidden bool }
	if got, want := profileHas(t, prof), (has{curl: true, sshHidden: true}); got != want {
		t.Errorf("profile has %+v, want %+v (only the accepted item)", got, want)
	}
	// Exactly one change: nothing declined slipped in.
	orig, err := policy.Load(refineProfile)
	if err != nil {
		t.Fatal(err)
	}
	written, err := policy.Load(prof)
	if err != nil {
		t.Fatal(err)
	}
	var changes []string
	for _, c := range policy.Diff(orig, written) {
		changes = append(changes, c.String())
	}
	want := []string{"+ high filesystem.exec added: /usr/bin/curl (new executable path: more code may run)"}
	if _, _, ok := refine.Executable("/usr/bin/curl"); ok { // refine lists a binary it can read here
		want = append(want, "+ high binaries added: /usr/bin/curl (new executed binary)")
	}
	if !cmp.Equal(changes, want) {
		t.Errorf("changes %q, want %q", changes, want)
	}
}

func TestRefineTerminalQuit(t *testing.T) {
	prof := copyProfile(t)
	before, _ := os.ReadFile(prof)
	// Quit at the first question: nothing was accepted, so nothing is written.
	out, code := session(t, prof, "q")
	if code != 0 {
		t.Fatalf("exit %d; terminal:\n%s", code, out)
	}
	if !strings.Contains(out, "no change accepted") {
		t.Errorf("terminal does not say nothing changed:\n%s", out)
	}
	after, _ := os.ReadFile(prof)
	if !bytes.Equal(before, after) {
		t.Errorf("quitting at the first question wrote the profile")
	}
	// Quit after allowing ~/.ssh: the answer given stands, the rest stay denied.
	out, code = session(t, prof, "a", "q")
	if code != 0 {
		t.Fatalf("exit %d; terminal:\n%s", code, out)
	}
	type has = struct{ utimensat, curl, sshRead, sshHidden bool }
	if got, want := profileHas(t, prof), (has{sshRead: true}); got != want {
		t.Errorf("profile has %+v, want %+v", got, want)
	}
}

// TestPrintProposalEscapes: refine's question names a forged file escaped (issue 23 item 6):
// nothing in it moves the cursor or reorders the text.
func TestPrintProposalEscapes(t *testing.T) {
	forged := "\x1b[2K\x1b[1Asysprof: 0 operation(s) denied\x1b[8m\u202e"
	p := refine.Proposal{Summary: "allow writing $WORKDIR/" + forged, Reason: "why " + forged, Exes: []string{"/w/" + forged},
		Denial: report.Denial{What: "/w/" + forged + " write", Count: 1, Parents: []string{"/bin/" + forged}},
		Exact:  refine.Patch{Grant: policy.Grant{Section: "filesystem.write", Item: "$WORKDIR/" + forged}}}
	var b strings.Builder
	printProposal(&b, 1, 1, p, nil)
	out := strings.ReplaceAll(b.String(), "\n", "")
	if strings.ContainsAny(out, "\x1b\u202e") || !strings.Contains(out, `\x1b[2K\x1b[1Asysprof: 0 operation(s) denied\x1b[8m\u202e`) {
		t.Errorf("the question is not escaped:\n%q", b.String())
	}
}
