package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
)

// jsTools is the fixture whose pinned dev dependencies (typescript, esbuild, vitest, pnpm:
// package-lock.json) .ci/run installs with npm ci; app/ is the project the tests copy them into.
func jsTools(t *testing.T) string {
	t.Helper()
	dir := testutil.Testdata("jsworkflows")
	_, err := os.Stat(filepath.Join(dir, "node_modules", ".bin", "tsc"))
	testutil.RequireNoErr(t, "the fixture's dependencies (npm ci --prefix testdata/jsworkflows, as .ci/run does)", err)
	return dir
}

// jsApp copies the TypeScript project and its installed tools into b's work dir (a fresh
// clone followed by npm ci).
func jsApp(t *testing.T, b *testutil.Box) {
	dir := jsTools(t)
	testutil.CopyTree(t, filepath.Join(dir, "app"), b.Work)
	testutil.CopyTree(t, filepath.Join(dir, "package.json"), filepath.Join(b.Work, "package.json"))
	// cp -a: node_modules/.bin holds symlinks and esbuild's native binary its mode.
	b.Sh(t, "cp -a "+shellQuote([]string{filepath.Join(dir, "node_modules")})+" .")
}

// pnpmInstall is pnpm's offline install, run from the pinned pnpm copied into the project.
var pnpmInstall = []string{"node", "tools/pnpm/bin/pnpm.cjs", "install", "--offline", "--reporter=silent"}

// pnpmApp makes a project whose one dependency is a local tarball and fills pnpm's store in
// $HOME with it (an unsandboxed install), as a developer's machine has it before the next run.
func pnpmApp(t *testing.T, b *testutil.Box) {
	dir := jsTools(t)
	b.Sh(t, `mkdir -p dep vendor tools &&
echo '{"name":"leftpad-local","version":"1.0.0","main":"index.js"}' >dep/package.json &&
echo 'module.exports = (s, n) => String(s).padStart(n);' >dep/index.js &&
tar -C dep -czf vendor/leftpad-local-1.0.0.tgz --transform 's,^\.,package,' . && rm -r dep &&
echo '{"name":"app","version":"1.0.0","private":true,"dependencies":{"leftpad-local":"file:vendor/leftpad-local-1.0.0.tgz"}}' >package.json &&
echo 'console.log(require("leftpad-local")("ok", 4));' >index.js`)
	b.Sh(t, "cp -a "+shellQuote([]string{filepath.Join(dir, "node_modules", "pnpm")})+" tools/pnpm")
	if r := b.Run(t, pnpmInstall...); r.Code != 0 {
		t.Fatalf("filling pnpm's store: %s", r)
	}
}

// jsWorkflow is an everyday JavaScript (or doc) command and the edit a developer makes
// before running it again.
type jsWorkflow struct {
	everyday
	edit, line string // a file in the work tree that gets line appended ("" none)
	// check runs (unsandboxed) what the command built; its output is part of the run's.
	check []string
}

// output is everyday.output with what check prints added.
func (w jsWorkflow) output(t *testing.T, b *testutil.Box, r testutil.Result) testutil.Result {
	t.Helper()
	// Colours (vitest colours its report under CI=true) are not output that differs.
	r.Stdout = ansiColour.ReplaceAllString(r.Stdout, "")
	r = w.everyday.output(t, b, r)
	if len(w.check) == 0 || r.Code != 0 {
		return r
	}
	c := b.Run(t, w.check...)
	testutil.MustCode(t, strings.Join(w.check, " "), c, 0)
	r.Stdout += "--- " + strings.Join(w.check, " ") + ":\n" + c.Stdout
	return r
}

var ansiColour = regexp.MustCompile("\x1b\\[[0-9;]*m")

var vitestTiming = regexp.MustCompile(`(?m)^\s*(Start at|Duration)\s.*$|\([0-9]+ tests?\) [0-9]+ms|[0-9.]+m?s$`)

