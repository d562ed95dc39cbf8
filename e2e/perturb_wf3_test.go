package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
)

// moreWorkflows are issue 24's everyday C, Rust, Python and git workflows that
// TestWorkflowsPython and TestPerturbationsDebian do not run: make -j with gcc's -MMD
// dependency files, an autotools-like configure && make (conftest run, config.status through
// mktemp -d), cmake with ninja, meson test, ctest, gcc through ccache, a build script writing
// OUT_DIR, python -m build, git stash, git bisect run, git worktree add, a commit through
// pre-commit's hook, a clone of a local bare repository and git submodule update. Cells that
// still fail are open, with the reason.
func moreWorkflows() []wfWorkflow {
	return []wfWorkflow{
		// Dependency files kept between runs (state): unchanged is "up to date" (make reads
		// the .d files); edited touches the header every run, so that each run rebuilds.
		{everyday: everyday{name: "make-j-MD", need: []string{"make", "gcc"}, fixture: "cproj", setup: makeDeps,
			argv: []string{"make", "-s", "-j2"}, state: []string{"hello", "main.o", "greet.o", "main.d", "greet.d"}, program: "./hello"},
			edit: touchAs("greet.h")},
		{everyday: everyday{name: "configure-make", need: []string{"make", "gcc", "mktemp", "sed"}, setup: configureProject,
			argv:  []string{"sh", "-c", "./configure --prefix=/usr/local >/dev/null && make -s"},
			clean: []string{"config.log", "config.status", "config.h", "Makefile", "hello", "hello.o"}, program: "./hello"},
			edit: appendAs("hello.c", "\n/* edited */\n")},
		{everyday: everyday{name: "cmake-ninja", need: []string{"cmake", "ninja", "gcc"},
			argv:  []string{"sh", "-c", "[ -d build ] || cmake -G Ninja -S . -B build >/dev/null; ninja -C build"},
			setup: cProject(map[string]string{"CMakeLists.txt": "cmake_minimum_required(VERSION 3.13)\nproject(hello C)\nadd_executable(hello hello.c)\n"}),
			state: []string{"build"}, program: "./build/hello"},
			edit: touchAs("hello.c")},
		// meson test runs the project's tests in parallel and logs to meson-logs.
		{everyday: everyday{name: "meson-test", need: []string{"meson", "ninja", "gcc"},
			argv:  []string{"sh", "-c", "[ -d build ] || meson setup build >/dev/null; meson test -C build -q --num-processes 2 --print-errorlogs"},
			setup: cProject(map[string]string{"meson.build": "project('hello', 'c')\nt = executable('hello', 'hello.c')\ntest('runs', t)\ntest('runs again', t)\n"}),
			state: []string{"build"}, timing: anyTiming},
			edit: touchAs("hello.c")},
		// ctest runs the tests cmake registered.
		{everyday: everyday{name: "ctest", need: []string{"cmake", "ctest", "make", "gcc"},
			argv:  []string{"sh", "-c", "[ -d build ] || cmake -S . -B build >/dev/null; cmake --build build >/dev/null && ctest --test-dir build -j2 -Q --output-on-failure"},
			setup: cProject(map[string]string{"CMakeLists.txt": "cmake_minimum_required(VERSION 3.13)\nproject(hello C)\nenable_testing()\nadd_executable(hello hello.c)\nadd_test(NAME runs COMMAND hello)\n"}),
			state: []string{"build"}},
			edit: touchAs("hello.c")},
		// ccache keeps its cache in $HOME/.cache/ccache: a miss on a cold one, a hit after.
		{everyday: everyday{name: "ccache-gcc", need: []string{"ccache", "gcc"}, setup: cProject(nil),
			argv: []string{"sh", "-c", "ccache gcc -c -o hello.o hello.c && gcc -o hello hello.o"}, clean: []string{"hello", "hello.o"}, program: "./hello"},
			edit: appendAs("hello.c", "\n/* edited */\n")},
		// build.rs runs from target/debug/build/<crate>-<hash>/ and writes $OUT_DIR; edited
		// touches its input every run (rerun-if-changed), so that each run runs it again.
		{everyday: everyday{name: "cargo-build-rs", need: []string{"cargo"}, fixture: "buildrs", argv: []string{"cargo", "build", "--offline"},
			state: []string{"target"}, program: "./target/debug/buildrs", timing: cargoTiming, notAs: cargoUnreachable},
			edit: touchAs("greeting.txt")},
		// python -m build without isolation (nothing fetched): setuptools writes build/ and
		// *.egg-info in the tree, the wheel in dist/.
		{everyday: everyday{name: "python-build", need: []string{"python3"}, setup: pyProject,
			argv:  []string{"sh", "-c", "python3 -m build --no-isolation --wheel --outdir dist . >/dev/null && ls dist"},
			clean: []string{"dist", "build", "src/hello_pkg.egg-info"}},
			edit: appendAs("src/hello_pkg/__init__.py", "\nEDITED = 1\n"), coldIsSlow: true},
		// git: writing .git is git's nature (accepted at learn).
		{everyday: everyday{name: "git-stash", need: []string{"git"}, setup: gitStashRepo, learnFlags: []string{"--accept-risky"},
			argv: []string{"sh", "-c", "git stash -q && git stash list --format=%gs && git status --short && git stash pop -q && git status --short"}},
			reset: gitReset("echo more >>notes.txt"), edit: appendAs("notes.txt", "edited\n")},
		{everyday: everyday{name: "git-bisect-run", need: []string{"git"}, setup: gitHistory, learnFlags: []string{"--accept-risky"},
			argv: []string{"sh", "-c", "git bisect start HEAD HEAD~2 >/dev/null && git bisect run sh -c '! test -f three.txt' && git bisect reset 2>/dev/null"}},
			reset: gitReset(""), edit: gitCommitAs("more.txt")},
		{everyday: everyday{name: "git-worktree-add", need: []string{"git"}, setup: gitHistory, learnFlags: []string{"--accept-risky"},
			argv: []string{"sh", "-c", "git worktree add -q wt -b feature HEAD~1 && git -C wt log --format=%s && ls wt"}},
			reset: gitResetWorktreeAt("wt"), edit: gitCommitAs("more.txt")},
		// git commit whose pre-commit hook is pre-commit's (pre-commit install): a Python tool
		// run by git, with its store in $HOME/.cache/pre-commit.
		{everyday: everyday{name: "git-commit-pre-commit", need: []string{"git", "pre-commit"}, setup: preCommitHook, learnFlags: []string{"--accept-risky"},
			argv: []string{"git", "commit", "-q", "-a", "-m", "update"}},
			reset: gitReset("echo more >>notes.txt"), edit: gitStage("new.txt"), check: []string{"git", "log", "-1", "--format=%s %T"}},
		{everyday: everyday{name: "git-clone-bare", need: []string{"git"}, learnFlags: []string{"--accept-risky"},
			setup: func(t *testing.T, b *testutil.Box) { gitBareOrigin(t, b, perturbation{}) },
			argv:  []string{"sh", "-c", "git clone -q ~/repos/origin.git clone && git -C clone log --format='%H %s' && ls clone"}, clean: []string{"clone"}},
			reset: gitBareOrigin},
		{everyday: everyday{name: "git-submodule-update", need: []string{"git"}, setup: gitSubmodule, learnFlags: []string{"--accept-risky"},
			argv: []string{"sh", "-c", "git -c protocol.file.allow=always submodule update --init -q && git submodule status && cat sub/lib.txt"}},
			reset: gitDeinitSubmodule},
	}
}

