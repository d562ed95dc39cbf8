package e2e

import (
	"path/filepath"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
)

// sixthWorkflows are everyday workflows no other table runs: a linter that had nothing to say
// at learn and has findings after an edit (shellcheck: its runtime polls stdout only before a
// write), git merge, a rebase of a branch onto main, an amended commit tagged and described, a
// bundle cloned back, git archive, git apply -R of a diff, sed -i and patch -p1 over the tree
// (temp files of random names beside what they edit), a sqlite database in WAL mode, python's
// unittest, tsc -b (incremental, its .tsbuildinfo kept), and go test's coverage report (go
// tool cover from the toolchain). Each is cheap but tsc and go (no cold CI-like run): little
// CI time.
func sixthWorkflows() []wfWorkflow {
	git := func(name string, setup func(*testing.T, *testutil.Box), argv []string) everyday {
		return everyday{name: name, need: []string{"git"}, setup: setup, learnFlags: []string{"--accept-risky"}, argv: argv}
	}
	return []wfWorkflow{
		// Learned clean (shellcheck writes nothing), run with a finding after the edit.
		{everyday: everyday{name: "shellcheck-findings", need: []string{"shellcheck"}, setup: shellProject,
			argv: []string{"sh", "-c", `shellcheck -f gcc scripts/*.sh; echo "shellcheck exit $?"`}},
			edit: appendAs("scripts/greet.sh", "echo $1\n")},
		{everyday: git("git-merge", gitFeature, []string{"sh", "-c", "git merge -q --no-ff -m merged feature && git log --format=%s --graph"}),
			reset: gitReset(""), edit: gitCommitAs("more.txt"), check: []string{"git", "log", "-1", "--format=%T"}},
		{everyday: git("git-rebase-onto", gitFeatureTagged, []string{"sh", "-c", "git checkout -q feature && git rebase -q main && git log --format=%s"}),
			reset: gitReset("git branch -q -f feature feature0"), edit: gitCommitAs("more.txt"), check: []string{"git", "log", "-1", "--format=%T", "feature"}},
		{everyday: git("git-amend-tag", gitHistory, []string{"sh", "-c", "git commit -q --amend -m 'three, amended' && git tag -a -m release v1.0 && git describe --tags && git log --format=%s"}),
			reset: gitReset("{ git tag -d v1.0 >/dev/null 2>&1 || true; }"), edit: gitCommitAs("more.txt")},
		{everyday: git("git-bundle-clone", gitHistory, []string{"sh", "-c", "git bundle create -q repo.bundle --all && git clone -q repo.bundle fromb && git -C fromb log --format=%s"}),
			reset: gitReset("rm -rf fromb repo.bundle"), edit: gitCommitAs("more.txt")},
		{everyday: git("git-archive", gitHistory, []string{"sh", "-c", "git archive --format=tar.gz --prefix=proj/ -o proj.tar.gz HEAD && tar tzf proj.tar.gz"}),
			reset: gitReset("rm -f proj.tar.gz"), edit: gitCommitAs("more.txt")},
		{everyday: git("git-apply-reverse", gitHistory, []string{"sh", "-c", "git diff HEAD~1 >last.diff && git apply -R last.diff && git status --short && git apply last.diff && git diff --stat"}),
			reset: gitReset(""), edit: gitCommitAs("more.txt")},
		// sed -i writes ./sedXXXXXX beside each file and renames it over the file.
		{everyday: everyday{name: "sed-i-tree", need: []string{"sed", "find"}, setup: sedProject,
			argv: []string{"sh", "-c", `find . -name '*.txt' -exec sed -i 's/line/LINE/' {} + && cat notes.txt sub/more.txt`}},
			reset: sedReset, edit: appendAs("sub/more.txt", "line edited\n")},
		{everyday: everyday{name: "patch-p1", need: []string{"patch"}, setup: patchProject,
			argv: []string{"sh", "-c", "patch -p1 -s <fix.patch && cat src/hello.c"}},
			reset: writeAs("src/hello.c", helloUnpatched), edit: appendAs("fix.patch", "")},
		// WAL mode: the -wal and -shm files beside the database, the shm mapped shared.
		{everyday: everyday{name: "sqlite-wal", need: []string{"sqlite3"}, setup: sqliteProject,
			argv:  []string{"sh", "-c", "sqlite3 app.db <schema.sql && sqlite3 app.db 'select id, name from t order by id'"},
			clean: []string{"app.db", "app.db-wal", "app.db-shm"}},
			edit: appendAs("schema.sql", "insert into t(name) values ('edited');\n")},
		{everyday: everyday{name: "python3-unittest", need: []string{"python3"}, setup: unittestProject, timing: anyTiming,
			argv: []string{"python3", "-m", "unittest", "discover", "-s", "tests"}},
			edit: appendAs("tests/test_calc.py", "\n\nclass Edited(unittest.TestCase):\n    def test_edited(self):\n        self.assertTrue(True)\n")},
		// tsc -b: a composite project, its tsconfig.tsbuildinfo and dist kept between runs.
		{everyday: everyday{name: "tsc-b", need: []string{"node"}, setup: tscBuildProject,
			argv: []string{"node_modules/.bin/tsc", "-b"}, state: []string{"dist", "tsconfig.tsbuildinfo"}},
			edit: appendAs("src/greet.ts", "\nexport const edited = 1;\n"), check: []string{"ls", "dist"}},
		{everyday: everyday{name: "go-test-cover", need: []string{"go"}, fixture: "gomod",
			argv:  []string{"sh", "-c", "go test -count=1 -coverprofile=cover.out . >/dev/null && go tool cover -func=cover.out"},
			clean: []string{"cover.out"}},
			// ci-like compiles the standard library cold twice (~2 min of CI): go test -race
			// runs cold CI-like (TestWorkflowsPython).
			edit: appendAs("main.go", "\n// edited\n"), coldIsSlow: true, noCILike: true},
	}
}

