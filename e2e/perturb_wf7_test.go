package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
)

// seventhWorkflows are everyday workflows no other table runs, chosen for what each tool
// writes beside its output under a name of its own: zip's ziXXXXXX in the work tree, ar's,
// strip's and objcopy's stXXXXXX, sort's $TMPDIR/sortXXXXXX spills, perl -i's random sibling,
// valgrind's per-pid files in $TMPDIR, recursive make's jobserver, tar's gzip child, sqlite's
// rollback journal, node's test runner (a child per file), ctags' temp file, xz and zstd
// with threads, diff -r, git format-patch and revert, make install DESTDIR. Each is cheap (C
// compiles of a line or two, no cold toolchain): seconds of CI a row.
func seventhWorkflows() []wfWorkflow {
	git := func(name string, argv []string) everyday {
		return everyday{name: name, need: []string{"git"}, setup: gitHistory, learnFlags: []string{"--accept-risky"}, argv: argv}
	}
	return []wfWorkflow{
		{everyday: everyday{name: "diff-r", need: []string{"diff"}, setup: treePair,
			argv: []string{"sh", "-c", `diff -r old new; echo "diff exit $?"`}},
			edit: appendAs("new/sub/b.txt", "edited\n")},
		{everyday: everyday{name: "tar-gz-roundtrip", need: []string{"tar", "gzip"}, setup: treePair,
			argv:  []string{"sh", "-c", "tar -czf tree.tgz old new && mkdir out && tar -xzf tree.tgz -C out && find out -type f | sort && tar -tzf tree.tgz | sort"},
			clean: []string{"tree.tgz", "out"}},
			edit: appendAs("new/sub/b.txt", "edited\n")},
		// zip writes ./ziXXXXXX and renames it to the archive.
		{everyday: everyday{name: "zip-unzip", need: []string{"zip", "unzip"}, setup: treePair,
			argv:  []string{"sh", "-c", "zip -qr tree.zip old new && zipinfo -1 tree.zip | sort && unzip -q tree.zip -d out && diff -r old out/old && echo same"},
			clean: []string{"tree.zip", "out"}},
			edit: appendAs("old/a.txt", "edited\n")},
		// Migrations applied in order, each in a rollback journal (app.db-journal).
		{everyday: everyday{name: "sqlite-migrations", need: []string{"sqlite3"}, setup: migrationsProject,
			argv:  []string{"sh", "-c", `for f in migrations/*.sql; do sqlite3 app.db <"$f" || exit 1; done && sqlite3 app.db 'select id, name, email from users order by id'`},
			clean: []string{"app.db", "app.db-journal"}},
			edit: writeAs("migrations/003_more.sql", "begin; insert into users(name, email) values ('carol', 'c@example.com'); commit;\n")},
		// Recursive make -j2: the jobserver's pipe (or fifo) handed to the sub-makes.
		{everyday: everyday{name: "make-jobserver", need: []string{"make", "gcc"}, setup: recursiveMake,
			argv: []string{"sh", "-c", "make -s -j2 && ./app/app"}, clean: []string{"lib/greet.o", "lib/libgreet.a", "app/app"}},
			edit: appendAs("lib/greet.c", "\n/* edited */\n")},
		// ar writes ./stXXXXXX and renames it over the archive.
		{everyday: everyday{name: "ar-static-lib", need: []string{"gcc", "ar"}, setup: staticLib,
			argv:  []string{"sh", "-c", "cc -c a.c b.c && ar rcs libab.a a.o b.o && ranlib libab.a && cc -o app main.c -L. -lab && ./app && ar t libab.a"},
			clean: []string{"a.o", "b.o", "libab.a", "app"}},
			edit: appendAs("b.c", "\n/* edited */\n")},
		// objcopy and strip write ./stXXXXXX beside the binary and rename it over it.
		{everyday: everyday{name: "objcopy-strip", need: []string{"gcc", "objcopy", "strip"}, setup: cProject(nil),
			argv:  []string{"sh", "-c", "cc -g -o hello hello.c && objcopy --only-keep-debug hello hello.debug && strip --strip-debug hello && objcopy --add-gnu-debuglink=hello.debug hello && ./hello"},
			clean: []string{"hello", "hello.debug"}},
			edit: appendAs("hello.c", "\n/* edited */\n")},
		// sort spills runs to $TMPDIR/sortXXXXXX when they exceed its buffer.
		{everyday: everyday{name: "sort-spill", need: []string{"sort", "md5sum"}, setup: bigNumbers,
			argv:  []string{"sh", "-c", "sort -n -S 64K --parallel=2 -o sorted.txt numbers.txt && head -3 sorted.txt && md5sum sorted.txt"},
			clean: []string{"sorted.txt"}},
			edit: appendAs("numbers.txt", "-1\n")},
		// perl -i writes a random sibling and renames it over each file.
		{everyday: everyday{name: "perl-pi", need: []string{"perl"}, setup: sedProject,
			argv: []string{"sh", "-c", `perl -pi -e 's/line/LINE/' notes.txt sub/more.txt && cat notes.txt sub/more.txt`}},
			reset: sedReset, edit: appendAs("sub/more.txt", "line edited\n")},
		// valgrind: its tool from /usr/libexec, vgdb's files named by pid in $TMPDIR.
		{everyday: everyday{name: "valgrind-memcheck", need: []string{"gcc", "valgrind"}, setup: cProject(nil),
			argv:  []string{"sh", "-c", "cc -g -o hello hello.c && valgrind -q --error-exitcode=3 --leak-check=full ./hello"},
			clean: []string{"hello"}},
			edit: appendAs("hello.c", "\n/* edited */\n")},
		// node's test runner: a child process per test file, reporting over a pipe.
		{everyday: everyday{name: "node-test", need: []string{"node"}, setup: nodeTests, timing: nodeTestTiming,
			argv: []string{"node", "--test", "--test-reporter=tap"}},
			edit: writeAs("test/edited.test.js", "const test = require('node:test');\ntest('edited', () => {});\n")},
		{everyday: everyday{name: "ctags-R", need: []string{"ctags"}, setup: staticLib,
			argv: []string{"sh", "-c", "ctags -R -f tags . && grep -v '^!_' tags | cut -f1,2 | sort"}, clean: []string{"tags"}},
			edit: appendAs("b.c", "\nint edited(void) { return 2; }\n")},
		{everyday: everyday{name: "xz-zstd-threads", need: []string{"xz", "zstd"}, setup: bigNumbers,
			argv:  []string{"sh", "-c", "xz -T2 -k -f numbers.txt && zstd -q -f -T2 numbers.txt && xz -t numbers.txt.xz && zstd -q -t numbers.txt.zst && echo ok"},
			clean: []string{"numbers.txt.xz", "numbers.txt.zst"}},
			edit: appendAs("numbers.txt", "-1\n")},
		{everyday: git("git-format-patch-revert", []string{"sh", "-c", "git format-patch -q -o patches HEAD~2 && ls patches && git revert --no-edit HEAD >/dev/null && git log --format=%s"}),
			reset: gitReset("rm -rf patches"), edit: gitCommitAs("more.txt"), check: []string{"git", "log", "-1", "--format=%T"}},
		// A watcher stopped by a signal, its normal end: tsc --watch (inotify) until its first
		// build is done, then SIGINT; node exits 130.
		{everyday: everyday{name: "tsc-watch-sigint", need: []string{"node"}, setup: jsApp, timing: clockTime,
			argv:  []string{"sh", "-c", tscWatch},
			clean: []string{"dist", "watch.log"}},
			// CI time (~10 s a run): tsc's ci-like runs are TestJSWorkflows' and tsc-b's.
			edit: appendAs("src/greet.ts", "\nexport const edited = 1;\n"), noCILike: true},
		// The sanitizers' runtimes: ASan's shadow memory (a terabyte reserved), UBSan's checks.
		{everyday: everyday{name: "asan-ubsan", need: []string{"gcc"}, setup: cProject(nil),
			argv:  []string{"sh", "-c", "cc -g -fsanitize=address,undefined -fno-omit-frame-pointer -o hello hello.c && ./hello"},
			clean: []string{"hello"}},
			edit: appendAs("hello.c", "\n/* edited */\n"), open: map[string]string{"ordinary-user": asanNoCgroupOpen}},
		// gcc -flto=auto: lto-wrapper writes a makefile of its partitions to $TMPDIR and runs
		// make -j on it (the jobserver's or its own).
		{everyday: everyday{name: "gcc-lto-auto", need: []string{"gcc", "make"}, setup: staticLib,
			argv:  []string{"sh", "-c", "cc -O2 -flto=auto -flto-partition=one -o app a.c b.c main.c && ./app"},
			clean: []string{"app"}},
			edit: appendAs("b.c", "\n/* edited */\n")},
		// Coverage: the build's .gcno, the run's .gcda, gcov's report beside the source.
		{everyday: everyday{name: "gcov", need: []string{"gcc", "gcov"}, setup: cProject(nil),
			argv:  []string{"sh", "-c", "cc --coverage -o hello hello.c && ./hello && gcov -n hello.c"},
			clean: []string{"hello", "hello.gcno", "hello.gcda", "hello-hello.gcno", "hello-hello.gcda"}},
			edit: appendAs("hello.c", "\n/* edited */\n")},
		{everyday: everyday{name: "jq-transform", need: []string{"jq"}, setup: jqProject,
			argv:  []string{"sh", "-c", "jq -S '.deps |= sort | .count = (.deps | length)' package.json >out.json && jq -r '.deps[]' out.json && cat out.json"},
			clean: []string{"out.json"}},
			edit: writeAs("package.json", `{"name": "p", "deps": ["zeta", "alpha", "mid", "edited"]}`)},
		{everyday: everyday{name: "sha256sum-check", need: []string{"sha256sum", "find", "sort"}, setup: treePair,
			argv: []string{"sh", "-c", "find old new -type f | sort | xargs sha256sum >SHA256SUMS && sha256sum -c SHA256SUMS"}, clean: []string{"SHA256SUMS"}},
			edit: appendAs("new/sub/b.txt", "edited\n")},
		{everyday: git("git-switch-restore", []string{"sh", "-c", "git switch -q -c topic && echo more >>notes.txt && git add notes.txt && git restore --staged notes.txt && git status --short && git restore notes.txt && git switch -q main && git branch -D -q topic && git status --short"}),
			reset: gitReset(""), edit: gitCommitAs("more.txt"), check: []string{"git", "branch", "--list"}},
		{everyday: git("git-mv-rm", []string{"sh", "-c", "git mv two.txt second.txt && git rm -q three.txt && GIT_AUTHOR_DATE=2026-01-04T03:04:05Z GIT_COMMITTER_DATE=2026-01-04T03:04:05Z git commit -q -m moved && git log --stat --format=%s -1"}),
			reset: gitReset(""), edit: gitCommitAs("more.txt"), check: []string{"git", "log", "-1", "--format=%T"}},
		{everyday: everyday{name: "make-install-destdir", need: []string{"make", "gcc", "install"}, setup: installProject,
			argv:  []string{"sh", "-c", "make -s && make -s install DESTDIR=$PWD/stage PREFIX=/usr && find stage | sort"},
			clean: []string{"hello", "stage"}},
			edit: appendAs("hello.c", "\n/* edited */\n")},
	}
}

