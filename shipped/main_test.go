package shipped

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/report"
)

// cmdTimeout bounds every subprocess: a hung sandbox fails its test, not the whole run.
const cmdTimeout = 4 * time.Minute

var (
	sysprofBin string // built once by TestMain
	goroot     string // the real Go toolchain, read-only input
	rustupHome string // the real Rust toolchains, read-only input
	rustupBin  string // rustup itself; each HOME gets a hard link as $CARGO_HOME/bin/rustup
	goplsBin   string // gopls (.ci/run installs it); each HOME gets a hard link as $HOME/go/bin/gopls
)

// findGopls returns gopls on the caller's PATH or in the caller's $GOPATH/bin (where `go
// install` puts it), or "" when there is none (the gopls runs then skip, or fail under CI).
func findGopls() string {
	if p, err := exec.LookPath("gopls"); err == nil {
		p, _ = filepath.EvalSymlinks(p)
		return p
	}
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		for _, d := range filepath.SplitList(strings.TrimSpace(string(out))) {
			p := filepath.Join(d, "bin", "gopls")
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
				return p
			}
		}
	}
	return ""
}

func TestMain(m *testing.M) { os.Exit(testMain(m)) }

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "sysprof-shipped-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "shipped:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	if sysprofBin, err = testutil.BuildSysprof(dir); err != nil {
		fmt.Fprintln(os.Stderr, "shipped:", err)
		return 1
	}
	if out, err := exec.Command("go", "env", "GOROOT").Output(); err == nil {
		goroot = strings.TrimSpace(string(out))
	}
	rustupHome = os.Getenv("RUSTUP_HOME")
	if rustupHome == "" {
		if home, err := os.UserHomeDir(); err == nil {
			rustupHome = filepath.Join(home, ".rustup")
		}
	}
	if p, err := exec.LookPath("rustup"); err == nil {
		rustupBin, _ = filepath.EvalSymlinks(p)
	}
	goplsBin = findGopls()
	code := m.Run()
	for _, d := range usersDirs {
		os.RemoveAll(d)
	}
	return code
}

// user is one person's HOME (with their caches inside, where a real user has them) and TMPDIR.
// Tools that share a user share the Go build cache and CARGO_HOME: the first go command of a
// user sees a cold cache, the later ones a warm one (profiles/learn.sh learned both).
type user struct {
	Name, Home, Tmp string
}

var (
	usersMu   sync.Mutex
	users     = map[string]*user{}
	usersDirs = map[bool]string{} // by outsideTmp
)

// victimUser is the user of the attack tests. Its HOME and work trees are outside /tmp, where a
// real user's are: a profile with a private /tmp would otherwise hide them wholesale, and a write
// to ~/.profile would fail with ENOENT (stopped, but not reportable) instead of being denied.
const victimUser = "victim"

// homeUser is a user of the shipped-profile tests who, like the victim, lives outside /tmp (the
// profiles were learned by users under /tmp: this is the portability check).
const homeUser = "erin"

