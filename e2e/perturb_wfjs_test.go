package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
)

// webApp copies the web project (testdata/jsworkflows/web: an index.html for vite, a build
// script, node:test tests, an eslint config) and the fixture's installed tools into b's work
// dir. npm's update check is off: it would ask the public registry on every run (a CI runner
// skips it by itself), and a test reaches only loopback.
func webApp(t *testing.T, b *testutil.Box) {
	dir := jsTools(t)
	testutil.CopyTree(t, filepath.Join(dir, "web"), b.Work)
	b.Sh(t, "cp -a "+shellQuote([]string{filepath.Join(dir, "node_modules")})+" .")
	b.Extra = append(b.Extra, "NPM_CONFIG_UPDATE_NOTIFIER=false")
}

// nodeTestTiming: node's test runner prints each test's duration.
var nodeTestTiming = regexp.MustCompile(`duration_ms:? [0-9.]+`)

// viteTiming: vite build prints how long it took.
var viteTiming = regexp.MustCompile(`built in [0-9.]+m?s`)

// cargoTestTiming: cargo test's build and the test harness's own timings.
var cargoTestTiming = regexp.MustCompile(`target\(s\) in [0-9.]+m?s|finished in [0-9.]+s|; merged doctests compilation took [0-9.]+s`)

// everydayWorkflows are issue 24's everyday Node and Rust workflows beyond TestJSWorkflows': a
// vite production build, npm test with node's own test runner, npm run build of a project
// script (which empties its output first, as vite's does), npx eslint, cargo test with a
// doctest (run from $TMPDIR; one test thread, so that they print in order), cargo run and
// cargo clippy. Each learned once, then as
// TestJSWorkflows.
func everydayWorkflows() []jsWorkflow {
	return []jsWorkflow{
		{everyday: everyday{name: "vite-build", need: []string{"node"}, argv: []string{"node_modules/.bin/vite", "build"}, setup: webApp, timing: viteTiming},
			edit: "src/greet.js", line: "\nexport const edited = 1;\n", check: []string{"ls", "dist", "dist/assets"}},
		{everyday: everyday{name: "npm-test", need: []string{"node", "npm"}, argv: []string{"npm", "test"}, setup: webApp, timing: nodeTestTiming},
			edit: "test/greet.test.js", line: "\ntest(\"edited\", () => assert.equal(1, 1));\n"},
		{everyday: everyday{name: "npm-run-build", need: []string{"node", "npm"}, argv: []string{"npm", "run", "build"}, setup: webApp},
			edit: "src/greet.js", line: "\nexport const edited = 1;\n", check: []string{"ls", "dist"}},
		{everyday: everyday{name: "npx-eslint", need: []string{"node", "npm"}, argv: []string{"npx", "eslint", "src", "test", "scripts"}, setup: webApp},
			edit: "src/main.js", line: "\nconst unused = 1;\n"},
		{everyday: everyday{name: "cargo-test", need: []string{"cargo"}, fixture: "doctest", argv: []string{"cargo", "test", "--offline", "--", "--test-threads=1"}, state: []string{"target"}, timing: cargoTestTiming, notAs: cargoUnreachable},
			edit: "src/lib.rs", line: "\n/// ```\n/// assert_eq!(doctest::edited(), 1);\n/// ```\npub fn edited() -> i32 { 1 }\n"},
		{everyday: everyday{name: "cargo-run", need: []string{"cargo"}, fixture: "crate", argv: []string{"cargo", "run", "--offline", "-q"}, state: []string{"target"}, timing: cargoTiming, notAs: cargoUnreachable},
			edit: "src/main.rs", line: "\n// edited\n"},
		{everyday: everyday{name: "cargo-clippy", need: []string{"cargo", "cargo-clippy"}, fixture: "crate", argv: []string{"cargo", "clippy", "--offline"}, state: []string{"target"}, timing: cargoTiming, notAs: cargoUnreachable},
			edit: "src/main.rs", line: "\nfn edited() -> i32 { return 1; }\n"},
	}
}