// tscWatch runs tsc --watch until its first build is done, then stops it with SIGINT.
const tscWatch = `node_modules/.bin/tsc --watch --preserveWatchOutput -p . >watch.log 2>&1 & p=$!
i=0; until grep -q 'Watching for file changes' watch.log 2>/dev/null; do sleep 0.1; i=$((i+1)); [ $i -lt 600 ] || break; done
kill -INT $p; wait $p; echo "tsc exit $?"; sed 's/^\[[^]]*\] //' watch.log; ls dist`

// asanNoCgroupOpen: an ordinary user's run with no cgroup of its own (no delegated subtree, as
// on this CI's cgroup v1 host) is bounded by RLIMIT_DATA alone, which ASan's shadow (terabytes
// reserved) exceeds; beside a cgroup the run has no RLIMIT_DATA (root's cells pass).
const asanNoCgroupOpen = "an ordinary user's run without a delegated cgroup keeps memory by RLIMIT_DATA, which ASan's reserved shadow exceeds (ENOMEM)"

// clockTime is a time of day (tsc --watch's [10:32:01 PM]).
var clockTime = regexp.MustCompile(`[0-9]+:[0-9]+:[0-9]+( [AP]M)?`)

// TestWorkflowsSeventh (issue 24): each of seventhWorkflows learned once with output to a
// file, then enforced unchanged, after an edit, in a fresh clone, CI-like and as another user:
// zero denials and the output of the same run unsandboxed; drift (unchanged, CI-like) finds
// nothing wider.
func TestWorkflowsSeventh(t *testing.T) {
	testutil.RequireRoot(t)
	for _, w := range seventhWorkflows() {
		t.Run(w.name, func(t *testing.T) { w.learnThenPerturb(t) })
	}
}

