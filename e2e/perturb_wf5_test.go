package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
)

// fifthWorkflows are everyday Python, Rust, Go, shell and git workflows no other table runs:
// pip install -e . into a venv then pytest, cargo fmt --check, gofmt -l, make check running
// shellcheck and the project's own test script, git cherry-pick, git am of patches, git clean
// -fdx, git gc, git blame / git grep / git log -p piped, and a local clone of a repository
// kept inside the work tree. Each is cheap (no cold compile): they add little CI time.
func fifthWorkflows() []wfWorkflow {
	git := func(name string, setup func(*testing.T, *testutil.Box), argv []string) everyday {
		return everyday{name: name, need: []string{"git"}, setup: setup, learnFlags: []string{"--accept-risky"}, argv: argv}
	}
	return []wfWorkflow{
		// A venv seeing the system's packages (pytest, pip), the project installed editable
		// (its __editable__ .pth in the venv's site-packages), then its tests.
		{everyday: everyday{name: "pip-editable-pytest", need: []string{"python3", "pytest-3"}, setup: editableProject,
			argv: []string{"sh", "-c", "python3 -m venv --system-site-packages --without-pip venv && " +
				"venv/bin/python -m pip install -q --no-index --no-build-isolation -e . && " +
				"venv/bin/python -m pytest -q -p no:cacheprovider tests"},
			clean: []string{"venv", "src/hello_pkg.egg-info", "build"}, timing: pytestTiming},
			edit: appendAs("tests/test_greet.py", "\ndef test_edited():\n    assert greet('b') == 'hi b'\n")},
		// rustfmt through cargo (the fixture formatted first); the edit is formatted too: the
		// edit stays for the later perturbations, which drift needs to succeed.
		{everyday: everyday{name: "cargo-fmt-check", need: []string{"cargo", "cargo-fmt", "rustfmt"}, fixture: "crate", setup: cargoFmt,
			argv: []string{"cargo", "fmt", "--check"}, notAs: cargoUnreachable},
			edit: appendAs("src/main.rs", "\nfn edited() -> i32 {\n    1\n}\n")},
		{everyday: everyday{name: "gofmt-l", need: []string{"gofmt"}, fixture: "gomod", argv: []string{"gofmt", "-l", "-d", "."}},
			edit: appendAs("main.go", "\nfunc edited() int { return 1 }\n")},
		// make check: shellcheck over the scripts, then the project's own test script (which
		// makes and removes a mktemp -d directory).
		{everyday: everyday{name: "make-check", need: []string{"make", "shellcheck", "mktemp"}, setup: shellProject,
			argv: []string{"make", "-s", "check"}},
			edit: appendAs("scripts/greet.sh", "echo \"edited: ${1:-}\"\n")},
		{everyday: git("git-cherry-pick", gitFeature, []string{"sh", "-c", "git cherry-pick feature >/dev/null && git log --format=%s"}),
			reset: gitReset(""), edit: gitCommitAs("more.txt"), check: []string{"git", "status", "--short"}},
		// git am of patches committed in the tree (format-patch'd from a branch).
		{everyday: git("git-am", gitPatches, []string{"sh", "-c", "git am -q patches/*.patch && git log --format='%s %T'"}),
			reset: gitReset(""), edit: gitCommitAs("more.txt")},
		// git clean -fdx removes untracked and ignored files and directories (a build's
		// output): they are made again before every run.
		{everyday: git("git-clean-fdx", gitIgnored, []string{"git", "clean", "-fdx"}),
			reset: gitReset("mkdir -p build/sub && echo o >build/sub/x.o && echo o >main.o && echo n >new.txt"), edit: gitCommitAs("more.txt"),
			check: []string{"git", "status", "--short", "--ignored"}},
		// git gc packs the loose objects and refs, prunes, writes the commit-graph.
		{everyday: git("git-gc", gitHistory, []string{"sh", "-c", "git gc -q && git count-objects -v | grep -E '^(count|in-pack|packs):' && git log --format=%s"}),
			reset: gitReset(""), edit: gitCommitAs("more.txt")},
		// Reading history: blame, grep, log -p through a pipe.
		{everyday: git("git-blame-grep-log", gitHistory, []string{"sh", "-c", "git blame -s notes.txt && git grep -n o && git log -p --format=%s | cat"}),
			reset: gitReset(""), edit: gitCommitAs("more.txt")},
		// A commit pushed to the user's bare repository in HOME (a local remote), fetched back.
		{everyday: git("git-push-fetch", gitPushClone, []string{"sh", "-c", "echo change >>notes.txt && git commit -q -a -m change && " +
			"git push -q origin main && git fetch -q origin && git log --format=%s origin/main"}),
			reset: gitPushReset, edit: gitCommitAs("more.txt")},
		// eslint fixing what it can (prefer-const), with its cache in the tree. Not through npx:
		// the ci-like run's env -i drops the box's NPM_CONFIG_UPDATE_NOTIFIER=false, and npm
		// would ask the public registry (TestEverydayWorkflows runs npx eslint).
		{everyday: everyday{name: "eslint-fix", need: []string{"node"}, setup: eslintFixProject,
			argv: []string{"node_modules/.bin/eslint", "--fix", "--cache", "--rule", `{"prefer-const": "error"}`, "src"}},
			reset: writeAs("src/fixme.js", eslintUnfixed), edit: appendAs("src/fixme.js", "let edited = 2;\nconsole.log(edited);\n"),
			check: []string{"cat", "src/fixme.js"}},
		// A local clone of a repository that lives in the work tree itself (vendored, or a
		// test fixture): git hard-links its objects, which in the staged tree are answered
		// EXDEV (the supervisor's stagedLink): git copies them.
		{everyday: git("git-clone-in-tree", gitVendored, []string{"sh", "-c", "git clone -q vendor/lib.git clone && git -C clone log --format=%s && ls clone"}),
			reset: func(t *testing.T, b *testutil.Box, pt perturbation) { shAs(t, b, pt, "rm -rf clone") }},
	}
}

