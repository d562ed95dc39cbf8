package e2e

import (
	"archive/zip"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
)

// wfWorkflow is an everyday Python, C, git or Go workflow (issue 24): learned once, then run
// unchanged, after an edit, in a fresh clone, in a CI-like environment and as another user.
type wfWorkflow struct {
	everyday
	// reset readies the box before every run, as the user who runs it (git: the history
	// back to its tag "start"; a commit needs something to commit).
	reset func(t *testing.T, b *testutil.Box, pt perturbation)
	// edit changes the project before every run of the "edited" perturbation, as its user.
	edit func(t *testing.T, b *testutil.Box, pt perturbation)
	// check runs (unsandboxed, as the run's user) after a run; its output is part of the run's.
	check []string
	// coldIsSlow: a cold run compiles for minutes of CI (Go: the race runtime, the standard
	// library); ci-like (a fresh HOME) is not drifted too.
	coldIsSlow bool
	// noCILike leaves ci-like out (CI time): another workflow of the same toolchain runs it
	// cold (go vet: go test -race, go run and go generate do).
	noCILike bool
	// serve is a dev server's port: a client on the host GETs fetch through it while the run
	// is up (published from the sandbox), then stops it with SIGINT, its normal end.
	serve int
	// fetch are the paths the client GETs, the first until it answers ("": /hello.txt).
	fetch []string
	// settled is a file (in the work tree) the server writes once its start-up work is done:
	// the learn's client waits for it before Ctrl-C, so that the learn sees that work (vite's
	// dependency optimizer). The learn writes the tree itself; later runs' clients do not wait.
	settled string
	// open names perturbations that still fail, with the reason: not run, said in the log
	// (perturbHooks.open; "*": every one).
	open map[string]string
}

// wfPerturbations: ci-like is a runner's (env -i with HOME and PATH only, a fresh HOME: cold
// caches, its own session, output to a file). Drift runs where the learn's state is kept
// (unchanged) and where the most differs (ci-like); the other drifts are TestPerturbations'.
var wfPerturbations = []perturbation{
	{name: "unchanged", stdout: "pipe", stdin: "null"},
	{name: "edited", stdout: "pipe", stdin: "null", noDrift: true},
	{name: "fresh-clone", stdout: "pipe", stdin: "null", place: "cwd", noDrift: true},
	// RUSTUP_HOME too: the rustup proxies are on PATH (pip runs rustc --version for its user
	// agent), their toolchains in root's HOME, not the fresh one.
	{name: "ci-like", stdout: "file", stdin: "null", place: "home",
		wrap: []string{"sh", "-c", `exec env -i HOME="$HOME" PATH="$PATH" RUSTUP_HOME="$RUSTUP_HOME" setsid -w "$@"`, "sh"}},
	// Last: the tree is the ordinary user's from here on (root runs nothing after it); its
	// HOME a fresh one of its own (learnThenPerturb).
	{name: "ordinary-user", stdout: "pipe", stdin: "null", wrap: asNobody},
}

var asNobody = []string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"}

// asUser is argv run as pt's user.
func asUser(pt perturbation, argv ...string) []string {
	if pt.name == "ordinary-user" {
		return append(slicesClone(asNobody), argv...)
	}
	return argv
}

// shAs runs script in b as pt's user, or fails the test.
func shAs(t *testing.T, b *testutil.Box, pt perturbation, script string) string {
	t.Helper()
	r := b.Run(t, asUser(pt, "sh", "-c", script)...)
	if r.Code != 0 {
		t.Fatalf("sh -c %q: %s", script, r)
	}
	return r.Stdout
}

var (
	goTiming  = regexp.MustCompile(`(?m)\t[0-9.]+s$`)
	anyTiming = regexp.MustCompile(`[0-9.]+m?s\b`)
)