// treePair is two versions of a small tree, old and new, that differ in two files.
func treePair(t *testing.T, b *testutil.Box) {
	for rel, text := range map[string]string{
		"old/a.txt": "alpha\n", "old/sub/b.txt": "beta\n", "old/sub/c.txt": "gamma\n",
		"new/a.txt": "alpha\n", "new/sub/b.txt": "beta, changed\n", "new/sub/d.txt": "delta\n",
	} {
		testutil.WriteFile(t, filepath.Join(b.Work, rel), text, 0o644)
	}
}

// migrationsProject is two numbered migrations of a users table.
func migrationsProject(t *testing.T, b *testutil.Box) {
	testutil.WriteFile(t, filepath.Join(b.Work, "migrations", "001_users.sql"),
		"begin; create table users(id integer primary key, name text not null); insert into users(name) values ('alice'), ('bob'); commit;\n", 0o644)
	testutil.WriteFile(t, filepath.Join(b.Work, "migrations", "002_email.sql"),
		"begin; alter table users add column email text; update users set email = name || '@example.com'; create index users_email on users(email); commit;\n", 0o644)
}

// recursiveMake is a top Makefile that makes lib (a static library) and app with $(MAKE).
func recursiveMake(t *testing.T, b *testutil.Box) {
	for rel, text := range map[string]string{
		"Makefile":     "all:\n\t$(MAKE) -C lib\n\t$(MAKE) -C app\n.PHONY: all\n",
		"lib/Makefile": "libgreet.a: greet.o\n\tar rcs $@ $^\n",
		"lib/greet.c":  "#include <stdio.h>\nvoid greet(void) { puts(\"hello from lib\"); }\n",
		"app/Makefile": "app: main.c ../lib/libgreet.a\n\t$(CC) -o $@ main.c -L../lib -lgreet\n",
		"app/main.c":   "void greet(void);\nint main(void) { greet(); return 0; }\n",
	} {
		testutil.WriteFile(t, filepath.Join(b.Work, rel), text, 0o644)
	}
}

