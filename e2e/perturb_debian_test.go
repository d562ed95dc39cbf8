package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
)

// debianWorkflow is an everyday Debian-packaged tool (issue 24, "How it is checked"): learned
// once, then run unchanged, after an edit, in a fresh clone, in a CI-like environment and as
// another user.
type debianWorkflow struct {
	everyday
	// edit changes the project the way a user does between two runs (a line added to a
	// source file); it is applied before every run of the "edited" perturbation, so that the
	// unsandboxed twin, the enforced run and drift each find an edit to build.
	edit func(t *testing.T, b *testutil.Box)
}

// debianPerturbations are the runs each workflow survives. ci-like is a runner's: a fresh
// HOME (cold tool caches), no environment but HOME and PATH (no TMPDIR, no LANG), a session
// of its own (setsid) and output to a file.
var debianPerturbations = []perturbation{
	{name: "unchanged", stdout: "pipe", stdin: "null"},
	{name: "edited", stdout: "pipe", stdin: "null"},
	{name: "fresh-clone", stdout: "pipe", stdin: "null", place: "cwd"},
	{name: "ci-like", stdout: "file", stdin: "null", place: "home",
		wrap: []string{"sh", "-c", `exec env -i HOME="$HOME" PATH="$PATH" setsid "$@"`, "sh"}},
	// Last: the tree is the ordinary user's from here on (root runs nothing after it); its
	// HOME a fresh one of its own (pre-commit makes its store anew).
	{name: "ordinary-user", stdout: "pipe", stdin: "null", place: "home", wrap: []string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"}},
}

var debianWorkflows = []debianWorkflow{
	{everyday: everyday{name: "mypy", need: []string{"mypy"}, argv: []string{"mypy", "pkg", "main.py"},
		setup: mypyProject, state: []string{".mypy_cache"}},
		edit: appendTo("pkg/__init__.py", "# edited\n")},
	{everyday: everyday{name: "meson-ninja", need: []string{"meson", "ninja", "gcc"},
		argv:  []string{"sh", "-c", "[ -d build ] || meson setup build >/dev/null; ninja -C build"},
		setup: cProject(map[string]string{"meson.build": "project('hello', 'c')\nexecutable('hello', 'hello.c')\n"}),
		state: []string{"build"}, program: "./build/hello"},
		edit: appendTo("hello.c", "\n/* edited */\n")},
	{everyday: everyday{name: "cmake", need: []string{"cmake", "make", "gcc"},
		argv:  []string{"sh", "-c", "[ -d build ] || cmake -S . -B build >/dev/null; cmake --build build"},
		setup: cProject(map[string]string{"CMakeLists.txt": "cmake_minimum_required(VERSION 3.13)\nproject(hello C)\nadd_executable(hello hello.c)\n"}),
		state: []string{"build"}, program: "./build/hello"},
		edit: appendTo("hello.c", "\n/* edited */\n")},
	// A local hook only: pre-commit fetches nothing. It keeps its store in
	// $HOME/.cache/pre-commit, created on the first run of a user (ci-like, ordinary-user).
	{everyday: everyday{name: "pre-commit", need: []string{"pre-commit", "git"}, argv: []string{"pre-commit", "run", "--all-files"},
		setup: preCommitProject},
		edit: appendTo("notes.txt", "line four\n")},
}

func mypyProject(t *testing.T, b *testutil.Box) {
	testutil.WriteFile(t, filepath.Join(b.Work, "pkg", "__init__.py"), "def f(x: int) -> int:\n    return x + 1\n", 0o644)
	testutil.WriteFile(t, filepath.Join(b.Work, "main.py"), "from pkg import f\n\nprint(f(1))\n", 0o644)
}

// cProject writes hello.c and the build files given.
func cProject(build map[string]string) func(t *testing.T, b *testutil.Box) {
	return func(t *testing.T, b *testutil.Box) {
		testutil.WriteFile(t, filepath.Join(b.Work, "hello.c"), "#include <stdio.h>\n\nint main(void) { puts(\"hi\"); return 0; }\n", 0o644)
		for name, text := range build {
			testutil.WriteFile(t, filepath.Join(b.Work, name), text, 0o644)
		}
	}
}

func preCommitProject(t *testing.T, b *testutil.Box) {
	gitRepo(t, b)
	testutil.WriteFile(t, filepath.Join(b.Work, ".pre-commit-config.yaml"), `repos:
- repo: local
  hooks:
  - id: no-tabs
    name: no tabs
    entry: "\t"
    language: pygrep
    types: [text]
`, 0o644)
	testutil.MustCode(t, "git add", b.Run(t, "git", "add", ".pre-commit-config.yaml"), 0)
	// git reads the system config as on a user's machine (gitRepo leaves it out for its
	// commits; the ci-like run has no such variable).
	b.Extra = slices.DeleteFunc(b.Extra, func(kv string) bool { return strings.HasPrefix(kv, "GIT_CONFIG_NOSYSTEM=") })
}

func appendTo(rel, text string) func(t *testing.T, b *testutil.Box) {
	return func(t *testing.T, b *testutil.Box) {
		f, err := os.OpenFile(filepath.Join(b.Work, rel), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(text); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPerturbationsDebian: each Debian workflow learned once (output to a file, as root) runs
// under every debianPerturbations entry with zero denials and the output of its unsandboxed
// twin, and drift there finds nothing that widens the profile.
func TestPerturbationsDebian(t *testing.T) {
	testutil.RequireRoot(t)
	for _, dw := range debianWorkflows {
		t.Run(dw.name, func(t *testing.T) {
			learnThenPerturb(t, dw.everyday, debianPerturbations, perturbHooks{
				edit: func(t *testing.T, b *testutil.Box, pt perturbation) {
					if pt.name == "edited" {
						dw.edit(t, b)
					}
				},
			})
		})
	}
}