// TestWorkflowsSixth (issue 24): each of sixthWorkflows learned once with output to a file,
// then enforced unchanged, after an edit, in a fresh clone, CI-like and as another user: zero
// denials and the output of the same run unsandboxed; drift (unchanged, CI-like) finds nothing
// wider.
func TestWorkflowsSixth(t *testing.T) {
	testutil.RequireRoot(t)
	for _, w := range sixthWorkflows() {
		t.Run(w.name, func(t *testing.T) { w.learnThenPerturb(t) })
	}
}

// gitFeatureTagged is gitFeature with the feature branch's commit tagged feature0 (a rebase
// moves the branch; reset puts it back).
func gitFeatureTagged(t *testing.T, b *testutil.Box) {
	gitFeature(t, b)
	b.Sh(t, "git tag feature0 feature")
}

// sedProject is two text files, one in a subdirectory.
func sedProject(t *testing.T, b *testutil.Box) {
	writeNotes(t, b)
	testutil.WriteFile(t, filepath.Join(b.Work, "sub", "more.txt"), "line four\n", 0o644)
}

// sedReset puts back what sed -i rewrote (the edit's line stays).
func sedReset(t *testing.T, b *testutil.Box, pt perturbation) {
	shAs(t, b, pt, "printf 'line three\\nline one\\nline two\\n' >notes.txt && sed -i 's/LINE/line/' sub/more.txt")
}

const helloUnpatched = "#include <stdio.h>\n\nint main(void) {\n\tputs(\"hi\");\n\treturn 0;\n}\n"

// patchProject is src/hello.c and a -p1 patch of it.
func patchProject(t *testing.T, b *testutil.Box) {
	testutil.WriteFile(t, filepath.Join(b.Work, "src", "hello.c"), helloUnpatched, 0o644)
	testutil.WriteFile(t, filepath.Join(b.Work, "fix.patch"), `--- a/src/hello.c
+++ b/src/hello.c
@@ -1,6 +1,6 @@
 #include <stdio.h>
 
 int main(void) {
-	puts("hi");
+	puts("hello, patched");
 	return 0;
 }
`, 0o644)
}

// sqliteProject is a schema that turns WAL on and fills a table.
func sqliteProject(t *testing.T, b *testutil.Box) {
	testutil.WriteFile(t, filepath.Join(b.Work, "schema.sql"), `pragma journal_mode=wal;
create table t(id integer primary key, name text);
insert into t(name) values ('one'), ('two');
`, 0o644)
}

// unittestProject is a module and its unittest tests.
func unittestProject(t *testing.T, b *testutil.Box) {
	testutil.WriteFile(t, filepath.Join(b.Work, "calc.py"), "def add(a, b):\n    return a + b\n", 0o644)
	testutil.WriteFile(t, filepath.Join(b.Work, "tests", "__init__.py"), "", 0o644)
	testutil.WriteFile(t, filepath.Join(b.Work, "tests", "test_calc.py"), `import unittest

from calc import add


class Add(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(1, 2), 3)
`, 0o644)
}

// tscBuildProject is the TypeScript app as a composite project (tsc -b: incremental).
func tscBuildProject(t *testing.T, b *testutil.Box) {
	jsApp(t, b)
	testutil.WriteFile(t, filepath.Join(b.Work, "tsconfig.json"), `{
  "compilerOptions": {
    "target": "ES2022",
    "module": "NodeNext",
    "moduleResolution": "NodeNext",
    "strict": true,
    "composite": true,
    "rootDir": "src",
    "outDir": "dist",
    "skipLibCheck": true,
    "types": []
  },
  "include": ["src"]
}
`, 0o644)
}