func jsWorkflows() []jsWorkflow {
	return []jsWorkflow{
		{everyday: everyday{name: "tsc", need: []string{"node"}, argv: []string{"node_modules/.bin/tsc", "-p", "."}, setup: jsApp, clean: []string{"dist"}},
			edit: "src/greet.ts", line: "\nexport const edited = 1;\n", check: []string{"node", "dist/main.js"}},
		{everyday: everyday{name: "esbuild", need: []string{"node"}, argv: []string{"node_modules/.bin/esbuild", "src/main.ts", "--bundle", "--platform=node", "--outfile=out/bundle.js", "--log-level=warning"}, setup: jsApp, clean: []string{"out"}},
			edit: "src/greet.ts", line: "\nexport const edited = 1;\n", check: []string{"node", "out/bundle.js"}},
		{everyday: everyday{name: "vitest", need: []string{"node"}, argv: []string{"node_modules/.bin/vitest", "run", "--reporter=basic"}, setup: jsApp, timing: vitestTiming},
			edit: "test/greet.test.ts", line: "\nit(\"edited\", () => expect(1).toBe(1));\n"},
		// pnpm install from its store (no network): a tarball dependency, hard-linked from the
		// store in $HOME into node_modules (pnpm first probes where it can hard-link). A warm
		// store is only read, a cold one (ci-like: a fresh HOME) written: a cache state, learned
		// in one extra run with the store emptied before it (issue 24 item 5).
		{everyday: everyday{name: "pnpm", need: []string{"node", "tar"}, argv: pnpmInstall, setup: pnpmApp, clean: []string{"node_modules"},
			learnFlags: []string{"--runs", "2", "--between", `rm -rf node_modules "$HOME/.local/share/pnpm/store"`}},
			edit: "index.js", line: "\nconsole.log(\"edited\");\n", check: []string{"node", "index.js"}},
		// cargo doc: the second run removes the output of the first (target/doc's files).
		{everyday: everyday{name: "cargo-doc", need: []string{"cargo"}, fixture: "crate", argv: []string{"cargo", "doc", "--offline"}, state: []string{"target"}, timing: cargoTiming, notAs: cargoUnreachable},
			edit: "src/main.rs", line: "\n/// edited\npub fn edited() {}\n"},
	}
}

// jsPerturbations are the next runs a developer makes of a JS workflow: unchanged, after an
// edit, in a fresh clone, as another user (a HOME of their own), and in a CI-like environment
// (ciLike).
var jsPerturbations = []perturbation{
	{name: "unchanged", stdout: "pipe", stdin: "null"},
	{name: "edited", stdout: "pipe", stdin: "null"},
	{name: "another-cwd", stdout: "pipe", stdin: "null", place: "cwd"},
	{name: "ci-like", stdout: "file", stdin: "null", place: "home"},
	// Another user, with a HOME of their own.
	{name: "ordinary-user", stdout: "pipe", stdin: "null", place: "home", wrap: []string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"}},
}

// ciLike is the wrapper of the ci-like perturbation: a runner's clean environment (env -i:
// PATH, the run's fresh HOME with cold caches, no TMPDIR, CI=true) and a session of its own.
// RUSTUP_HOME: the rustup proxies are on PATH, their toolchains not in the fresh HOME.
var ciLike = []string{"sh", "-c", `exec env -i PATH="$PATH" HOME="$HOME" RUSTUP_HOME="$RUSTUP_HOME" CI=true setsid -w "$@"`, "sh"}

// TestJSWorkflows (issue 24, "How it is checked", npm): tsc, an esbuild bundle, vitest run,
// pnpm install --offline from the store and cargo doc, each learned once with output to a
// file, then enforced unchanged, after an edit, in a fresh clone, in a CI-like environment and
// as another user: zero denials and the output of the same run unsandboxed; drift under each
// (but the other user's: eBPF needs root) finds nothing that widens the profile.
func TestJSWorkflows(t *testing.T) {
	testutil.RequireRoot(t)
	for _, w := range jsWorkflows() {
		t.Run(w.name, func(t *testing.T) { learnThenPerturb(t, w.everyday, jsPerturbations, w.hooks()) })
	}
}

// hooks are learnThenPerturb's hooks of a JS workflow: its check program's output, its edit
// before the edited runs, the other user's tree and the CI-like wrapper.
func (w jsWorkflow) hooks() perturbHooks {
	return perturbHooks{
		output: w.output,
		before: func(t *testing.T, b *testutil.Box, pt perturbation) {
			if pt.name == "edited" && w.edit != "" {
				f, err := os.OpenFile(filepath.Join(b.Work, w.edit), os.O_APPEND|os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := f.WriteString(w.line); err != nil {
					t.Fatal(err)
				}
				f.Close()
			}
			if pt.name == "ordinary-user" {
				chownTree(t, b.Tmp, 65534) // the work tree and HOME too, as every workflow's
			}
		},
		wrap: func(b *testutil.Box, pt perturbation) []string {
			if pt.name == "ci-like" {
				return ciLike
			}
			return pt.wrap
		},
	}
}
