package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
)

// enforceRuns is how many times each learned tool is enforced in the work directory it was
// learned in (issue 4: "learn once, then enforce five times").
const enforceRuns = 5

// realTool is one real dev tool for TestNoFalseDenials.
type realTool struct {
	name    string
	need    []string // programs that must be on PATH
	fixture string   // testdata/projects/<fixture>, copied into each work directory
	argv    []string
	// setup prepares a fresh box (files the fixture does not have, config in HOME).
	setup func(t *testing.T, b *testutil.Box)
	// clean removes what a run produced so that the next run does the same work again.
	clean func(t *testing.T, b *testutil.Box)
	// output is what must be identical between enforced and unsandboxed runs: the command's
	// stdout (normalized where it holds timings) plus, for builds, what the built program prints.
	output func(t *testing.T, b *testutil.Box, stdout string) string
}

// Caches: every box has its own HOME with the Go build cache ($HOME/.cache/go-build) and
// CARGO_HOME ($HOME/.cargo) inside, where a user has them. The learn runs in a fresh HOME, so it
// sees a cold cache; the five enforced runs in the same HOME find it warm (as a user's next
// build would); the run from the second HOME starts cold again. Both the compile path and the
// cache-hit path are thus enforced. Only build outputs are removed between runs.
var realTools = []realTool{
	{
		name:    "go-build",
		need:    []string{"go"},
		fixture: "gomod",
		argv:    []string{"go", "build", "-o", "app", "."},
		clean:   removeAll("app"),
		output:  stdoutAnd("./app"),
	},
	{
		name:    "go-test",
		need:    []string{"go"},
		fixture: "gomod",
		// -count=1: no cached test result, the test binary really runs every time.
		argv:  []string{"go", "test", "-count=1", "-v", "."},
		clean: func(*testing.T, *testutil.Box) {},
		output: func(t *testing.T, _ *testutil.Box, stdout string) string {
			return goTestLines(t, stdout)
		},
	},
	{
		name:    "cargo-build",
		need:    []string{"cargo"},
		fixture: "crate",
		argv:    []string{"cargo", "build", "--offline"},
		clean:   removeAll("target"),
		output:  stdoutAnd("./target/debug/crate"),
	},
	{
		name:    "make-gcc",
		need:    []string{"make", "gcc"},
		fixture: "cproj",
		argv:    []string{"make"},
		clean:   removeAll("hello", "main.o", "greet.o"),
		output:  stdoutAnd("./hello"),
	},
	{
		name: "git",
		need: []string{"git", "sh"},
		// One script so that one profile covers the whole session; the dates and identity are
		// fixed so that the commit hash, printed by git log, is the same in every run.
		argv: []string{"sh", "-c", `git init -q . && git add README && git commit -q -m "first commit" && git status --short --branch && git log --format="%H %an <%ae> %s"`},
		setup: func(t *testing.T, b *testutil.Box) {
			user := filepath.Base(b.Home)
			testutil.WriteFile(t, filepath.Join(b.Work, "README"), "a project under git\n", 0o644)
			testutil.WriteFile(t, filepath.Join(b.Home, ".gitconfig"), fmt.Sprintf("[user]\n\tname = %s\n\temail = %s@example.com\n[init]\n\tdefaultBranch = main\n", user, user), 0o644)
			b.Extra = append(b.Extra,
				"GIT_AUTHOR_NAME=Sysprof Test", "GIT_AUTHOR_EMAIL=test@example.com",
				"GIT_COMMITTER_NAME=Sysprof Test", "GIT_COMMITTER_EMAIL=test@example.com",
				"GIT_AUTHOR_DATE=2026-01-02T03:04:05Z", "GIT_COMMITTER_DATE=2026-01-02T03:04:05Z",
			)
		},
		clean:  removeAll(".git"),
		output: func(_ *testing.T, _ *testutil.Box, stdout string) string { return stdout },
	},
}