// staticLib is two library sources and a main that calls both.
func staticLib(t *testing.T, b *testutil.Box) {
	for rel, text := range map[string]string{
		"a.c":    "int a(void) { return 1; }\n",
		"b.c":    "int b(void) { return 2; }\n",
		"main.c": "#include <stdio.h>\nint a(void); int b(void);\nint main(void) { printf(\"%d\\n\", a() + b()); return 0; }\n",
	} {
		testutil.WriteFile(t, filepath.Join(b.Work, rel), text, 0o644)
	}
}

// bigNumbers is numbers.txt: 40,000 numbers in a fixed shuffled order (~250 KB: sort -S 64K
// spills it to temp files).
func bigNumbers(t *testing.T, b *testutil.Box) {
	var s strings.Builder
	for i := range 40000 {
		fmt.Fprintf(&s, "%d\n", (i*7919)%40000)
	}
	testutil.WriteFile(t, filepath.Join(b.Work, "numbers.txt"), s.String(), 0o644)
}

// nodeTests are two test files for node --test.
func nodeTests(t *testing.T, b *testutil.Box) {
	testutil.WriteFile(t, filepath.Join(b.Work, "test", "math.test.js"),
		"const test = require('node:test');\nconst assert = require('node:assert');\ntest('adds', () => { assert.strictEqual(1 + 2, 3); });\n", 0o644)
	testutil.WriteFile(t, filepath.Join(b.Work, "test", "str.test.js"),
		"const test = require('node:test');\nconst assert = require('node:assert');\ntest('joins', () => { assert.strictEqual(['a', 'b'].join('-'), 'a-b'); });\n", 0o644)
}

