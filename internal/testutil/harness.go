package testutil

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

	"github.com/sysprof/sysprof/report"
)

// The CLI test harness: e2e/, shipped/ and cmd/sysprof's tests run the built sysprof (and the
// tools it wraps) as subprocesses, the way a user or a CI job would, each in a Box with an
// explicit, hermetic and offline environment, and read the report it writes.

// CmdTimeout bounds every subprocess the harness runs: a hung sandbox fails its test, not the
// whole run.
const CmdTimeout = 5 * time.Minute

// SystemPath is the system part of every PATH the harness gives a subprocess.
var SystemPath = []string{"/usr/local/bin", "/usr/bin", "/bin", "/usr/local/sbin", "/usr/sbin", "/sbin"}

// SysprofBin is the sysprof binary MainWithSysprof built ("" before).
var SysprofBin string

// MainWithSysprof is the TestMain of a package whose tests run the CLI: it builds ./cmd/sysprof
// once into a temp dir (SysprofBin), runs the tests and removes the build; pkg names the
// package in its error messages.
func MainWithSysprof(m *testing.M, pkg string) int {
	dir, err := os.MkdirTemp("", "sysprof-"+pkg+"-bin-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", pkg, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if SysprofBin, err = BuildSysprof(dir); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", pkg, err)
		return 1
	}
	return m.Run()
}

// RustupHome is where the real Rust toolchains live: $RUSTUP_HOME, else ~/.rustup. The
// toolchain is read-only input, like GOROOT; each Box has its own CARGO_HOME.
func RustupHome() string {
	if d := os.Getenv("RUSTUP_HOME"); d != "" {
		return d
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".rustup")
	}
	return ""
}

// Box is one place the CLI runs in, as one user: a work directory, a HOME of its own (with the
// user's Go and Cargo caches inside, where a real user has them) and a TMPDIR, and the whole
// environment of every command run there: nothing leaks in from the test's own.
type Box struct {
	Work, Home, Tmp string
	// Path is the PATH of every command; argv[0] is looked up there.
	Path string
	// Rustup is RUSTUP_HOME ("": not set).
	Rustup string
	// Env is the suite's own variables (KEY=VALUE), after the common ones.
	Env []string
	// Extra is the test's own variables, last.
	Extra []string
}