func wfWorkflows(t *testing.T) []wfWorkflow {
	port := testutil.ServerPort(t)
	py := func(name string, argv []string, setup func(*testing.T, *testutil.Box), edit func(*testing.T, *testutil.Box, perturbation), need ...string) wfWorkflow {
		return wfWorkflow{everyday: everyday{name: name, need: append(need, argv[0]), argv: argv, setup: setup, timing: anyTiming}, edit: edit}
	}
	// black rewrites a.py, unformatted again before every run (and differently after an edit).
	black := py("black", []string{"black", "-q", "."}, blackProject, writeAs("a.py", blackEdited))
	black.reset, black.check = writeAs("a.py", blackUnformatted), []string{"cat", "a.py", "b.py"}
	editTests := appendAs("test_tmp.py", "\ndef test_edited():\n    assert 1\n")
	return []wfWorkflow{
		// Python: random temp names (tempfile, tmp_path, /dev/shm semaphores), a pool of
		// workers, a cache in the work tree (.pytest_cache) or in HOME (black, pylint).
		py("pytest", []string{"pytest-3", "-q"}, pytestProject, editTests),
		py("python3-m-pytest", []string{"python3", "-m", "pytest", "-q"}, pytestProject, editTests),
		py("pytest-xdist", []string{"pytest-3", "-q", "-n", "2"}, xdistProject, editTests),
		py("flake8-j", []string{"flake8", "-j", "2", "--exit-zero", "."}, flake8Project, appendAs("a.py", "x=1\n")),
		black,
		py("pylint-j", []string{"pylint", "-j", "2", "--score=n", "--exit-zero", "pkg"}, pylintProject, appendAs("pkg/mod.py", "\n\ndef edited():\n    return 1\n")),
		{everyday: everyday{name: "venv-pip", need: []string{"python3"},
			argv:  []string{"sh", "-c", "python3 -m venv --without-pip venv && python3 -m pip --python venv/bin/python install -q --no-index --find-links wheels hello && venv/bin/python -c 'import hello; print(hello.VERSION)'"},
			setup: func(t *testing.T, b *testutil.Box) { writeWheel(t, b.Work, "1.0") }, clean: []string{"venv"}},
			edit: func(t *testing.T, b *testutil.Box, pt perturbation) { writeWheel(t, b.Work, "1.1") }},
		{everyday: everyday{name: "http-server", need: []string{"python3", "curl"},
			argv: []string{"python3", "-m", "http.server", "--bind", "127.0.0.1", strconv.Itoa(port)}, setup: writeHello},
			edit: appendAs("hello.txt", "edited\n"), serve: port},
		// C
		{everyday: everyday{name: "make", need: []string{"make", "gcc"}, fixture: "cproj", argv: []string{"make"}, clean: []string{"hello", "main.o", "greet.o"}, program: "./hello"},
			edit: appendAs("greet.c", "\n/* edited */\n")},
		// git: writes to .git are git's nature (accepted at learn); a hook in .git/hooks runs.
		{everyday: everyday{name: "git-rebase-i", need: []string{"git", "sed"}, setup: gitHistory, learnFlags: []string{"--accept-risky"},
			argv: []string{"env", "GIT_SEQUENCE_EDITOR=sed -i 2s/^pick/fixup/", "git", "rebase", "-q", "-i", "HEAD~2"}},
			reset: gitReset(""), edit: gitCommitAs("more.txt"), check: []string{"git", "log", "--format=%s %T"}},
		{everyday: everyday{name: "git-commit-hooks", need: []string{"git"}, setup: gitHooks, learnFlags: []string{"--accept-risky"},
			argv: []string{"git", "commit", "-q", "-a", "-m", "update"}},
			reset: gitReset("echo more >>notes.txt"), edit: gitStage("new.txt"), check: []string{"git", "log", "-1", "--format=%s%n%b%T"}},
		{everyday: everyday{name: "git-log-p", need: []string{"git"}, setup: gitHistory, argv: []string{"git", "log", "-p"}},
			reset: gitReset(""), edit: gitCommitAs("more.txt")},
		// Go: the toolchain runs what it links from its cache (go run, go generate's go run
		// ./gen), a cold cache compiles the race runtime (drifted CI-like too: issue 24 item 5).
		{everyday: everyday{name: "go-test-race", need: []string{"go", "gcc"}, fixture: "gomod", argv: []string{"go", "test", "-race", "-count=1", "."}, timing: goTiming},
			edit: appendAs("main.go", "\n// edited\n")},
		{everyday: everyday{name: "go-run", need: []string{"go"}, fixture: "gomod", argv: []string{"go", "run", "."}},
			edit: appendAs("main.go", "\n// edited\n"), coldIsSlow: true},
		{everyday: everyday{name: "go-generate", need: []string{"go"}, fixture: "gomod", setup: goGen, argv: []string{"go", "generate", "./..."}, clean: []string{"zz_version.go"}},
			edit: appendAs("gen/main.go", "\n// edited\n"), check: []string{"cat", "zz_version.go"}, coldIsSlow: true},
		{everyday: everyday{name: "go-vet", need: []string{"go"}, fixture: "gomod", argv: []string{"go", "vet", "./..."}},
			edit: appendAs("main.go", "\nfunc edited() string { return fmt.Sprintf(\"%d\", 1) }\n"), coldIsSlow: true, noCILike: true},
	}
}

