package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
)

// cmdTimeout bounds every subprocess: a hung sandbox fails the test instead of the whole run.
const cmdTimeout = 5 * time.Minute

var (
	// sysprofBin is the binary TestMain built from ./cmd/sysprof.
	sysprofBin string
	// hostPath is the PATH every subprocess gets: the directories of the real go and cargo
	// (rustup's proxies) and the system directories, nothing from the caller's environment.
	hostPath string
	// rustupHome is where the real Rust toolchains live; CARGO_HOME is per test HOME.
	rustupHome string
)

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "sysprof-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	if sysprofBin, err = testutil.BuildSysprof(dir); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	hostPath, rustupHome = toolEnvironment()
	return m.Run()
}

// toolEnvironment finds the real toolchains once: PATH holds only their directories and the
// system ones; RUSTUP_HOME is the real one (the toolchain is read-only input, like GOROOT).
func toolEnvironment() (path, rustup string) {
	var dirs []string
	add := func(d string) {
		for _, e := range dirs {
			if e == d {
				return
			}
		}
		dirs = append(dirs, d)
	}
	for _, tool := range []string{"go", "cargo"} {
		if p, err := exec.LookPath(tool); err == nil {
			add(filepath.Dir(p))
		}
	}
	for _, d := range []string{"/usr/local/bin", "/usr/bin", "/bin", "/usr/local/sbin", "/usr/sbin", "/sbin"} {
		add(d)
	}
	rustup = os.Getenv("RUSTUP_HOME")
	if rustup == "" {
		if home, err := os.UserHomeDir(); err == nil {
			rustup = filepath.Join(home, ".rustup")
		}
	}
	return strings.Join(dirs, ":"), rustup
}

// box is one place a tool runs in, as one user: a work directory, a HOME of its own (with the
// user's Go and Cargo caches inside, where a real user has them) and a TMPDIR.
type box struct {
	Work, Home, Tmp string
	// Extra is appended to the environment (KEY=VALUE).
	Extra []string
}

// newBox makes root/<side>/<user> the HOME, root/<side>/<work> the work directory (a fresh copy
// of testdata/projects/<fixture> when fixture is set) and root/<side>/tmp the TMPDIR.
func newBox(t testing.TB, root, side, user, work, fixture string) *box {
	t.Helper()
	b := &box{
		Work: filepath.Join(root, side, work),
		Home: filepath.Join(root, side, user),
		Tmp:  filepath.Join(root, side, "tmp"),
	}
	for _, d := range []string{b.Work, b.Home, b.Tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if fixture != "" {
		testutil.CopyTree(t, testutil.Testdata("projects", fixture), b.Work)
	}
	return b
}

// environ is the complete environment of a subprocess: nothing leaks in from the test's own.
func (b *box) environ() []string {
	env := []string{
		"PATH=" + hostPath,
		"HOME=" + b.Home,
		"TMPDIR=" + b.Tmp,
		"LANG=C",
		"LC_ALL=C",
		"TERM=dumb",
		// Go: the user's default cache locations under HOME, offline, never a toolchain download.
		"GOCACHE=" + filepath.Join(b.Home, ".cache", "go-build"),
		"GOMODCACHE=" + filepath.Join(b.Home, "go", "pkg", "mod"),
		"GOFLAGS=-mod=mod",
		"GOTOOLCHAIN=local",
		"GOPROXY=off",
		"GOSUMDB=off",
		// Rust: the real toolchain (rustup's proxies on PATH, RUSTUP_HOME), the user's own
		// CARGO_HOME under HOME so nothing is written to the real one; builds run --offline.
		"CARGO_HOME=" + filepath.Join(b.Home, ".cargo"),
		"CARGO_NET_OFFLINE=true",
		"CARGO_TERM_COLOR=never",
	}
	if rustupHome != "" {
		env = append(env, "RUSTUP_HOME="+rustupHome)
	}
	return append(env, b.Extra...)
}

// result is how a subprocess ended.
type result struct {
	Code           int // exit status; 128+N when killed by signal N
	Stdout, Stderr string
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\n--- stdout:\n%s\n--- stderr:\n%s", r.Code, r.Stdout, r.Stderr)
}

// run runs argv in dir with env and waits for it; argv[0] is looked up in hostPath.
func run(t testing.TB, dir string, env []string, argv ...string) result {
	t.Helper()
	cmd, ctx := command(t, dir, env, argv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := finish(t, ctx, cmd, err, stdout.String(), stderr.String())
	t.Logf("%6.2fs exit %d: %s", time.Since(start).Seconds(), r.Code, shortArgs(argv))
	return r
}

// sysprof runs the built binary with args in b's work directory and environment.
func sysprof(t testing.TB, b *box, args ...string) result {
	t.Helper()
	return run(t, b.Work, b.environ(), append([]string{sysprofBin}, args...)...)
}

// command prepares argv (looked up in hostPath) under a timeout; the context tells whether the
// timeout struck.
func command(t testing.TB, dir string, env []string, argv ...string) (*exec.Cmd, context.Context) {
	t.Helper()
	name := argv[0]
	if !strings.Contains(name, "/") {
		p, err := lookPath(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		name = p
	}
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, name, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Dir = dir
	cmd.Env = env
	// sysprof forwards SIGTERM to the command and tears its sandbox down.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	return cmd, ctx
}

func finish(t testing.TB, ctx context.Context, cmd *exec.Cmd, err error, stdout, stderr string) result {
	t.Helper()
	r := result{Stdout: stdout, Stderr: stderr}
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("%s: %v", strings.Join(cmd.Args, " "), err)
		}
		r.Code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			r.Code = 128 + int(ws.Signal())
		}
	}
	if ctx.Err() != nil {
		t.Fatalf("%s: timed out after %v\n%s", strings.Join(cmd.Args, " "), cmdTimeout, r)
	}
	return r
}