// TestEverydayWorkflows (issue 24): each of everydayWorkflows learned once with output to a
// file, then enforced unchanged, after an edit, in a fresh clone, in a CI-like environment and
// as another user: zero denials and the output of the same run unsandboxed; drift under each
// (but the other user's) finds nothing that widens the profile.
func TestEverydayWorkflows(t *testing.T) {
	testutil.RequireRoot(t)
	for _, w := range everydayWorkflows() {
		t.Run(w.name, func(t *testing.T) { learnThenPerturb(t, w.everyday, jsPerturbations, w.hooks()) })
	}
}

// TestDevServerWorkflow (issue 24 item 11): `vite` (its dev server) learned with a client
// fetching from it on loopback and stopped with Ctrl-C (SIGINT to its process group, as a
// terminal sends it) gives a complete profile; enforced as root and as an ordinary user, its
// listener is published to the host, where the same client gets what the unsandboxed server
// serves, with zero denials; drift under the same client finds nothing new.
func TestDevServerWorkflow(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTools(t, hostPath, "node", "setpriv")
	root := t.TempDir()
	b := newBox(t, root, "x", "alice", filepath.Join("src", "project"), "")
	webApp(t, b)
	openForNobody(t, root)
	port := strconv.Itoa(testutil.ServerPort(t))
	argv := []string{"node_modules/.bin/vite", "--host", "127.0.0.1", "--port", port, "--strictPort"}
	profile := filepath.Join(root, "vite-dev.yaml")

	// serve runs wrap+argv in its own session, fetches the page and a module once the server
	// answers, then stops it with Ctrl-C; it returns what it fetched, the exit code and stderr.
	// The learn's client keeps its connection open until the server is gone (a browser tab):
	// the server never sees a client close. Every other run also fetches with a client that
	// half-closes after its request, which the server answers with a shutdown of its own (the
	// serve family: a profile learned with one client holds with another).
	serve := func(t *testing.T, learn bool, wrap ...string) (string, int, string) {
		t.Helper()
		full := append(slicesClone(wrap), argv...)
		cmd := exec.Command(full[0], full[1:]...)
		cmd.Dir, cmd.Env = b.Work, b.Environ()
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		var errb strings.Builder
		cmd.Stderr = &errb
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		tr := &http.Transport{DisableKeepAlives: !learn}
		defer tr.CloseIdleConnections()
		client := &http.Client{Timeout: 10 * time.Second, Transport: tr}
		var got string
		for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline) && got == ""; time.Sleep(100 * time.Millisecond) {
			select {
			case err := <-done:
				t.Fatalf("%s ended before serving: %v\n%s", testutil.ShortArgs(full), err, errb.String())
			default:
			}
			got = fetchAll(client, fmt.Sprintf("http://127.0.0.1:%s", port), "/", "/src/greet.js")
		}
		if got != "" && !learn {
			// A client that half-closes after its request (as the published port's relay
			// passes on a client's close): the server shuts its side down in turn.
			got += halfClosedGet(t, "127.0.0.1:"+port, "/src/main.js")
		}
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
		var code int
		select {
		case err := <-done:
			code = exitCode(err)
		case <-time.After(60 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			t.Fatalf("%s did not end on SIGINT\n%s", testutil.ShortArgs(full), errb.String())
		}
		if got == "" {
			t.Fatalf("%s never served\n%s", testutil.ShortArgs(full), errb.String())
		}
		return got, code, errb.String()
	}

	_, code, stderr := serve(t, true, testutil.SysprofBin, "learn", "-p", profile, "--")
	t.Logf("learn exit %d", code)
	p, err := policy.Load(profile)
	if err != nil {
		t.Fatalf("learn wrote no profile: %v\n%s", err, stderr)
	}
	if p.Metadata.Incomplete {
		t.Errorf("the profile is incomplete after Ctrl-C, the server's normal end: %q", p.Metadata.IncompleteReasons)
	}
	want, wantCode, _ := serve(t, false)
	nobody := []string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"}
	for _, as := range []struct {
		name string
		wrap []string
	}{{"root", nil}, {"ordinary-user", nobody}} {
		t.Run(as.name, func(t *testing.T) {
			if as.wrap != nil {
				chownTree(t, root, 65534)
			}
			rep := filepath.Join(t.TempDir(), "report.json")
			openForNobody(t, filepath.Dir(rep))
			got, code, stderr := serve(t, false, append(slicesClone(as.wrap), testutil.SysprofBin, "enforce", "-p", profile, "--report", rep, "--")...)
			if got != want || code != wantCode {
				t.Errorf("enforced (exit %d) the host fetched:\n%s\nunsandboxed (exit %d):\n%s\n%s", code, got, wantCode, want, stderr)
			}
			if !strings.Contains(stderr, "published 127.0.0.1:"+port+" → sandbox") {
				t.Errorf("enforce does not say the listener is published:\n%s", stderr)
			}
			for _, d := range testutil.ReadReport(t, rep).Denials {
				t.Errorf("denial: [%s] %s by %s (parents %v): suggest %q", d.Kind, d.What, d.Exe, d.Parents, d.Suggest)
			}
		})
	}
	chownTree(t, root, 0)
	if _, code, stderr := serve(t, false, testutil.SysprofBin, "drift", "--fail-on", "low", "-p", profile, "--"); code != wantCode {
		t.Errorf("drift: exit %d, want the server's %d (a widening exits 1):\n%s", code, wantCode, stderr)
	}
}