// freePort is a loopback TCP port nothing listens on now.

// appendAs appends text to rel as pt's user (the file keeps its owner), once: the twin, the
// enforced run and drift each find the same edit.
func appendAs(rel, text string) func(t *testing.T, b *testutil.Box, pt perturbation) {
	return func(t *testing.T, b *testutil.Box, pt perturbation) {
		if bs, err := os.ReadFile(filepath.Join(b.Work, rel)); err == nil && strings.HasSuffix(string(bs), text) {
			return
		}
		shAs(t, b, pt, "printf %s "+shellQuote([]string{text})+" >>"+shellQuote([]string{rel}))
	}
}

// writeAs writes text to rel as pt's user.
func writeAs(rel, text string) func(t *testing.T, b *testutil.Box, pt perturbation) {
	return func(t *testing.T, b *testutil.Box, pt perturbation) {
		shAs(t, b, pt, "printf %s "+shellQuote([]string{text})+" >"+shellQuote([]string{rel}))
	}
}

// xdistProject is pytestProject where pytest-xdist is installed (python3-pytest-xdist).
func xdistProject(t *testing.T, b *testutil.Box) {
	_, err := os.Stat("/usr/lib/python3/dist-packages/xdist")
	testutil.RequireNoErr(t, "pytest-xdist (apt-get install python3-pytest-xdist)", err)
	pytestProject(t, b)
}

const (
	blackUnformatted = "import os\nprint( os.sep )\nx   =  [1,\n 2]\n"
	blackEdited      = "import os\nprint( os.sep )\ny = {'a':1}\n"
)

func blackProject(t *testing.T, b *testutil.Box) {
	testutil.WriteFile(t, filepath.Join(b.Work, "a.py"), blackUnformatted, 0o644)
	testutil.WriteFile(t, filepath.Join(b.Work, "b.py"), "def f(x):\n    return [x, x]\n", 0o644)
}

func pylintProject(t *testing.T, b *testutil.Box) {
	testutil.WriteFile(t, filepath.Join(b.Work, "pkg", "__init__.py"), "\"\"\"A package.\"\"\"\n", 0o644)
	testutil.WriteFile(t, filepath.Join(b.Work, "pkg", "mod.py"), "\"\"\"A module.\"\"\"\nimport os\n\n\ndef f(x):\n    return os.sep + x\n", 0o644)
	testutil.WriteFile(t, filepath.Join(b.Work, "pkg", "other.py"), "\"\"\"Another.\"\"\"\n\n\ndef g():\n    \"\"\"G.\"\"\"\n    return 2\n", 0o644)
}

func writeHello(t *testing.T, b *testutil.Box) {
	testutil.WriteFile(t, filepath.Join(b.Work, "hello.txt"), "hello\n", 0o644)
}

// writeWheel writes wheels/hello-VERSION-py3-none-any.whl: a pure-Python wheel of one module.
func writeWheel(t *testing.T, work, version string) {
	t.Helper()
	dir := filepath.Join(work, "wheels")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "hello-"+version+"-py3-none-any.whl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z := zip.NewWriter(f)
	info := "hello-" + version + ".dist-info/"
	files := [][2]string{
		{"hello.py", "VERSION = " + strconv.Quote(version) + "\n"},
		{info + "METADATA", "Metadata-Version: 2.1\nName: hello\nVersion: " + version + "\n"},
		{info + "WHEEL", "Wheel-Version: 1.0\nGenerator: sysprof-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
	}
	var record strings.Builder
	for _, fl := range files {
		w, err := z.Create(fl[0])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(fl[1])); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&record, "%s,,\n", fl[0])
	}
	fmt.Fprintf(&record, "%sRECORD,,\n", info)
	w, err := z.Create(info + "RECORD")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte(record.String())); err != nil {
		t.Fatal(err)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(f.Name(), 0o666); err != nil {
		t.Fatal(err)
	}
}

// gitInit makes a repository whose identity is in its own config (a CI-like run has no
// GIT_* variables), with notes.txt committed, and tags it "start".
func gitInit(t *testing.T, b *testutil.Box) {
	writeNotes(t, b)
	b.Sh(t, `git init -q -b main . && git config user.name T && git config user.email t@example.com &&
export GIT_AUTHOR_DATE=2026-01-02T03:04:05Z GIT_COMMITTER_DATE=2026-01-02T03:04:05Z &&
git add notes.txt && git commit -q -m notes`)
}