// TestWorkflowsFifth (issue 24): each of fifthWorkflows learned once with output to a file,
// then enforced unchanged, after an edit, in a fresh clone, CI-like and as another user: zero
// denials and the output of the same run unsandboxed; drift (unchanged, CI-like) finds nothing
// wider.
func TestWorkflowsFifth(t *testing.T) {
	testutil.RequireRoot(t)
	for _, w := range fifthWorkflows() {
		t.Run(w.name, func(t *testing.T) { w.learnThenPerturb(t) })
	}
}

// editableProject is a setuptools project (src layout) with a pytest test of it.
func editableProject(t *testing.T, b *testutil.Box) {
	testutil.WriteFile(t, filepath.Join(b.Work, "pyproject.toml"), `[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "hello-pkg"
version = "1.0"
`, 0o644)
	testutil.WriteFile(t, filepath.Join(b.Work, "src", "hello_pkg", "__init__.py"), "def greet(name):\n    return 'hi ' + name\n", 0o644)
	testutil.WriteFile(t, filepath.Join(b.Work, "tests", "test_greet.py"), "from hello_pkg import greet\n\n\ndef test_greet():\n    assert greet('a') == 'hi a'\n", 0o644)
}

// cargoFmt formats the crate (rustfmt's defaults).
func cargoFmt(t *testing.T, b *testutil.Box) {
	b.Sh(t, "cargo fmt")
}

// shellProject: a Makefile whose check target runs shellcheck and the tests' script.
func shellProject(t *testing.T, b *testutil.Box) {
	testutil.WriteFile(t, filepath.Join(b.Work, "Makefile"), "check:\n\tshellcheck scripts/*.sh\n\tsh scripts/test.sh\n.PHONY: check\n", 0o644)
	testutil.WriteFile(t, filepath.Join(b.Work, "scripts", "greet.sh"), "#!/bin/sh\nprintf 'hello, %s\\n' \"${1:-world}\"\n", 0o755)
	testutil.WriteFile(t, filepath.Join(b.Work, "scripts", "test.sh"), `#!/bin/sh
set -eu
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sh scripts/greet.sh crab >"$tmp/out"
grep -q 'hello, crab' "$tmp/out" && echo "test.sh: ok"
`, 0o755)
}

// gitFeature is gitHistory with a branch feature holding one more commit.
func gitFeature(t *testing.T, b *testutil.Box) {
	gitHistory(t, b)
	b.Sh(t, `export GIT_AUTHOR_DATE=2026-01-04T03:04:05Z GIT_COMMITTER_DATE=2026-01-04T03:04:05Z &&
git checkout -q -b feature HEAD~1 && echo feat >feat.txt && git add feat.txt && git commit -q -m feat && git checkout -q main`)
}

