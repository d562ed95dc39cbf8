package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
)

// nextApp copies the next project (testdata/nextdev/site: an app router page, an API route
// importing lib/greet.js, public/hello.txt) and the fixture's installed next, react and
// react-dom into b's work dir (a checkout followed by npm ci).
func nextApp(t *testing.T, b *testutil.Box) {
	dir := testutil.Testdata("nextdev")
	_, err := os.Stat(filepath.Join(dir, "node_modules", ".bin", "next"))
	testutil.RequireNoErr(t, "the next fixture's dependencies (npm ci --prefix testdata/nextdev, as .ci/run does)", err)
	testutil.CopyTree(t, filepath.Join(dir, "site"), b.Work)
	testutil.CopyTree(t, filepath.Join(dir, "package.json"), filepath.Join(b.Work, "package.json"))
	b.Sh(t, "cp -a "+shellQuote([]string{filepath.Join(dir, "node_modules")})+" .")
}

// devServerWorkflows are issue 24's dev servers (item 11) as workflows: each learned with a
// client on the host and stopped with Ctrl-C, then run unchanged, after an edit of what it
// serves, in a fresh clone, CI-like (a fresh HOME, env -i, setsid, output to a file) and as
// another user, the client reaching the listener published from the sandbox. next dev
// compiles its API route on the first request (turbopack, a native binary, worker threads);
// vite serves a transformed module. TestDevServerWorkflow runs vite with a kept-alive and a
// half-closing client.
func devServerWorkflows(t *testing.T) []wfWorkflow {
	nextPort, vitePort := testutil.ServerPort(t), testutil.ServerPort(t)
	// Telemetry off: it would post to its service on exit (a test reaches only loopback), as
	// a CI runner's configuration sets it.
	next := []string{"env", "NEXT_TELEMETRY_DISABLED=1", "node_modules/.bin/next", "dev", "-H", "127.0.0.1", "-p", strconv.Itoa(nextPort)}
	return []wfWorkflow{
		{everyday: everyday{name: "next-dev", need: []string{"node", "curl"}, argv: next, setup: nextApp, timing: anyTiming},
			edit:  writeAs("lib/greet.js", "export function greet(name) {\n  return `edited, ${name}`;\n}\n"),
			serve: nextPort, fetch: []string{"/api/hello", "/hello.txt"}},
		{everyday: everyday{name: "vite-dev", need: []string{"node", "curl"}, setup: webApp, timing: viteDevTiming,
			argv: []string{"node_modules/.bin/vite", "--host", "127.0.0.1", "--port", strconv.Itoa(vitePort), "--strictPort", "--clearScreen", "false"}},
			edit:  appendAs("src/greet.js", "\nexport const edited = 1;\n"),
			serve: vitePort, fetch: []string{"/src/greet.js", "/index.html"},
			// Its dependency optimizer runs in the background after start and writes its
			// cache a moment later: a learn stopped before would never see the mkdir.
			settled: "node_modules/.vite/deps/_metadata.json"},
	}
}

// viteDevTiming: vite says how long it took to start ("ready in 851 ms").
var viteDevTiming = regexp.MustCompile(`ready in [0-9.]+ m?s`)

// TestWorkflowsDevServers (issue 24 item 11): next dev and vite dev, each learned once with a
// client on the host, then enforced unchanged, after an edit, in a fresh clone, CI-like and
// as another user: the client gets what the unsandboxed server serves, zero denials; drift
// (unchanged, CI-like) finds nothing wider.
func TestWorkflowsDevServers(t *testing.T) {
	testutil.RequireRoot(t)
	for _, w := range devServerWorkflows(t) {
		t.Run(w.name, func(t *testing.T) { w.learnThenPerturb(t) })
	}
}