// gitHistory is three commits, tagged start.
func gitHistory(t *testing.T, b *testutil.Box) {
	gitInit(t, b)
	b.Sh(t, `export GIT_AUTHOR_DATE=2026-01-02T03:04:05Z GIT_COMMITTER_DATE=2026-01-02T03:04:05Z &&
echo two >two.txt && git add two.txt && git commit -q -m two &&
echo three >three.txt && git add three.txt && git commit -q -m three && git tag start`)
}

// gitHooks is a repository with a pre-commit hook (git diff --check) and a commit-msg hook
// that signs the message.
func gitHooks(t *testing.T, b *testutil.Box) {
	gitInit(t, b)
	b.Sh(t, "git tag start && echo more >>notes.txt")
	testutil.WriteFile(t, filepath.Join(b.Work, ".git", "hooks", "pre-commit"), "#!/bin/sh\nexec git diff --cached --check\n", 0o755)
	testutil.WriteFile(t, filepath.Join(b.Work, ".git", "hooks", "commit-msg"), "#!/bin/sh\necho 'Checked-by: commit-msg hook' >>\"$1\"\n", 0o755)
}

// gitReset puts the history back to its tag start (and then runs script) before each run.
func gitReset(script string) func(t *testing.T, b *testutil.Box, pt perturbation) {
	return func(t *testing.T, b *testutil.Box, pt perturbation) {
		s := "git checkout -q main && git reset -q --hard start && git clean -qfd"
		if script != "" {
			s += " && " + script
		}
		shAs(t, b, pt, s)
	}
}

// gitCommitAs adds a commit of a new file rel.
func gitCommitAs(rel string) func(t *testing.T, b *testutil.Box, pt perturbation) {
	return func(t *testing.T, b *testutil.Box, pt perturbation) {
		shAs(t, b, pt, "echo edited >"+rel+" && git add "+rel+" && GIT_AUTHOR_DATE=2026-01-03T03:04:05Z GIT_COMMITTER_DATE=2026-01-03T03:04:05Z git commit -q -m edited")
	}
}

// gitStage adds a new file rel to the index.
func gitStage(rel string) func(t *testing.T, b *testutil.Box, pt perturbation) {
	return func(t *testing.T, b *testutil.Box, pt perturbation) {
		shAs(t, b, pt, "echo edited >"+rel+" && git add "+rel)
	}
}

// goGen: main.go's go:generate runs ./gen, which writes zz_version.go.
func goGen(t *testing.T, b *testutil.Box) {
	appendFile(t, filepath.Join(b.Work, "main.go"), "\n//go:generate go run ./gen\n")
	testutil.WriteFile(t, filepath.Join(b.Work, "gen", "main.go"), `// Command gen writes zz_version.go.
package main

import "os"

func main() {
	if err := os.WriteFile("zz_version.go", []byte("package main\n\nconst version = \"generated\"\n"), 0o644); err != nil {
		panic(err)
	}
}
`, 0o644)
}