// TestNoFalseDenials is issue 4's "no false denials on real tools": learn once, enforce five
// times with zero denials and the unsandboxed output, then enforce from another work directory
// and HOME with zero denials. The profile is learned as root/x/alice in root/x/src/project and
// enforced as root/y/bob in root/y/build/checkout: it is portable through $HOME, $WORKDIR and
// $TMPDIR.
func TestNoFalseDenials(t *testing.T) {
	testutil.RequireRoot(t)
	for _, tool := range realTools {
		t.Run(tool.name, func(t *testing.T) {
			for _, n := range tool.need {
				testutil.RequireTools(t, hostPath, n)
			}
			root := t.TempDir()
			profile := filepath.Join(root, "profiles", tool.name+".yaml")
			argv := tool.argv

			learner := newBox(t, root, "x", "alice", filepath.Join("src", "project"), tool.fixture)
			if tool.setup != nil {
				tool.setup(t, learner)
			}
			learn := []string{"learn", "-p", profile}
			if tool.name == "git" {
				// git writes .git, a protected path: learn writes that pending (denied until
				// refine accepts it); this test is about what was accepted.
				learn = append(learn, "--accept-risky")
			}
			r := learner.Sysprof(t, append(append(learn, "--"), argv...)...)
			testutil.MustCode(t, "learn", r, 0)
			if p := loadProfile(t, profile); p.Metadata.Incomplete {
				t.Fatalf("learn: profile marked incomplete: %v", p.Metadata.IncompleteReasons)
			}
			tool.clean(t, learner)

			var got []string
			for i := 1; i <= enforceRuns; i++ {
				rep := filepath.Join(root, fmt.Sprintf("report-%d.json", i))
				r := learner.Sysprof(t, append([]string{"enforce", "-p", profile, "--report", rep, "--"}, argv...)...)
				what := fmt.Sprintf("enforce #%d", i)
				testutil.MustCode(t, what, r, 0)
				testutil.RequireNoDenials(t, what, rep, r)
				got = append(got, tool.output(t, learner, r.Stdout))
				tool.clean(t, learner)
			}

			// The same command without sysprof, in the same place: the reference output.
			bare := learner.Run(t, argv...)
			testutil.MustCode(t, "unsandboxed run", bare, 0)
			want := tool.output(t, learner, bare.Stdout)
			tool.clean(t, learner)
			for i, g := range got {
				if g != want {
					t.Errorf("enforce #%d output differs from the unsandboxed run:\n--- enforced:\n%s\n--- unsandboxed:\n%s", i+1, g, want)
				}
			}

			// Another user in another directory: a fresh copy, a fresh HOME and cold caches.
			other := newBox(t, root, "y", "bob", filepath.Join("build", "checkout"), tool.fixture)
			if tool.setup != nil {
				tool.setup(t, other)
			}
			rep := filepath.Join(root, "report-elsewhere.json")
			r = other.Sysprof(t, append([]string{"enforce", "-p", profile, "--report", rep, "--"}, argv...)...)
			testutil.MustCode(t, "enforce in another work directory and HOME", r, 0)
			testutil.RequireNoDenials(t, "enforce in another work directory and HOME", rep, r)
			if g := tool.output(t, other, r.Stdout); g != want {
				t.Errorf("enforce in another work directory and HOME: output differs from the unsandboxed run:\n--- enforced:\n%s\n--- unsandboxed:\n%s", g, want)
			}
		})
	}
}

// removeAll returns a clean step that deletes names in the work directory.
func removeAll(names ...string) func(*testing.T, *testutil.Box) {
	return func(t *testing.T, b *testutil.Box) {
		t.Helper()
		for _, n := range names {
			if err := os.RemoveAll(filepath.Join(b.Work, n)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// stdoutAnd returns an output step: the command's stdout, then what the built program prints
// when run (unsandboxed) from the work directory.
func stdoutAnd(program string) func(*testing.T, *testutil.Box, string) string {
	return func(t *testing.T, b *testutil.Box, stdout string) string {
		t.Helper()
		r := b.Run(t, program)
		testutil.MustCode(t, "run "+program, r, 0)
		return stdout + "--- " + program + ":\n" + r.Stdout
	}
}

var goTestTime = regexp.MustCompile(`\s*\(?[0-9.]+s\)?$`)

// goTestLines keeps the test verdict lines of `go test -v` and drops their timings.
func goTestLines(t *testing.T, stdout string) string {
	t.Helper()
	var out []string
	for _, l := range strings.Split(stdout, "\n") {
		switch {
		case strings.HasPrefix(l, "=== RUN"), strings.HasPrefix(l, "--- "), l == "PASS", strings.HasPrefix(l, "ok "):
			out = append(out, goTestTime.ReplaceAllString(l, ""))
		}
	}
	if !strings.Contains(stdout, "--- PASS: TestGreeting") {
		t.Fatalf("go test did not pass TestGreeting:\n%s", stdout)
	}
	return strings.Join(out, "\n")
}