// TestWorkflowsMore (issue 24): each of moreWorkflows learned once with output to a file,
// then enforced unchanged, after an edit, in a fresh clone, CI-like and as another user: zero
// denials and the output of the same run unsandboxed; drift (unchanged, CI-like) finds
// nothing wider.
func TestWorkflowsMore(t *testing.T) {
	testutil.RequireRoot(t)
	for _, w := range moreWorkflows() {
		t.Run(w.name, func(t *testing.T) { w.learnThenPerturb(t) })
	}
}

// touchAs sets rel's times to now as pt's user, before every run (a save in an editor).
func touchAs(rel string) func(t *testing.T, b *testutil.Box, pt perturbation) {
	return func(t *testing.T, b *testutil.Box, pt perturbation) {
		shAs(t, b, pt, "touch "+shellQuote([]string{rel}))
	}
}

// makeDeps replaces cproj's Makefile with one that has gcc write dependency files (-MMD -MP)
// and includes them.
func makeDeps(t *testing.T, b *testutil.Box) {
	testutil.WriteFile(t, filepath.Join(b.Work, "Makefile"), `CC ?= gcc
CFLAGS ?= -O2 -Wall
OBJS := main.o greet.o

hello: $(OBJS)
	$(CC) $(CFLAGS) -o $@ $(OBJS)

%.o: %.c
	$(CC) $(CFLAGS) -MMD -MP -c -o $@ $<

-include $(OBJS:.o=.d)
`, 0o644)
}

