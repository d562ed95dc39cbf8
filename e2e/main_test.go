package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
)

var (
	// hostPath is the PATH every subprocess gets: the directories of the real go and cargo
	// (rustup's proxies) and the system directories, nothing from the caller's environment.
	hostPath string
	// rustupHome is where the real Rust toolchains live; CARGO_HOME is per test HOME.
	rustupHome string
)

func TestMain(m *testing.M) {
	hostPath, rustupHome = toolEnvironment()
	os.Exit(testutil.MainWithSysprof(m, "e2e"))
}

// toolEnvironment finds the real toolchains once: PATH holds only their directories and the
// system ones; RUSTUP_HOME is the real one (the toolchain is read-only input, like GOROOT).
func toolEnvironment() (path, rustup string) {
	var dirs []string
	add := func(d string) {
		if !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	for _, tool := range []string{"go", "cargo"} {
		if p, err := exec.LookPath(tool); err == nil {
			add(filepath.Dir(p))
		}
	}
	for _, d := range testutil.SystemPath {
		add(d)
	}
	return strings.Join(dirs, ":"), testutil.RustupHome()
}

// newBox makes the box of one user of the e2e tests: root/<side>/<user> is the HOME,
// root/<side>/<work> the work directory (a fresh copy of testdata/projects/<fixture> when
// fixture is set), root/<side>/tmp the TMPDIR; PATH is hostPath.
func newBox(t testing.TB, root, side, user, work, fixture string) *testutil.Box {
	t.Helper()
	b := testutil.NewBox(t, &testutil.Box{
		Work:   filepath.Join(root, side, work),
		Home:   filepath.Join(root, side, user),
		Tmp:    filepath.Join(root, side, "tmp"),
		Path:   hostPath,
		Rustup: rustupHome,
	})
	if fixture != "" {
		b.CopyFixture(t, "projects", fixture)
	}
	return b
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
