package shipped

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
)

var (
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

func TestMain(m *testing.M) {
	if out, err := exec.Command("go", "env", "GOROOT").Output(); err == nil {
		goroot = strings.TrimSpace(string(out))
	}
	rustupHome = testutil.RustupHome()
	if p, err := exec.LookPath("rustup"); err == nil {
		rustupBin, _ = filepath.EvalSymlinks(p)
	}
	goplsBin = findGopls()
	code := testutil.MainWithSysprof(m, "shipped")
	for _, d := range usersDirs {
		os.RemoveAll(d)
	}
	os.Exit(code)
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

// env is what the shipped tests add to a box's environment (the one profiles/learn.sh uses):
// no Go telemetry, npm offline and quiet, a fixed git identity and dates.
var env = []string{
	"GOTELEMETRY=off",
	"NPM_CONFIG_UPDATE_NOTIFIER=false", "NPM_CONFIG_AUDIT=false", "NPM_CONFIG_FUND=false", "NPM_CONFIG_OFFLINE=true",
	"GIT_AUTHOR_NAME=Sysprof Test", "GIT_AUTHOR_EMAIL=test@example.com",
	"GIT_COMMITTER_NAME=Sysprof Test", "GIT_COMMITTER_EMAIL=test@example.com",
	"GIT_AUTHOR_DATE=2026-01-02T03:04:05Z", "GIT_COMMITTER_DATE=2026-01-02T03:04:05Z",
}

// newBox copies testdata/<fixture> (when set) into a fresh work directory rel (under the user's
// directory) of user name. Its PATH is rustup's proxies in the user's CARGO_HOME, the tools `go
// install` put in the user's $HOME/go/bin (gopls), Go's bin and the system directories; nothing
// from the caller.
func newBox(t testing.TB, name, rel, fixture string) *testutil.Box {
	t.Helper()
	u := getUser(t, name)
	dirs := []string{filepath.Join(u.Home, ".cargo", "bin"), filepath.Join(u.Home, "go", "bin")}
	if goroot != "" {
		dirs = append(dirs, filepath.Join(goroot, "bin"))
	}
	b := &testutil.Box{
		Work:   filepath.Join(filepath.Dir(filepath.Dir(u.Home)), rel),
		Home:   u.Home,
		Tmp:    u.Tmp,
		Path:   strings.Join(append(dirs, testutil.SystemPath...), ":"),
		Rustup: rustupHome,
		Env:    env,
	}
	if err := os.RemoveAll(b.Work); err != nil {
		t.Fatal(err)
	}
	testutil.NewBox(t, b)
	if fixture != "" {
		b.CopyFixture(t, fixture)
	}
	return b
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