// configureProject is an autotools-like project: configure compiles and runs a test program
// in the tree (conftest, as AC_RUN_IFELSE), logs to config.log, writes config.status and runs
// it through the shell; config.status works in a mktemp -d directory and writes config.h and
// the Makefile from Makefile.in.
func configureProject(t *testing.T, b *testutil.Box) {
	testutil.WriteFile(t, filepath.Join(b.Work, "configure"), `#!/bin/sh
# A small configure in the manner of autoconf's.
prefix=/usr/local
for a; do case $a in --prefix=*) prefix=${a#--prefix=} ;; esac; done
exec 5>config.log
CC=${CC:-cc}
printf 'checking whether the C compiler works... '
cat >conftest.c <<'EOF'
#include <stdio.h>
int main(void) { return 0; }
EOF
if $CC -o conftest conftest.c >&5 2>&1 && ./conftest; then echo yes; else echo no; exit 1; fi
printf 'checking for unistd.h... '
printf '#include <unistd.h>\nint main(void) { return 0; }\n' >conftest.c
if $CC -c -o conftest.o conftest.c >&5 2>&1; then have_unistd=1; echo yes; else have_unistd=0; echo no; fi
rm -f conftest conftest.c conftest.o
cat >config.status <<EOF
#!/bin/sh
tmp=\$(mktemp -d "\${TMPDIR:-/tmp}/csXXXXXX") || exit 1
trap 'rm -rf "\$tmp"' 0
printf '#define HAVE_UNISTD_H %s\n#define PREFIX "%s"\n' $have_unistd '$prefix' >"\$tmp/config.h"
sed 's|@CC@|$CC|' Makefile.in >"\$tmp/Makefile"
mv "\$tmp/config.h" config.h && mv "\$tmp/Makefile" Makefile
echo "config.status: creating Makefile"
EOF
chmod +x config.status
${SHELL:-/bin/sh} ./config.status
`, 0o755)
	testutil.WriteFile(t, filepath.Join(b.Work, "Makefile.in"), `CC = @CC@
hello: hello.o
	$(CC) -o $@ hello.o
hello.o: hello.c config.h
	$(CC) -c -o $@ hello.c
`, 0o644)
	testutil.WriteFile(t, filepath.Join(b.Work, "hello.c"), `#include <stdio.h>
#include "config.h"
int main(void) { printf("hi from %s (unistd %d)\n", PREFIX, HAVE_UNISTD_H); return 0; }
`, 0o644)
}

// gitStashRepo is a repository with notes.txt committed (tag start) and changed since.
func gitStashRepo(t *testing.T, b *testutil.Box) {
	gitInit(t, b)
	b.Sh(t, "git tag start && echo more >>notes.txt")
}