// NewBox makes b's work directory, HOME and TMPDIR (0755, with their parents).
func NewBox(t testing.TB, b *Box) *Box {
	t.Helper()
	for _, d := range []string{b.Work, b.Home, b.Tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// Environ is the complete environment of a command in b: its PATH, HOME and TMPDIR, the C
// locale, a dumb terminal, Go's and Cargo's caches at their defaults under HOME, offline (no
// module proxy, no checksum database, no toolchain download, cargo offline), then b.Env and
// b.Extra.
func (b *Box) Environ() []string {
	env := []string{
		"PATH=" + b.Path,
		"HOME=" + b.Home,
		"TMPDIR=" + b.Tmp,
		"LANG=C",
		"LC_ALL=C",
		"TERM=dumb",
		"GOCACHE=" + filepath.Join(b.Home, ".cache", "go-build"),
		"GOMODCACHE=" + filepath.Join(b.Home, "go", "pkg", "mod"),
		"GOFLAGS=-mod=mod",
		"GOTOOLCHAIN=local",
		"GOPROXY=off",
		"GOSUMDB=off",
		"CARGO_HOME=" + filepath.Join(b.Home, ".cargo"),
		"CARGO_NET_OFFLINE=true",
		"CARGO_TERM_COLOR=never",
	}
	if b.Rustup != "" {
		env = append(env, "RUSTUP_HOME="+b.Rustup)
	}
	env = append(env, b.Env...)
	return append(env, b.Extra...)
}

// CopyFixture copies testdata/<rel> into b's work directory.
func (b *Box) CopyFixture(t testing.TB, rel ...string) {
	t.Helper()
	CopyTree(t, Testdata(rel...), b.Work)
}

// Run runs argv in b's work directory and environment and waits for it.
func (b *Box) Run(t testing.TB, argv ...string) Result {
	t.Helper()
	return Run(t, b.Work, b.Environ(), argv...)
}

// Sysprof runs the built sysprof (SysprofBin) with args in b.
func (b *Box) Sysprof(t testing.TB, args ...string) Result {
	t.Helper()
	if SysprofBin == "" {
		t.Fatal("BUG: Box.Sysprof without MainWithSysprof")
	}
	return b.Run(t, append([]string{SysprofBin}, args...)...)
}

// Sh runs a shell script in b without sysprof (setup and cleaning) and fails the test unless it
// succeeds.
func (b *Box) Sh(t testing.TB, script string) {
	t.Helper()
	if r := b.Run(t, "sh", "-c", script); r.Code != 0 {
		t.Fatalf("sh -c %q: %s", script, r)
	}
}

// Command prepares argv in b (Command).
func (b *Box) Command(t testing.TB, argv ...string) (*exec.Cmd, context.Context) {
	t.Helper()
	return Command(t, b.Work, b.Environ(), argv...)
}

// Result is how a subprocess ended.
type Result struct {
	Code           int // exit status; 128+N when killed by signal N
	Stdout, Stderr string
}

func (r Result) String() string {
	return fmt.Sprintf("exit %d\n--- stdout:\n%s\n--- stderr:\n%s", r.Code, r.Stdout, r.Stderr)
}

// Run runs argv in dir with env (argv[0] looked up in env's PATH) and waits for it, under
// CmdTimeout; it logs how long it took and how it ended.
func Run(t testing.TB, dir string, env []string, argv ...string) Result {
	t.Helper()
	cmd, ctx := Command(t, dir, env, argv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := Finish(t, ctx, cmd, err, stdout.String(), stderr.String())
	t.Logf("%6.2fs exit %d: %s", time.Since(start).Seconds(), r.Code, ShortArgs(argv))
	return r
}

// Command prepares argv in dir with env under CmdTimeout, for a caller that wires the streams
// itself; argv[0], unless it holds a slash, is looked up in env's PATH (the PATH the command
// gets). The context tells Finish whether the timeout struck. A timeout sends SIGTERM: sysprof
// forwards it to the command and tears its sandbox down.
func Command(t testing.TB, dir string, env []string, argv ...string) (*exec.Cmd, context.Context) {
	t.Helper()
	name := argv[0]
	if !strings.Contains(name, "/") {
		p, err := LookPath(envPath(env), name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		name = p
	}
	ctx, cancel := context.WithTimeout(context.Background(), CmdTimeout)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, name, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Dir = dir
	cmd.Env = env
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	return cmd, ctx
}

// envPath is the last PATH of env.
func envPath(env []string) string {
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	return path
}

// Finish turns the end of a command started with Command into a Result: its exit status
// (128+N for signal N) and output. It fails the test when the command could not run or the
// timeout struck.
func Finish(t testing.TB, ctx context.Context, cmd *exec.Cmd, err error, stdout, stderr string) Result {
	t.Helper()
	r := Result{Stdout: stdout, Stderr: stderr}
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
		t.Fatalf("%s: timed out after %v\n%s", strings.Join(cmd.Args, " "), CmdTimeout, r)
	}
	return r
}

// ShortArgs is argv for a log line, the built binary's temp path shortened to "sysprof".
func ShortArgs(argv []string) string {
	a := append([]string(nil), argv...)
	for i := range a {
		if a[i] == SysprofBin && SysprofBin != "" {
			a[i] = "sysprof"
		}
	}
	return strings.Join(a, " ")
}

// LookPath finds name, an executable regular file, in the directories of path.
func LookPath(path, name string) (string, error) {
	for _, d := range filepath.SplitList(path) {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("not found in %s: %w", path, exec.ErrNotFound)
}

// RequireTools skips (or fails under CI=true) when a program the test drives is not on path.
func RequireTools(t testing.TB, path string, names ...string) {
	t.Helper()
	for _, n := range names {
		_, err := LookPath(path, n)
		RequireNoErr(t, "tool "+n, err)
	}
}

// MustCode fails the test unless r exited with want.
func MustCode(t testing.TB, what string, r Result, want int) {
	t.Helper()
	if r.Code != want {
		t.Fatalf("%s: want exit %d, got %s", what, want, r)
	}
}

// ReadReport loads an `enforce --report` file.
func ReadReport(t testing.TB, path string) *report.Report {
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

// DenialString is one report entry for a failure message.
func DenialString(d report.Denial) string {
	return fmt.Sprintf("[%s] %s by %s (parents %v, count %d): suggest %q (%s)", d.Kind, d.What, d.Exe, d.Parents, d.Count, d.Suggest, d.Risk)
}

// RequireNoDenials fails the test when the report at path lists any denial or a degraded layer,
// or says the command did not exit 0; r is the run, printed when it fails.
func RequireNoDenials(t testing.TB, what, path string, r Result) {
	t.Helper()
	rep := ReadReport(t, path)
	for _, d := range rep.Denials {
		t.Errorf("%s: denial: %s by %s (parents %v, count %d): suggest %q (%s)", what, d.What, d.Exe, d.Parents, d.Count, d.Suggest, d.Risk)
	}
	if rep.Changes != nil {
		for _, h := range rep.Changes.Held {
			if h.Class != "learned" && h.State != report.ChangeStripped {
				t.Errorf("%s: change held for review: %s %s (%s: %s)", what, h.Op, h.Path, h.Class, h.Reason)
			}
		}
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