func appendFile(t *testing.T, p, text string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

// serveClient is the wrapper (outside the sandbox) of a dev server's run: a client that GETs
// the first of paths once it answers, then the others, writes them to out, and stops the run
// with SIGINT. A first request may compile (next dev's routes): it has a minute.
// With settled set, it waits (a minute at most) for that file before the SIGINT.
func serveClient(port int, out, settled string, paths ...string) []string {
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	script := `out=$1 base=$2 paths=$3 settled=$4; shift 4; rm -f "$out"
(set -- $paths; i=0; while [ $i -lt 600 ] && ! curl -sf --max-time 60 -o "$out.part" "$base$1"; do sleep 0.1; i=$((i+1)); done
shift; for p; do printf '\n--- %s\n' "$p" >>"$out.part"; curl -sf --max-time 60 "$base$p" >>"$out.part"; done
i=0; while [ -n "$settled" ] && [ ! -e "$settled" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done
mv "$out.part" "$out"; kill -INT $$) &
exec "$@"`
	return []string{"sh", "-c", script, "sh", out, base, strings.Join(paths, " "), settled}
}

// TestWorkflowsPython (issue 24: Python, C, git and Go everyday workflows): pytest (also as
// python3 -m pytest and with xdist's -n 2), flake8 -j 2, black, pylint -j 2, a venv with a
// pip install from a local wheel, python3 -m http.server reached from the host, make of a C
// project, git rebase -i, git commit with hooks, git log -p, go test -race, go run, go
// generate running ./gen and go vet: each learned once with output to a file, then enforced
// unchanged, after an edit, in a fresh clone, CI-like (but go vet: CI time)
// and as another user: zero denials and the output of the same run unsandboxed; drift
// (unchanged, CI-like but Go's) finds nothing wider.
func TestWorkflowsPython(t *testing.T) {
	testutil.RequireRoot(t)
	for _, w := range wfWorkflows(t) {
		t.Run(w.name, func(t *testing.T) { w.learnThenPerturb(t) })
	}
}

// learnThenPerturb runs w through learnThenPerturb under wfPerturbations (ci-like left out
// or not drifted as w says), with w's reset, edit, server client and check.
func (w wfWorkflow) learnThenPerturb(t *testing.T) {
	var pt perturbation // the perturbation of the run being readied
	pts := slices.Clone(wfPerturbations)
	for i := range pts {
		pts[i].noDrift = pts[i].noDrift || w.coldIsSlow && pts[i].place == "home"
		if pts[i].name == "ordinary-user" && !w.coldIsSlow {
			// Another user has a HOME of their own (cold caches, ~/.cache/pre-commit made
			// anew); where a cold run compiles for minutes, the first user's, chowned.
			pts[i].place = "home"
		}
	}
	if w.noCILike {
		pts = slices.DeleteFunc(pts, func(p perturbation) bool { return p.name == "ci-like" })
	}
	open := w.open
	if why := w.open["*"]; why != "" {
		open = map[string]string{}
		for _, p := range pts {
			open[p.name] = why
		}
	}
	learnThenPerturb(t, w.everyday, pts, perturbHooks{
		open:        open,
		interrupted: w.serve != 0,
		before: func(t *testing.T, b *testutil.Box, p perturbation) {
			pt = p
			if p.name == "ordinary-user" {
				chownTree(t, b.Tmp, 65534)
				if w.serve != 0 {
					// The publish forwarder re-executes sysprof as the user (nsenter):
					// reachable, as an installed one is.
					if err := os.Chmod(filepath.Dir(testutil.SysprofBin), 0o755); err != nil {
						t.Fatal(err)
					}
				}
			}
		},
		edit: func(t *testing.T, b *testutil.Box, p perturbation) {
			if w.reset != nil {
				w.reset(t, b, p)
			}
			if p.name == "edited" && w.edit != nil {
				w.edit(t, b, p)
			}
		},
		wrap: func(b *testutil.Box, p perturbation) []string {
			wrap := slicesClone(p.wrap)
			if w.serve != 0 {
				// First: its $$ is the pid the rest execs into (setpriv keeps the
				// capability to reach sysprof's 0700 directory only for its own exec).
				settled := ""
				if p.name == "learn" {
					settled = w.settled
				}
				wrap = append(serveClient(w.serve, w.fetched(b), settled, w.fetchPaths()...), wrap...)
			}
			return wrap
		},
		output: func(t *testing.T, b *testutil.Box, r testutil.Result) testutil.Result {
			r = w.everyday.output(t, b, r)
			if w.serve != 0 {
				bs, err := os.ReadFile(w.fetched(b))
				if err != nil {
					t.Errorf("the client on the host got nothing from the server: %v", err)
				}
				os.Remove(w.fetched(b))
				r.Stdout += "--- GET " + strings.Join(w.fetchPaths(), " ") + ":\n" + string(bs)
			}
			if len(w.check) > 0 {
				c := b.Run(t, asUser(pt, w.check...)...)
				testutil.MustCode(t, strings.Join(w.check, " "), c, 0)
				r.Stdout += "--- " + strings.Join(w.check, " ") + ":\n" + c.Stdout
			}
			return r
		},
	})
}

// fetchPaths are the paths the dev server's client GETs.
func (w wfWorkflow) fetchPaths() []string {
	if len(w.fetch) == 0 {
		return []string{"/hello.txt"}
	}
	return w.fetch
}

// fetched is where the dev server's client writes what it got (outside the box's HOME and
// work tree; writable by the ordinary user, as openForNobody leaves the test's root).
func (w wfWorkflow) fetched(b *testutil.Box) string {
	return filepath.Join(filepath.Dir(filepath.Dir(b.Tmp)), w.name+".fetched")
}