// getUser returns the shared user name, made on first use (HOME with git identity and rustup's
// proxies in $CARGO_HOME/bin, as profiles/learn.sh makes them). The victim lives under the
// runner's cache directory (~/.cache), and so does erin; everyone else under /tmp like
// profiles/learn.sh's users.
func getUser(t testing.TB, name string) *user {
	t.Helper()
	usersMu.Lock()
	defer usersMu.Unlock()
	if u := users[name]; u != nil {
		return u
	}
	outside := name == victimUser || name == homeUser
	if usersDirs[outside] == "" {
		base := ""
		if outside {
			c, err := os.UserCacheDir()
			if err != nil {
				t.Fatal(err)
			}
			base = c
			if err := os.MkdirAll(base, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		d, err := os.MkdirTemp(base, "sysprof-shipped-users-")
		if err != nil {
			t.Fatal(err)
		}
		usersDirs[outside] = d
	}
	usersDir := usersDirs[outside]
	u := &user{Name: name, Home: filepath.Join(usersDir, name, "home", name), Tmp: filepath.Join(usersDir, name, "tmp")}
	for _, d := range []string{u.Home, u.Tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if name == homeUser {
		// erin is not a first-time user: her HOME has the caches and config directories the
		// tools made on earlier runs. (A fresh HOME outside /tmp makes the enforcer refuse the
		// write rules on them: see profiles/README.md, "Known gaps".)
		for _, d := range []string{".cache/go-build", ".cache/gopls", ".cache/goimports", ".config/go/telemetry/local", ".npm/_logs", "go/pkg/mod"} {
			if err := os.MkdirAll(filepath.Join(u.Home, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	testutil.WriteFile(t, filepath.Join(u.Home, ".gitconfig"), fmt.Sprintf("[user]\n\tname = %s\n\temail = %s@example.com\n[init]\n\tdefaultBranch = main\n", name, name), 0o644)
	if rustupBin != "" {
		bin := filepath.Join(u.Home, ".cargo", "bin")
		if err := os.MkdirAll(bin, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Link(rustupBin, filepath.Join(bin, "rustup")); err != nil {
			copyFile(t, rustupBin, filepath.Join(bin, "rustup"), 0o755)
		}
		for _, p := range []string{"cargo", "rustc", "rustfmt", "rustdoc", "cargo-fmt"} {
			if err := os.Symlink("rustup", filepath.Join(bin, p)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if goplsBin != "" {
		// Where `go install` puts it for a user with the default GOPATH.
		bin := filepath.Join(u.Home, "go", "bin")
		if err := os.MkdirAll(bin, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Link(goplsBin, filepath.Join(bin, "gopls")); err != nil {
			copyFile(t, goplsBin, filepath.Join(bin, "gopls"), 0o755)
		}
	}
	users[name] = u
	return u
}

// box is one work directory of one user.
type box struct {
	*user
	Work  string
	Extra []string // appended to the environment (KEY=VALUE)
}

// newBox copies testdata/<fixture> (when set) into a fresh work directory rel (under the user's
// directory) of user name.
func newBox(t testing.TB, name, rel, fixture string) *box {
	t.Helper()
	u := getUser(t, name)
	b := &box{user: u, Work: filepath.Join(filepath.Dir(filepath.Dir(u.Home)), rel)}
	if err := os.RemoveAll(b.Work); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(b.Work, 0o755); err != nil {
		t.Fatal(err)
	}
	if fixture != "" {
		testutil.CopyTree(t, testutil.Testdata(fixture), b.Work)
	}
	return b
}

// path is the PATH every subprocess gets: rustup's proxies in the user's CARGO_HOME, the tools
// `go install` put in the user's $HOME/go/bin (gopls), Go's bin and the system directories;
// nothing from the caller.
func (b *box) path() string {
	dirs := []string{filepath.Join(b.Home, ".cargo", "bin"), filepath.Join(b.Home, "go", "bin")}
	if goroot != "" {
		dirs = append(dirs, filepath.Join(goroot, "bin"))
	}
	return strings.Join(append(dirs, "/usr/local/bin", "/usr/bin", "/bin", "/usr/local/sbin", "/usr/sbin", "/sbin"), ":")
}

// environ is the complete, hermetic environment of a subprocess (the one profiles/learn.sh uses).
func (b *box) environ() []string {
	env := []string{
		"PATH=" + b.path(),
		"HOME=" + b.Home,
		"TMPDIR=" + b.Tmp,
		"LANG=C", "LC_ALL=C", "TERM=dumb",
		"GOCACHE=" + filepath.Join(b.Home, ".cache", "go-build"),
		"GOMODCACHE=" + filepath.Join(b.Home, "go", "pkg", "mod"),
		"GOFLAGS=-mod=mod", "GOTOOLCHAIN=local", "GOPROXY=off", "GOSUMDB=off", "GOTELEMETRY=off",
		"CARGO_HOME=" + filepath.Join(b.Home, ".cargo"),
		"RUSTUP_HOME=" + rustupHome,
		"CARGO_NET_OFFLINE=true", "CARGO_TERM_COLOR=never",
		"NPM_CONFIG_UPDATE_NOTIFIER=false", "NPM_CONFIG_AUDIT=false", "NPM_CONFIG_FUND=false", "NPM_CONFIG_OFFLINE=true",
		"GIT_AUTHOR_NAME=Sysprof Test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=Sysprof Test", "GIT_COMMITTER_EMAIL=test@example.com",
		"GIT_AUTHOR_DATE=2026-01-02T03:04:05Z", "GIT_COMMITTER_DATE=2026-01-02T03:04:05Z",
	}
	return append(env, b.Extra...)
}

// result is how a subprocess ended.
type result struct {
	Code           int
	Stdout, Stderr string
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\n--- stdout:\n%s\n--- stderr:\n%s", r.Code, r.Stdout, r.Stderr)
}

// run runs argv in b's work directory and environment; argv[0] is looked up in b's PATH.
func (b *box) run(t testing.TB, argv ...string) result {
	t.Helper()
	name := argv[0]
	if !strings.Contains(name, "/") {
		p, err := lookPath(b.path(), name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		name = p
	}
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Dir = b.Work
	cmd.Env = b.environ()
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := result{Stdout: stdout.String(), Stderr: stderr.String()}
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("%s: %v", strings.Join(argv, " "), err)
		}
		r.Code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			r.Code = 128 + int(ws.Signal())
		}
	}
	if ctx.Err() != nil {
		t.Fatalf("%s: timed out after %v\n%s", strings.Join(argv, " "), cmdTimeout, r)
	}
	short := append([]string(nil), argv...)
	if short[0] == sysprofBin {
		short[0] = "sysprof"
	}
	t.Logf("%6.2fs exit %d: %s", time.Since(start).Seconds(), r.Code, strings.Join(short, " "))
	return r
}

// sysprof runs the built binary in b.
func (b *box) sysprof(t testing.TB, args ...string) result {
	t.Helper()
	return b.run(t, append([]string{sysprofBin}, args...)...)
}

// sh runs a shell command in b without sysprof (setup and cleaning).
func (b *box) sh(t testing.TB, script string) {
	t.Helper()
	if r := b.run(t, "sh", "-c", script); r.Code != 0 {
		t.Fatalf("sh -c %q: %s", script, r)
	}
}

func lookPath(path, name string) (string, error) {
	for _, d := range filepath.SplitList(path) {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("not found in %s: %w", path, exec.ErrNotFound)
}

// requireTools skips (or fails under CI=true) when a tool is missing.
func requireTools(t testing.TB, b *box, names ...string) {
	t.Helper()
	for _, n := range names {
		_, err := lookPath(b.path(), n)
		testutil.RequireNoErr(t, "tool "+n, err)
	}
}

func mustCode(t testing.TB, what string, r result, want int) {
	t.Helper()
	if r.Code != want {
		t.Fatalf("%s: want exit %d, got %s", what, want, r)
	}
}

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

// denialString is one report line for failure messages.
func denialString(d report.Denial) string {
	return fmt.Sprintf("[%s] %s by %s (parents %v, count %d): suggest %q (%s)", d.Kind, d.What, d.Exe, d.Parents, d.Count, d.Suggest, d.Risk)
}

// listener is the "attacker": a TCP server on 127.0.0.1 that records every byte it receives
// and, for an HTTP GET, answers with script.
type listener struct {
	ln     net.Listener
	Port   int
	mu     sync.Mutex
	conns  int
	got    bytes.Buffer
	script string
}

func newListener(t testing.TB, script func(port int) string) *listener {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	l := &listener{ln: ln, Port: port, script: script(port)}
	t.Cleanup(func() { ln.Close() })
	go l.serve()
	return l
}

func (l *listener) serve() {
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			l.mu.Lock()
			l.conns++
			l.mu.Unlock()
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			buf := make([]byte, 4096)
			for {
				n, err := c.Read(buf)
				l.mu.Lock()
				l.got.Write(buf[:n])
				req := l.got.String()
				l.mu.Unlock()
				if strings.HasPrefix(req, "GET ") && strings.Contains(req, "\r\n\r\n") {
					fmt.Fprintf(c, "HTTP/1.0 200 OK\r\nContent-Type: text/x-sh\r\nContent-Length: %d\r\n\r\n%s", len(l.script), l.script)
					return
				}
				if err != nil {
					return
				}
			}
		}()
	}
}

// received returns how many connections were accepted and every byte they sent.
func (l *listener) received() (int, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.conns, l.got.String()
}

func copyFile(t testing.TB, src, dst string, mode os.FileMode) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	testutil.WriteFile(t, dst, string(data), mode)
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return string(b)
}