// shortArgs is argv for the log, with the built binary's temp path shortened.
func shortArgs(argv []string) string {
	a := append([]string(nil), argv...)
	if a[0] == sysprofBin {
		a[0] = "sysprof"
	}
	return strings.Join(a, " ")
}

// lookPath finds name in hostPath, the PATH the subprocesses get.
func lookPath(name string) (string, error) {
	for _, d := range filepath.SplitList(hostPath) {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("not found in %s: %w", hostPath, exec.ErrNotFound)
}

// requireTool skips (or fails under CI=true) when a tool the test drives is not on hostPath.
func requireTool(t testing.TB, name string) {
	t.Helper()
	_, err := lookPath(name)
	testutil.RequireNoErr(t, "tool "+name, err)
}

// mustCode fails the test unless r exited with want.
func mustCode(t testing.TB, what string, r result, want int) {
	t.Helper()
	if r.Code != want {
		t.Fatalf("%s: want exit %d, got %s", what, want, r)
	}
}

// readReport loads an enforce --report file.
func readReport(t testing.TB, path string) *report.Report {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read report: %v", err)
	}
	var r report.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("parse report %s: %v\n%s", path, err, b)
	}
	return &r
}

// requireNoDenials fails when an enforce report lists any denial or a degraded layer.
func requireNoDenials(t testing.TB, what, path string, r result) {
	t.Helper()
	rep := readReport(t, path)
	for _, d := range rep.Denials {
		t.Errorf("%s: denial: %s by %s (parents %v, count %d): suggest %q (%s)", what, d.What, d.Exe, d.Parents, d.Count, d.Suggest, d.Risk)
	}
	for _, l := range rep.Degraded() {
		t.Errorf("%s: layer %s degraded: %s", what, l.Name, l.Detail)
	}
	if rep.ExitCode != 0 {
		t.Errorf("%s: report says exit %d", what, rep.ExitCode)
	}
	if t.Failed() {
		t.Fatalf("%s: %s", what, r)
	}
}

// diffJSON is the part of `--format json` the tests read.
type diffJSON struct {
	Format  string          `json:"format"`
	Widens  bool            `json:"widens"`
	Changes []policy.Change `json:"changes"`
}

// parseDiff reads the JSON diff that diff/drift print on stdout.
func parseDiff(t testing.TB, stdout string) diffJSON {
	t.Helper()
	var d diffJSON
	if err := json.Unmarshal([]byte(stdout), &d); err != nil {
		t.Fatalf("diff output is not JSON: %v\n%s", err, stdout)
	}
	if d.Format == "" {
		t.Fatalf("diff output has no format field:\n%s", stdout)
	}
	return d
}

// widening returns the changes that widen the policy.
func widening(cs []policy.Change) []policy.Change {
	var out []policy.Change
	for _, c := range cs {
		if c.Widens {
			out = append(out, c)
		}
	}
	return out
}

func changesString(cs []policy.Change) string {
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&b, "  %s\n", c)
	}
	if b.Len() == 0 {
		return "  (none)\n"
	}
	return b.String()
}

func loadProfile(t testing.TB, path string) *policy.Profile {
	t.Helper()
	p, err := policy.Load(path)
	if err != nil {
		t.Fatalf("load profile: %v", err)
	}
	return p
}