// fetchAll GETs each path below base with c and returns status and body of each, or "" when
// any fails (the server is not up yet).
func fetchAll(c *http.Client, base string, paths ...string) string {
	var out strings.Builder
	for _, p := range paths {
		resp, err := c.Get(base + p)
		if err != nil {
			return ""
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return ""
		}
		fmt.Fprintf(&out, "--- %s %d\n%s\n", p, resp.StatusCode, body)
	}
	return out.String()
}

// halfClosedGet sends one GET for path to addr, closes its sending side and returns the status
// line and body of the answer.
func halfClosedGet(t *testing.T, addr, path string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatalf("connect %s: %v", addr, err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", path, addr); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatalf("half-close: %v", err)
	}
	resp, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("GET %s (half-closed): %v", path, err)
	}
	status, rest, _ := strings.Cut(string(resp), "\r\n")
	_, body, _ := strings.Cut(rest, "\r\n\r\n")
	return fmt.Sprintf("--- %s (half-closed) %s\n%s\n", path, status, body)
}

// exitCode is a finished command's exit status as a shell gives it (128+N for signal N).
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return -1
}

// TestNodeMkdtempAtATerminal (issue 24): node making a temp directory with fs.mkdtempSync,
// learned with its output to a file, then run at a terminal as root and as an ordinary user
// (node reopens its terminal by name there) and drifted at the terminal: zero denials, the
// output of the same run unsandboxed, nothing that widens.
func TestNodeMkdtempAtATerminal(t *testing.T) {
	testutil.RequireRoot(t)
	nodeMkdtemp := everyday{name: "node-mkdtemp", need: []string{"node"}, argv: []string{"node", "mk.js"}, setup: func(t *testing.T, b *testutil.Box) {
		testutil.WriteFile(t, filepath.Join(b.Work, "mk.js"), `const fs = require("fs"), os = require("os"), path = require("path");
const d = fs.mkdtempSync(path.join(os.tmpdir(), "mk-"));
fs.writeFileSync(path.join(d, "f"), "x");
console.log("ok", fs.readFileSync(path.join(d, "f"), "utf8"), process.stdout.isTTY === true);
fs.rmSync(d, { recursive: true });
`, 0o644)
	}}
	learnThenPerturb(t, nodeMkdtemp, []perturbation{
		{name: "tty", stdout: "tty", stdin: "tty"},
		{name: "ordinary-user", stdout: "tty", stdin: "tty", wrap: []string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"}},
	}, perturbHooks{before: func(t *testing.T, b *testutil.Box, pt perturbation) {
		if pt.name == "ordinary-user" {
			chownTree(t, b.Tmp, 65534)
		}
	}})
}