// preCommitHook is preCommitProject committed and tagged start, with pre-commit's hook installed
// in .git/hooks and notes.txt changed.
func preCommitHook(t *testing.T, b *testutil.Box) {
	preCommitProject(t, b)
	b.Sh(t, `git config user.name T && git config user.email t@example.com && git commit -q -m config && git tag start &&
pre-commit install >/dev/null && echo more >>notes.txt`)
}

// gitResetWorktreeAt removes the worktree at dir and the branch a run made, then puts the
// history back.
func gitResetWorktreeAt(dir string) func(t *testing.T, b *testutil.Box, pt perturbation) {
	return func(t *testing.T, b *testutil.Box, pt perturbation) {
		shAs(t, b, pt, "git worktree remove --force "+dir+" 2>/dev/null; rm -rf "+dir+"; git worktree prune && { git branch -q -D feature 2>/dev/null; true; }")
		gitReset("")(t, b, pt)
	}
}

// pyProject is a pure-Python package built by setuptools (pyproject.toml, src layout), where
// python -m build is installed (python3-build).
func pyProject(t *testing.T, b *testutil.Box) {
	_, err := os.Stat("/usr/lib/python3/dist-packages/build")
	testutil.RequireNoErr(t, "python -m build (apt-get install python3-build)", err)
	testutil.WriteFile(t, filepath.Join(b.Work, "pyproject.toml"), `[build-system]
requires = ["setuptools"]
build-backend = "setuptools.build_meta"

[project]
name = "hello-pkg"
version = "1.0"
`, 0o644)
	testutil.WriteFile(t, filepath.Join(b.Work, "src", "hello_pkg", "__init__.py"), "VERSION = \"1.0\"\n", 0o644)
}

// gitBareOrigin makes $HOME/repos/origin.git, a bare repository of three commits, unless the
// run's HOME has it (a fresh HOME: ci-like), as the run's user: a local server's repository,
// outside the work directory (a directory of checkouts, not a repository itself).
func gitBareOrigin(t *testing.T, b *testutil.Box, pt perturbation) {
	shAs(t, b, pt, `[ -d "$HOME/repos/origin.git" ] && exit 0
d=$(mktemp -d) && cd "$d" && git init -q -b main . && git config user.name T && git config user.email t@example.com &&
export GIT_AUTHOR_DATE=2026-01-02T03:04:05Z GIT_COMMITTER_DATE=2026-01-02T03:04:05Z &&
for f in notes two three; do echo $f >$f.txt && git add $f.txt && git commit -q -m $f || exit 1; done &&
git clone -q --bare . "$HOME/repos/origin.git" && cd / && rm -rf "$d"`)
}

// gitSubmodule is a repository with a submodule sub whose origin is sub.git in the tree
// (ignored), committed and then deinitialized: update --init clones and checks it out.
func gitSubmodule(t *testing.T, b *testutil.Box) {
	gitInit(t, b)
	src := newBox(t, t.TempDir(), "x", "alice", "src", "")
	gitInit(t, src)
	src.Sh(t, "echo library >lib.txt && git add lib.txt && GIT_AUTHOR_DATE=2026-01-02T03:04:05Z GIT_COMMITTER_DATE=2026-01-02T03:04:05Z git commit -q -m lib")
	b.Sh(t, "git clone -q --bare "+shellQuote([]string{src.Work})+` sub.git && echo /sub.git/ >.gitignore &&
git -c protocol.file.allow=always submodule add -q ./sub.git sub && git add .gitignore &&
GIT_AUTHOR_DATE=2026-01-02T03:04:05Z GIT_COMMITTER_DATE=2026-01-02T03:04:05Z git commit -q -m sub`)
	gitDeinitSubmodule(t, b, perturbation{})
}

// gitDeinitSubmodule undoes update --init: the checkout, its git directory and its config.
func gitDeinitSubmodule(t *testing.T, b *testutil.Box, pt perturbation) {
	shAs(t, b, pt, "git submodule deinit -q -f --all && rm -rf .git/modules/sub")
}
