package shipped

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/profiles"
)

// shippedRun is one command a shipped profile must allow on its fixture.
type shippedRun struct {
	profile string   // profiles/<profile>.yaml
	fixture string   // testdata/<fixture>, copied into a fresh work directory
	need    []string // programs on PATH
	argv    []string
	want    string // a substring of the command's stdout+stderr that proves it did its job
	// clean runs (unsandboxed, sh -c) between the enforced run and the drift run so that the
	// drift's learn does the same work again.
	clean string
	// installed is a file the fixture needs that setup installs (.ci/run: npm ci), not git.
	installed string
}

// jsTools is the fixture of the eslint and prettier profiles; its pinned node_modules are
// installed by .ci/run (npm ci --prefix testdata/shipped/jstools), never globally.
const jsTools = "shipped/jstools"

var gitSession = `git init -q . && git add README && git commit -q -m "first commit" && git status --short --branch && git log --format="%H %an <%ae> %s" && git diff HEAD --stat`

// shippedRuns mirror profiles/learn.sh. They share one user, so the Go and Cargo caches are
// cold for the first go and cargo command and warm after: both paths are covered.
var shippedRuns = []shippedRun{
	{profile: "go-build", fixture: "projects/gomod", need: []string{"go"}, argv: []string{"go", "build", "-o", "app", "."}, clean: "rm -f app"},
	{profile: "go-test", fixture: "projects/gomod", need: []string{"go"}, argv: []string{"go", "test", "-count=1", "."}, want: "ok "},
	{profile: "go-vet", fixture: "projects/gomod", need: []string{"go"}, argv: []string{"go", "vet", "./..."}},
	{profile: "gofmt", fixture: "projects/gomod", need: []string{"gofmt"}, argv: []string{"gofmt", "-l", "."}},
	{profile: "cargo-build", fixture: "projects/crate", need: []string{"cargo"}, argv: []string{"cargo", "build", "--offline"}, want: "Finished", clean: "rm -rf target"},
	{profile: "cargo-test", fixture: "projects/crate", need: []string{"cargo"}, argv: []string{"cargo", "test", "--offline"}, want: "test result: ok", clean: "rm -rf target"},
	{profile: "rustfmt", fixture: "shipped/rustfmt", need: []string{"rustfmt"}, argv: []string{"rustfmt", "--check", "--edition", "2021", "src/main.rs"}},
	{profile: "make-gcc", fixture: "projects/cproj", need: []string{"make", "gcc"}, argv: []string{"make"}, clean: "rm -f hello *.o"},
	{profile: "git", fixture: "shipped/git", need: []string{"git", "sh"}, argv: []string{"sh", "-c", gitSession}, want: "first commit", clean: "rm -rf .git"},
	{profile: "npm-test", fixture: "shipped/node", need: []string{"npm", "node"}, argv: []string{"npm", "test"}, want: "# pass 1"},
	{profile: "npm-test", fixture: "shipped/node", need: []string{"node"}, argv: []string{"node", "--test"}, want: "# pass 1"},
	{profile: "python3", fixture: "shipped/python", need: []string{"python3"}, argv: []string{"python3", "-m", "py_compile", "greet.py", "main.py"}, clean: "rm -rf __pycache__"},
	{profile: "python3", fixture: "shipped/python", need: []string{"python3"}, argv: []string{"python3", "main.py"}, want: "hello, python", clean: "rm -rf __pycache__"},
	{profile: "npm-install", fixture: "shipped/npm-install", need: []string{"npm", "node"}, argv: []string{"npm", "install"}, want: "postinstall: hello, npm", clean: "rm -rf node_modules package-lock.json generated"},
	{profile: "eslint", fixture: jsTools, need: []string{"npx", "node"}, argv: []string{"npx", "eslint", "--cache", "--cache-location", "node_modules/.cache/eslint/", "src"}, installed: "node_modules/eslint/bin/eslint.js", clean: "rm -rf node_modules/.cache"},
	// Without --cache eslint deletes a stale .eslintcache in the work tree, which is not there:
	// ENOENT unsandboxed, and under enforce too (not the read-only work tree's EROFS).
	{profile: "eslint", fixture: jsTools, need: []string{"npx", "node"}, argv: []string{"npx", "eslint", "src"}, installed: "node_modules/eslint/bin/eslint.js"},
	{profile: "prettier", fixture: jsTools, need: []string{"npx", "node"}, argv: []string{"npx", "prettier", "--check", "src"}, want: "All matched files use Prettier code style", installed: "node_modules/prettier/bin/prettier.cjs"},
	// gopls check: the first run of each user fills a cold gopls cache ($HOME/.cache/gopls), the
	// second reads it warm.
	{profile: "gopls", fixture: "shipped/gopls", need: []string{"gopls", "go"}, argv: []string{"gopls", "check", "main.go"}, want: "fmt.Printf format %d has arg ln.Addr().String() of wrong type string"},
	{profile: "gopls", fixture: "shipped/gopls", need: []string{"gopls", "go"}, argv: []string{"gopls", "check", "internal/store/store.go"}},
	{profile: "python3-unittest", fixture: "shipped/unittest", need: []string{"python3"}, argv: []string{"python3", "-m", "unittest"}, want: "OK", clean: "rm -rf __pycache__ tests/__pycache__"},
}