// gitPatches is gitHistory with patches/ (committed, tagged start) holding two patches
// format-patch'd from a branch.
func gitPatches(t *testing.T, b *testutil.Box) {
	gitFeature(t, b)
	b.Sh(t, `export GIT_AUTHOR_DATE=2026-01-05T03:04:05Z GIT_COMMITTER_DATE=2026-01-05T03:04:05Z &&
git checkout -q feature && echo more >>feat.txt && git commit -q -a -m 'feat more' &&
git format-patch -q -o patches HEAD~2 && git checkout -q main && git add patches && git commit -q -m patches && git tag -f start >/dev/null`)
}

// gitIgnored is a repository ignoring *.o and build/, with ignored and untracked files.
func gitIgnored(t *testing.T, b *testutil.Box) {
	gitInit(t, b)
	b.Sh(t, `printf '*.o\nbuild/\n' >.gitignore && git add .gitignore && git commit -q -m ignore && git tag start &&
mkdir -p build/sub && echo o >build/sub/x.o && echo o >main.o && echo n >new.txt`)
}

// gitVendored is a repository with a bare repository vendor/lib.git (two commits) committed
// in its tree.
func gitVendored(t *testing.T, b *testutil.Box) {
	gitInit(t, b)
	lib := filepath.Join(b.Tmp, "lib")
	if err := os.MkdirAll(lib, 0o777); err != nil {
		t.Fatal(err)
	}
	b.Sh(t, `export GIT_AUTHOR_DATE=2026-01-02T03:04:05Z GIT_COMMITTER_DATE=2026-01-02T03:04:05Z &&
cd `+shellQuote([]string{lib})+` && git init -q -b main && git config user.name T && git config user.email t@example.com &&
echo one >lib.txt && git add lib.txt && git commit -q -m one && echo two >>lib.txt && git commit -q -a -m two &&
cd - >/dev/null && git clone -q --bare `+shellQuote([]string{lib})+` vendor/lib.git && rm -rf `+shellQuote([]string{lib})+` &&
git add vendor && git commit -q -m vendor`)
}

// TestSudoInRootsTree: sysprof run through sudo (SUDO_UID and SUDO_GID set) in a work tree
// root owns, as a CI job's checkout made by root: git (which as root with SUDO_UID trusts a
// repository owned by either) shows the same under enforce as unsandboxed, with zero denials
// and no drift; the command runs as root's would, not as the invoking user, a stranger to
// the tree ("dubious ownership").
func TestSudoInRootsTree(t *testing.T) {
	testutil.RequireRoot(t)
	sudo := []string{"SUDO_UID=12345", "SUDO_GID=12345", "SUDO_USER=someone"}
	ed := everyday{name: "git-status-sudo", need: []string{"git"}, setup: gitIgnored,
		argv: []string{"sh", "-c", "git status --short --ignored && git log --format=%s && git diff --stat start"}}
	learn := perturbation{name: "learn", stdout: "file", stdin: "null", env: sudo}
	learnThenPerturb(t, ed, []perturbation{{name: "sudo", stdout: "pipe", stdin: "null", env: sudo}}, perturbHooks{learn: &learn})
}

const eslintUnfixed = "let x = 1;\nconsole.log(x);\n"

// eslintFixProject is the web project with a file eslint --fix rewrites.
func eslintFixProject(t *testing.T, b *testutil.Box) {
	webApp(t, b)
	testutil.WriteFile(t, filepath.Join(b.Work, "src", "fixme.js"), eslintUnfixed, 0o644)
}

// gitPushClone is a clone of the user's bare repository $HOME/repos/origin.git, its last
// commit of gitBareOrigin's tagged start (a fresh clone's origin may be ahead).
func gitPushClone(t *testing.T, b *testutil.Box) {
	gitBareOrigin(t, b, perturbation{})
	b.Sh(t, `git clone -q "$HOME/repos/origin.git" . && git config user.name T && git config user.email t@example.com &&
git tag start "$(git rev-list -1 --grep='^three$' HEAD)" && git reset -q --hard start`)
}

// gitPushReset puts the clone and its origin (made in this HOME when missing) back at start.
func gitPushReset(t *testing.T, b *testutil.Box, pt perturbation) {
	gitBareOrigin(t, b, pt)
	shAs(t, b, pt, `git remote set-url origin "$HOME/repos/origin.git" && git fetch -q origin && git checkout -q main && git reset -q --hard start && git clean -qfd && git push -q -f origin start:main`)
}