// jqProject is a package.json with unsorted dependencies.
func jqProject(t *testing.T, b *testutil.Box) {
	testutil.WriteFile(t, filepath.Join(b.Work, "package.json"), `{"name": "p", "deps": ["zeta", "alpha", "mid"]}`, 0o644)
}

// installProject is hello.c with a Makefile whose install target honours DESTDIR and PREFIX.
func installProject(t *testing.T, b *testutil.Box) {
	cProject(map[string]string{"Makefile": "PREFIX ?= /usr/local\nhello: hello.c\n\t$(CC) -o $@ $<\ninstall: hello\n\tinstall -D -m 755 hello $(DESTDIR)$(PREFIX)/bin/hello\n\tinstall -D -m 644 hello.c $(DESTDIR)$(PREFIX)/share/doc/hello/hello.c\n.PHONY: install\n"})(t, b)
}

// TestStagedLinkOfAHostFileSaysWhy (issue 24): `ln` of a host file into another directory of
// the staged work tree is answered EXDEV (on the overlay the new name would be another inode,
// which git's local clone refuses; git, cargo, pnpm and cp copy instead), and ln has no copy
// fallback: it fails, and the run's report says which link, why, and what to do. The host's
// file is left as it was, linked nowhere.
func TestStagedLinkOfAHostFileSaysWhy(t *testing.T) {
	testutil.RequireRoot(t)
	root := t.TempDir()
	b := newBox(t, root, "x", "alice", filepath.Join("src", "project"), "")
	testutil.WriteFile(t, filepath.Join(b.Work, "a", "f.txt"), "host file\n", 0o644)
	testutil.WriteFile(t, filepath.Join(b.Work, "b", "keep"), "", 0o644)
	argv := []string{"sh", "-c", "ln a/f.txt b/g.txt; echo \"ln exit $?\"; echo new >b/new.txt"}
	profile := filepath.Join(root, "profile.yaml")
	testutil.MustCode(t, "learn", b.Sysprof(t, append([]string{"learn", "-p", profile, "--"}, argv...)...), 0)
	testutil.RequireNoErr(t, "reset", os.Remove(filepath.Join(b.Work, "b", "g.txt")))
	rep := filepath.Join(root, "report.json")
	r := b.Sysprof(t, append([]string{"enforce", "-p", profile, "--report", rep, "--"}, argv...)...)
	if r.Code != 0 || !strings.Contains(r.Stdout, "ln exit 1") || !strings.Contains(r.Stderr, "Invalid cross-device link") {
		t.Fatalf("ln of a host file across directories of the staged tree: want EXDEV (ln's exit 1):\n%s", r)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join(b.Work, "a", "f.txt"), &st); err != nil || st.Nlink != 1 {
		t.Errorf("the host's file: %v, %d links: want 1", err, st.Nlink)
	}
	notes := testutil.ReadReport(t, rep).Notes
	if !slices.ContainsFunc(notes, func(n string) bool {
		return strings.Contains(n, "EXDEV") && strings.Contains(n, filepath.Join(b.Work, "a", "f.txt")) && strings.Contains(n, "ln -s")
	}) {
		t.Errorf("the report does not say which link was answered EXDEV and what to do: %q", notes)
	}
}