// TestShippedProfiles: for every shipped profile, enforcing it on its fixture succeeds with zero
// denials and no degraded layer, and `sysprof drift` against it on the fixture finds nothing
// that widens it.
func TestShippedProfiles(t *testing.T) {
	testutil.RequireRoot(t)
	covered := map[string]bool{}
	for _, sr := range shippedRuns {
		covered[sr.profile] = true
	}
	for _, name := range profiles.Names() {
		if !covered[name] {
			t.Errorf("shipped profile %s has no run in shippedRuns", name)
		}
	}
	for _, who := range []string{"dana", homeUser} {
		for _, sr := range shippedRuns {
			t.Run(who+"/"+sr.profile+"/"+strings.Join(sr.argv[:min(len(sr.argv), 2)], "_"), func(t *testing.T) {
				testShipped(t, who, sr)
			})
		}
	}
}

// testShipped enforces and drifts one shipped run as user who (dana: HOME and work tree under
// /tmp, like the learn; erin: under ~/.cache, like a real user's).
func testShipped(t *testing.T, who string, sr shippedRun) {
	var b *testutil.Box
	if sr.installed != "" {
		_, err := os.Stat(testutil.Testdata(sr.fixture, sr.installed))
		testutil.RequireNoErr(t, "the fixture's dependencies (npm ci --prefix testdata/"+sr.fixture+", as .ci/run does)", err)
		// cp -a: node_modules/.bin holds symlinks to executable scripts.
		b = newBox(t, who, filepath.Join("src", sr.profile, "project"), "")
		b.Sh(t, "cp -a "+testutil.Testdata(sr.fixture)+"/. .")
	} else {
		b = newBox(t, who, filepath.Join("src", sr.profile, "project"), sr.fixture)
	}
	testutil.RequireTools(t, b.Path, sr.need...)
	profile := filepath.Join(testutil.RepoRoot(), "profiles", sr.profile+".yaml")
	rep := filepath.Join(t.TempDir(), "report.json")

	r := b.Sysprof(t, append([]string{"enforce", "-p", profile, "--report", rep, "--"}, sr.argv...)...)
	rp := testutil.ReadReport(t, rep)
	for _, d := range rp.Denials {
		t.Errorf("enforce: denial %s", testutil.DenialString(d))
	}
	for _, l := range rp.Degraded() {
		t.Errorf("enforce: layer %s degraded: %s", l.Name, l.Detail)
	}
	if r.Code != 0 && len(rp.Denials) == 0 {
		t.Errorf("enforce: the command failed and the report lists no denial (a silent denial); report notes:\n  %s", strings.Join(rp.Notes, "\n  "))
	}
	if r.Code != 0 {
		// Not fatal: the drift below is checked either way.
		t.Errorf("enforce: want exit 0, got %s", r)
	} else if !strings.Contains(r.Stdout+r.Stderr, sr.want) {
		t.Errorf("enforce: output lacks %q:\n%s", sr.want, r)
	}
	if sr.clean != "" {
		b.Sh(t, sr.clean)
	}

	r = b.Sysprof(t, append([]string{"drift", "-p", profile, "--format", "json", "--"}, sr.argv...)...)
	var d struct {
		Widens  bool            `json:"widens"`
		Changes []policy.Change `json:"changes"`
	}
	// stdout is the command's output, then the diff (drift's own JSON document).
	out := r.Stdout
	if i := strings.Index(out, "{\n  \"format\""); i >= 0 {
		out = out[i:]
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("drift: output is not JSON: %v\n%s", err, r)
	}
	for _, c := range d.Changes {
		if !c.Widens {
			continue
		}
		hint := ""
		if c.Section == policy.SectionBinaries && (strings.HasPrefix(c.Item, "$TMPDIR/") || strings.HasPrefix(c.Item, "$WORKDIR/")) {
			hint = " (a binary the command builds itself: its sha256 differs per work directory, or is missing when the file is gone before it is hashed; pinning it makes drift unstable)"
		}
		t.Errorf("drift: widening: %s%s", c, hint)
	}
	if r.Code != 0 || d.Widens {
		t.Errorf("drift: want exit 0 and no widening, got %s", r)
	}
}
