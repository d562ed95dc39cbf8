package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
)

// The supply-chain suite (issue 23 items 3-8): a package's install- or build-time step,
// started the way each ecosystem starts it (npm's postinstall from a tarball, an sdist's
// setup.py under pip, a .pth in the user's site-packages, cargo's build.rs, a Makefile step, a
// git hook of a cloned repository, a pre-commit hook, go generate), runs one payload
// (testdata/attacks/supplychain/payload.py). The profile is learned with the payload dormant,
// as a real attack is; then it is enforced with every attack of supplyRows live, as root and
// as an ordinary user. Each row must be blocked (the payload's line, the host's files and the
// attacker's sinks say so) and on the record: in the JSON report (a denial, a hidden read or a
// held change naming it) and in sysprof's stderr; as an ordinary user a kind the kernel refuses
// without a record may instead be listed as not observable.
//
// Everything runs in a network namespace of the test's own (testutil's loopback rule): the
// registry (registry.test, from a bind-mounted hosts file), the resolver's address, a UDP sink
// and 600 unix sockets live there, and one more unix socket in a namespace of its own.

// supplyRow is one attack of the payload.
type supplyRow struct {
	action string // the payload's argument (a line of SUPPLY_ARM)
	leak   string // the payload's line holds this when the attack got through ("" : none)
	sink   string // the sinks' log holds this when it got through
	host   string // a host file ($HOME/…, $WORKDIR/…) that must not change
	// kind and key: the record names it (a report.Kind, or "hidden"; key a path suffix, an
	// endpoint's text or a syscall).
	kind report.Kind
	key  string
	// unobservable: as an ordinary user, the report's entry that covers it (a prefix; A|B either).
	unobservable string
}

const (
	forgedHook = `\x1b[2K\x1b[1Asysprof: 0 operation(s) denied\x1b[8m`
	bidiHook   = `ok\u202ekcab\u2066-\u2069.sh\r`
	fileDenied = "file denials"
	unixUnseen = "connects to host unix sockets"
)

var supplyRows = []supplyRow{
	{action: "read=$HOME/.ssh/id_ed25519", leak: "LEAKED", kind: "hidden", key: ".ssh/id_ed25519", unobservable: fileDenied},
	{action: "read=$HOME/.npmrc", leak: "LEAKED", kind: "hidden", key: ".npmrc", unobservable: fileDenied},
	{action: "read=$HOME/.aws/credentials", leak: "LEAKED", kind: "hidden", key: ".aws/credentials", unobservable: fileDenied},
	{action: "read=$WORKDIR/.env", leak: "LEAKED", kind: "hidden", key: "/.env", unobservable: fileDenied},
	{action: "read=$WORKDIR/.git/config", leak: "LEAKED", kind: "hidden", key: ".git/config", unobservable: fileDenied},
	{action: "write=$HOME/.bashrc", host: "$HOME/.bashrc", kind: report.KindFile, key: ".bashrc", unobservable: fileDenied},
	{action: "write=$WORKDIR/.git/hooks/pre-push", host: "$WORKDIR/.git/hooks/pre-push", kind: report.KindFile, key: ".git/hooks/pre-push", unobservable: fileDenied},
	{action: "write=$WORKDIR/.github/workflows/ci.yml", host: "$WORKDIR/.github/workflows/ci.yml", kind: report.KindFile, key: ".github", unobservable: fileDenied},
	{action: "write=$HOME/.config/autostart/helper.desktop", host: "$HOME/.config/autostart/helper.desktop", kind: report.KindFile, key: ".config/autostart", unobservable: fileDenied},
	{action: "write=$USERSITE/zz-helper.pth", host: "$USERSITE/zz-helper.pth", kind: report.KindFile, key: "zz-helper.pth", unobservable: fileDenied},
	{action: "write=$WORKDIR/.git/hooks/" + forgedHook, host: "$WORKDIR/.git/hooks/" + forgedHook, kind: report.KindFile, key: "1Asysprof: 0 operation(s) denied", unobservable: fileDenied},
	{action: "write=$WORKDIR/.git/hooks/" + bidiHook, host: "$WORKDIR/.git/hooks/" + bidiHook, kind: report.KindFile, key: "kcab", unobservable: fileDenied},
	{action: "resolve=aws-key-fake.exfil.evil.test", leak: "ANSWERED", kind: report.KindNetwork, key: "exfil.evil.test"},
	{action: "dns-udp=10.78.0.53", sink: "dns-udp ", kind: report.KindNetwork, key: "10.78.0.53:53"},
	{action: "dns-tcp=10.78.0.53", sink: "dns-tcp", kind: report.KindNetwork, key: "10.78.0.53:53", unobservable: "network denials"},
	{action: "udp=10.78.0.9:9999", sink: "udp ", kind: report.KindNetwork, key: "10.78.0.9:9999"},
	{action: "http=registry.test:8080,te-cl", sink: "evil-te-cl.test", kind: report.KindNetwork, key: "both Transfer-Encoding and Content-Length"},
	{action: "http=registry.test:8080,obs-fold", sink: "evil-obs-fold.test", kind: report.KindNetwork, key: "folded"},
	{action: "http=registry.test:8080,bare-lf", sink: "evil-bare-lf.test", kind: report.KindNetwork, key: "ended by a bare LF"},
	{action: "http=registry.test:8080,chunked-second", sink: "evil-chunked.test", kind: report.KindNetwork, key: "carries what parses as a request line"},
	{action: "unix=rel:$SOCKDIR/s7", sink: "unix-s7-", kind: report.KindNetwork, key: "/s7", unobservable: unixUnseen},
	{action: "unix=$SOCKDIR/s599", sink: "unix-s599-", kind: report.KindNetwork, key: "/s599", unobservable: unixUnseen},
	{action: "unix=$NETNSSOCK", sink: "unix-netns", kind: report.KindNetwork, key: "netns.sock", unobservable: unixUnseen},
	{action: "chmod-suid=$OUT", leak: ": ok", kind: report.KindSyscall, key: "chmod"},
	{action: "creat-suid=$OUT.suid", leak: ": ok", kind: report.KindSyscall, key: "open"},
	{action: "io_uring", leak: ": ok", kind: report.KindSyscall, key: "io_uring_setup"},
}

// supplyVector is one way a package's code comes to run.
type supplyVector struct {
	name    string
	fixture string // testdata/attacks/supplychain/FIXTURE copied into the work tree ("": none)
	need    []string
	setup   func(t *testing.T, sc *supplyEnv, b *testutil.Box) // unsandboxed, before learn
	argv    []string
	// learnFlags: git's nature is to write .git (pending otherwise).
	learnFlags []string
	// again readies the tree for the next run (unsandboxed): the step runs again.
	again string
	// rootOnly: why the tool cannot run as an ordinary user here (its attacks run as root).
	rootOnly string
	// closed: enforce closes this way in itself (the payload never runs): the record names
	// the hidden read of this file instead of the rows.
	closed string
}

var supplyVectors = []supplyVector{
	{name: "make", fixture: "make", need: []string{"make"}, argv: []string{"make"}, again: "rm -rf out"},
	{name: "npm-postinstall", fixture: "npm", need: []string{"npm", "node"},
		setup: func(t *testing.T, sc *supplyEnv, b *testutil.Box) {
			helper := filepath.Join(b.Work, "helper")
			for _, f := range []string{"payload.py", "input.txt"} {
				copyFile(t, filepath.Join(b.Work, "tools", f), filepath.Join(helper, f), 0o644)
			}
			b.Sh(t, "cd helper && npm pack --silent >/dev/null && mv helper-1.0.0.tgz .. && cd .. && rm -rf helper")
		},
		argv:  []string{"npm", "install", "--offline", "--no-audit", "--no-fund", "--foreground-scripts"},
		again: "rm -rf node_modules package-lock.json"},
	{name: "pip-setup.py", fixture: "pysdist", need: []string{"pip3"},
		argv:  []string{"pip3", "install", "-v", "--no-index", "--no-build-isolation", "--no-deps", "--no-cache-dir", "--target", "vendor", "."},
		again: "rm -rf vendor build *.egg-info"},
	{name: "pth", setup: func(t *testing.T, sc *supplyEnv, b *testutil.Box) {
		site := strings.TrimSpace(b.Run(t, "python3", "-c", "import site; print(site.getusersitepackages())").Stdout)
		testutil.WriteFile(t, filepath.Join(site, "helper.pth"), "import runpy; runpy.run_path("+fmt.Sprintf("%q", filepath.Join(b.Work, "tools", "payload.py"))+")\n", 0o644)
	}, argv: []string{"python3", "-c", "print('the tool ran')"}},
	{name: "cargo-build.rs", fixture: "cargo", need: []string{"cargo"}, argv: []string{"cargo", "build", "--offline", "-vv"},
		rootOnly: "rustup's toolchains live in root's home, which nobody cannot reach (the payload is the same as under every other vector)"},
	{name: "git-hook", need: []string{"git"},
		setup: func(t *testing.T, sc *supplyEnv, b *testutil.Box) {
			copyFile(t, testutil.Testdata("attacks", "supplychain", "githook", "pre-commit"), filepath.Join(b.Work, ".git", "hooks", "pre-commit"), 0o755)
		},
		argv: []string{"git", "commit", "-q", "--allow-empty", "-m", "change"}, learnFlags: []string{"--accept-risky"}},
	{name: "pre-commit", fixture: "precommit", need: []string{"pre-commit", "git"},
		setup: func(t *testing.T, sc *supplyEnv, b *testutil.Box) {
			b.Sh(t, "git add -A && git -c user.email=t@t -c user.name=t commit -q -m config")
		},
		argv: []string{"pre-commit", "run", "--all-files"}},
	{name: "go-generate", fixture: "gogen", need: []string{"go"}, argv: []string{"go", "generate", "./..."}},
}

// supplyEnv is the suite's network namespace and its sinks.
type supplyEnv struct {
	root, log, sockDir, netnsSock string
	holder                        int // the namespace holder's pid
}

// startSupplyEnv makes the namespace (loopback with the registry's, resolver's and sink's
// addresses; the hosts file naming registry.test) and starts the sinks in it.
func startSupplyEnv(t *testing.T, root string) *supplyEnv {
	t.Helper()
	sc := &supplyEnv{root: root, log: filepath.Join(root, "sinks.log"), sockDir: filepath.Join(root, "socks"), netnsSock: filepath.Join(root, "netns.sock")}
	os.MkdirAll(sc.sockDir, 0o755)
	testutil.WriteFile(t, filepath.Join(root, "hosts"), "127.0.0.1 localhost\n10.78.0.1 registry.test\n", 0o644)
	sinks := testutil.Testdata("attacks", "supplychain", "sinks.py")
	script := fmt.Sprintf(`set -e
ip link set lo up
for a in 10.78.0.1 10.78.0.9 10.78.0.53; do ip addr add $a/24 dev lo; done
mount --bind %[1]s/hosts /etc/hosts
/usr/bin/python3 %[2]s %[3]s net %[4]s 600 &
unshare -n /usr/bin/python3 %[2]s %[3]s unix %[5]s &
i=0; until [ -e %[3]s.ready-net ] && [ -e %[3]s.ready-unix ] || [ $i -gt 200 ]; do sleep 0.05; i=$((i+1)); done
echo ready
exec sleep 3600
`, root, sinks, sc.log, sc.sockDir, sc.netnsSock)
	cmd := exec.Command("unshare", "-n", "-m", "-u", "--propagation", "private", "sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(testutil.NotAvailable("unshare: %v", err))
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	buf := make([]byte, 6)
	if n, _ := out.Read(buf); string(buf[:n]) != "ready\n" {
		t.Fatalf("the suite's namespace did not start (%q)", buf[:n])
	}
	for _, f := range []string{".ready-net", ".ready-unix"} {
		if _, err := os.Stat(sc.log + f); err != nil {
			t.Fatalf("the sinks did not start: %v", err)
		}
	}
	sc.holder = cmd.Process.Pid
	return sc
}

// run runs argv (with wrap before it) in the namespace, in b with extra variables.
func (sc *supplyEnv) run(t *testing.T, b *testutil.Box, wrap []string, extra []string, argv ...string) testutil.Result {
	t.Helper()
	// setns into a mount namespace moves the cwd to its root: cd again inside.
	full := slices.Concat([]string{"nsenter", "-t", fmt.Sprint(sc.holder), "-n", "-m", "--", "sh", "-c", `cd "$0" && exec "$@"`, b.Work}, wrap, argv)
	return testutil.Run(t, b.Work, append(b.Environ(), extra...), full...)
}

// sinkLog is what the sinks received so far.
func (sc *supplyEnv) sinkLog(t *testing.T) string {
	data, err := os.ReadFile(sc.log)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// plantSecrets writes the fake secrets the payload reaches for, and the host files it writes.
func plantSecrets(t *testing.T, b *testutil.Box) {
	t.Helper()
	for f, content := range map[string]string{
		".ssh/id_ed25519": "FAKE-ssh-key\n",
		// A token's prefix (npm_) is kept in a brokered stand-in: the marker follows it.
		".npmrc":           "//registry.test/:_authToken=npm_FAKEnpmtoken0123456789abcdef\n",
		".aws/credentials": "[default]\naws_secret_access_key = FAKE-aws\n",
		".bashrc":          "# rc\n",
	} {
		testutil.WriteFile(t, filepath.Join(b.Home, f), content, 0o600)
	}
	testutil.WriteFile(t, filepath.Join(b.Work, ".env"), "API_TOKEN=FAKE-env\n", 0o600)
	// What a user's home has: a config directory, a user site-packages.
	site := strings.TrimSpace(b.Run(t, "python3", "-c", "import site; print(site.getusersitepackages())").Stdout)
	for _, d := range []string{filepath.Join(b.Home, ".config"), site} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	b.Sh(t, `git init -q . && git config user.email dev@example.test && git config user.name dev && git config http.https://github.com/.extraheader "AUTHORIZATION: basic RkFLRWdpdHRva2Vu-FAKE"`)
}

// hostState reads the row's host files (missing: "").
func hostState(b *testutil.Box, rows []supplyRow, expand func(string) string) map[string]string {
	s := map[string]string{}
	for _, r := range rows {
		if r.host == "" {
			continue
		}
		p := expand(r.host)
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			var names []string
			filepath.Walk(p, func(q string, _ os.FileInfo, _ error) error { names = append(names, q); return nil })
			s[r.host] = strings.Join(names, "\n")
			continue
		}
		data, _ := os.ReadFile(p)
		s[r.host] = string(data)
	}
	return s
}

// unescapeAction decodes \xHH and \uHHHH as the payload does.
func unescapeAction(s string) string {
	var o strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && s[i+1] == 'x' {
			var v int
			fmt.Sscanf(s[i+2:i+4], "%02x", &v)
			o.WriteByte(byte(v))
			i += 3
		} else if s[i] == '\\' && i+5 < len(s) && s[i+1] == 'u' {
			var v int
			fmt.Sscanf(s[i+2:i+6], "%04x", &v)
			o.WriteRune(rune(v))
			i += 5
		} else if s[i] == '\\' && i+1 < len(s) && s[i+1] == 'r' {
			o.WriteByte('\r')
			i++
		} else {
			o.WriteByte(s[i])
		}
	}
	return o.String()
}

// supplyRecord finds the report's entry for row: a denial, a hidden read or a held change that
// names it. It returns the text sysprof printed for it on stderr. A key A|B is either.
func supplyRecord(rp *report.Report, row supplyRow) (string, bool) {
	if alts := strings.Split(row.key, "|"); len(alts) > 1 {
		for _, k := range alts {
			r := row
			r.key = k
			if what, ok := supplyRecord(rp, r); ok {
				return what, true
			}
		}
		return "", false
	}
	key := unescapeAction(row.key)
	record := slices.Clone(rp.Denials)
	if rp.Changes != nil {
		for _, h := range rp.Changes.Held {
			if d, ok := h.Denial(rp.Finished); ok && h.Class == "dangerous" {
				d.What = h.Path // what stderr's list of held changes names
				record = append(record, d)
			}
		}
	}
	// A secret the command never got (a variable enforce removed) is on the record as the
	// variables removed (no syscall says the command looked for it).
	if row.kind == "env" && slices.Contains(rp.EnvRemoved, key) {
		return rp.EnvNote(), true
	}
	if row.kind == "held" && rp.Changes != nil {
		for _, h := range rp.Changes.Held {
			if strings.HasSuffix(h.Path, key) && h.State == report.ChangeHeld {
				return h.Path, true
			}
		}
	}
	// A write to a hidden or masked secret (a masked .git/config) is on the record as the
	// hidden file's attempt ("tried to write ...: hidden"), as a read is.
	if row.kind == "hidden" || row.kind == report.KindFile {
		for _, h := range rp.Hidden {
			if strings.HasSuffix(h.Path, key) {
				return h.What, true
			}
		}
	}
	for _, d := range record {
		if d.Allowed {
			continue
		}
		switch {
		case row.kind == report.KindSyscall && d.Kind == report.KindSyscall && strings.Contains(d.Syscall, key):
		case row.kind == report.KindNetwork && d.Kind == report.KindNetwork && (strings.Contains(d.Endpoint, key) || strings.Contains(d.What, key)):
		case (row.kind == report.KindFile || row.kind == "hidden") && d.Kind == report.KindFile && strings.Contains(d.Path, key):
		case row.kind == report.KindFile && strings.Contains(d.What, key): // a mkdir or open the filter refused
		default:
			continue
		}
		return d.What, true
	}
	return "", false
}

// sysprofLines is stderr without the payload's own lines.
func sysprofLines(stderr string) string {
	var keep []string
	for _, l := range strings.Split(stderr, "\n") {
		if !strings.Contains(l, "SC ") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

func TestSupplyChainBlockedAndRecorded(t *testing.T) {
	runSupplySuite(t, supplyVectors, supplyRows)
}

// supplyExtra is what a round adds to runSupplySuite: setup of each box (after its own), the
// variables of the user's session (learn and enforce alike) and a check of each enforced run.
type supplyExtra struct {
	setup func(t *testing.T, sc *supplyEnv, b *testutil.Box)
	env   func(sc *supplyEnv, b *testutil.Box) []string
	check func(t *testing.T, b *testutil.Box, r testutil.Result, rep string)
}

// runSupplySuite learns each vector dormant and enforces it with every row live, as root and
// as an ordinary user, in the suite's network namespace.
func runSupplySuite(t *testing.T, vectors []supplyVector, rows []supplyRow, extras ...supplyExtra) {
	testutil.RequireRoot(t)
	testutil.RequireTools(t, hostPath, "unshare", "nsenter", "ip", "setpriv", "python3", "git")
	root, err := os.MkdirTemp("/var/cache", "sysprof-e2e-supply-")
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("SYSPROF_KEEP") == "" {
		t.Cleanup(func() { os.RemoveAll(root) })
	}
	os.Chmod(root, 0o755)
	sc := startSupplyEnv(t, root)
	var arm []string
	for _, r := range rows {
		arm = append(arm, strings.NewReplacer("$SOCKDIR", sc.sockDir, "$NETNSSOCK", sc.netnsSock).Replace(r.action))
	}
	for _, v := range vectors {
		t.Run(v.name, func(t *testing.T) {
			testutil.RequireTools(t, hostPath, v.need...)
			start := time.Now()
			b := newBox(t, root, v.name, "dev", "work", "")
			if v.fixture != "" {
				testutil.CopyTree(t, testutil.Testdata("attacks", "supplychain", v.fixture), b.Work)
			}
			for _, f := range []string{"payload.py", "input.txt"} {
				copyFile(t, testutil.Testdata("attacks", "supplychain", f), filepath.Join(b.Work, "tools", f), 0o644)
			}
			plantSecrets(t, b)
			if v.setup != nil {
				v.setup(t, sc, b)
			}
			b.Extra = append(b.Extra, "SUPPLY_WORK="+b.Work, "SUPPLY_REGISTRY=registry.test:8080")
			for _, x := range extras {
				if x.setup != nil {
					x.setup(t, sc, b)
				}
				if x.env != nil {
					b.Extra = append(b.Extra, x.env(sc, b)...)
				}
			}
			site := strings.TrimSpace(b.Run(t, "python3", "-c", "import site; print(site.getusersitepackages())").Stdout)
			expand := func(s string) string {
				return strings.NewReplacer("$HOME", b.Home, "$WORKDIR", b.Work, "$USERSITE", site).Replace(unescapeAction(s))
			}
			profile := filepath.Join(root, v.name+".yaml")
			r := sc.run(t, b, nil, nil, slices.Concat([]string{testutil.SysprofBin, "learn"}, v.learnFlags, []string{"-p", profile, "--"}, v.argv)...)
			testutil.MustCode(t, "learn the dormant package", r, 0)
			openForNobody(t, filepath.Join(root, v.name))
			os.Chmod(profile, 0o644)
			for _, as := range asUsers {
				if as.wrap != nil && v.rootOnly != "" {
					t.Logf("%s: not run as an ordinary user: %s", v.name, v.rootOnly)
					continue
				}
				t.Run(as.name, func(t *testing.T) {
					if as.wrap != nil {
						chownTree(t, b.Work, 65534)
						chownTree(t, b.Home, 65534)
					}
					if v.again != "" {
						b.Sh(t, v.again)
					}
					before := hostState(b, rows, expand)
					logBefore := len(sc.sinkLog(t))
					rep := filepath.Join(root, v.name, as.name+".json")
					extra := []string{"SUPPLY_ARM=" + strings.Join(arm, "\n"), "SUPPLY_RUN=" + as.name}
					r := sc.run(t, b, as.wrap, extra, slices.Concat([]string{testutil.SysprofBin, "enforce", "-p", profile, "--report", rep, "--"}, v.argv)...)
					if v.closed != "" {
						checkClosedWay(t, r, v.closed, rep, sc.sinkLog(t)[logBefore:], before, hostState(b, rows, expand), as.wrap != nil)
						return
					}
					checkSupplyRun(t, b, r, rows, arm, rep, sc.sinkLog(t)[logBefore:], before, hostState(b, rows, expand), as.wrap != nil)
					for _, x := range extras {
						if x.check != nil {
							x.check(t, b, r, rep)
						}
					}
					if v.name == "make" && as.wrap == nil && slices.ContainsFunc(rows, func(r supplyRow) bool { return strings.Contains(r.action, forgedHook) }) {
						b.Sh(t, v.again)
						checkForgedOutputs(t, sc, b, rep, profile, extra, v.argv)
					}
				})
			}
			t.Logf("%s: %s", v.name, time.Since(start).Round(time.Millisecond))
		})
	}
}

// checkSupplyRun holds one enforced run to every row: blocked, and on the record.
func checkSupplyRun(t *testing.T, b *testutil.Box, r testutil.Result, rows []supplyRow, arm []string, rep, sinks string, before, after map[string]string, ordinary bool) {
	t.Helper()
	rp := testutil.ReadReport(t, rep)
	own := sysprofLines(r.Stderr)
	if rawControl(strings.ReplaceAll(own, "\r\n", "\n")) {
		t.Errorf("sysprof's stderr holds raw control or bidi characters:\n%q", own)
	}
	for _, d := range rp.Denials {
		if slices.ContainsFunc(d.Parents, func(p string) bool { return strings.Contains(p, "sysprof-init") || p == testutil.SysprofBin }) {
			t.Errorf("a denial's parents name sysprof's own init stage: %s", testutil.DenialString(d))
		}
	}
	for i, row := range rows {
		line := "(no line)"
		// pre-commit and pip print a hook's or a build's output on stdout.
		for _, l := range strings.Split(r.Stdout+"\n"+r.Stderr, "\n") {
			if i := strings.Index(l, "SC "+arm[i]+": "); i >= 0 {
				line = l[i:]
			}
		}
		if line == "(no line)" {
			// The payload may not have reached it (the step refused earlier): say so.
			t.Errorf("%s: the payload printed no line for it", row.action)
		}
		switch {
		case row.leak != "" && strings.Contains(line, row.leak):
			t.Errorf("%s: NOT BLOCKED: %s", row.action, line)
		case row.sink != "" && strings.Contains(sinks, row.sink):
			t.Errorf("%s: NOT BLOCKED: the sinks received %q", row.action, sinks)
		case row.host != "" && before[row.host] != after[row.host]:
			t.Errorf("%s: NOT BLOCKED: %s changed on the host: %q", row.action, row.host, after[row.host])
		}
		what, ok := supplyRecord(rp, row)
		switch {
		case ok:
			if !strings.Contains(own, report.Printable(what)) {
				t.Errorf("%s: in the report (%q) but not on sysprof's stderr", row.action, what)
			}
		case ordinary && row.unobservable != "" && slices.ContainsFunc(rp.Unobservable, func(u string) bool {
			return slices.ContainsFunc(strings.Split(row.unobservable, "|"), func(p string) bool { return strings.HasPrefix(u, p) })
		}):
		default:
			t.Errorf("%s: NOT ON THE RECORD (payload: %s)", row.action, line)
		}
	}
	if t.Failed() {
		var lines []string
		for _, d := range rp.Denials {
			lines = append(lines, "  "+testutil.DenialString(d))
		}
		for _, h := range rp.Hidden {
			lines = append(lines, "  hidden: "+h.What)
		}
		if rp.Changes != nil {
			for _, h := range rp.Changes.Held {
				lines = append(lines, fmt.Sprintf("  held: %s %s %s", h.Path, h.Class, h.Reason))
			}
		}
		t.Logf("exit %d\nstderr:\n%s\nreport:\n%s\nunobservable: %q", r.Code, r.Stderr, strings.Join(lines, "\n"), rp.Unobservable)
	}
}

// checkClosedWay holds a run whose way in enforce closed: the payload printed nothing, nothing
// reached the sinks or changed on the host, and the record names the hidden read of file.
func checkClosedWay(t *testing.T, r testutil.Result, file, rep, sinks string, before, after map[string]string, ordinary bool) {
	t.Helper()
	if strings.Contains(r.Stdout+r.Stderr, "SC ") {
		t.Errorf("the payload ran:\n%s", r)
	}
	if strings.TrimSpace(sinks) != "" {
		t.Errorf("the sinks received %q", sinks)
	}
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s changed on the host: %q", k, after[k])
		}
	}
	rp := testutil.ReadReport(t, rep)
	seen := slices.ContainsFunc(rp.Hidden, func(h report.HiddenRead) bool { return strings.HasSuffix(h.Path, file) }) ||
		slices.ContainsFunc(rp.Denials, func(d report.Denial) bool { return strings.HasSuffix(d.Path, file) })
	if !seen && !(ordinary && slices.ContainsFunc(rp.Unobservable, func(u string) bool { return strings.HasPrefix(u, fileDenied) })) {
		t.Errorf("the hidden %s is not on the record:\n%s", file, r.Stderr)
	}
}

// checkForgedOutputs holds the other human-facing outputs of the run to the forged hook names
// (issue 23 item 6): `changes` (table and markdown) and the HTML picture of the run name them
// escaped; none of them, nor drift's markdown of the armed step, holds a raw control or bidi
// character.
func checkForgedOutputs(t *testing.T, sc *supplyEnv, b *testutil.Box, rep, profile string, extra, argv []string) {
	t.Helper()
	rp := testutil.ReadReport(t, rep)
	if rp.Changes == nil || rp.Changes.Run == "" {
		t.Fatalf("the run held no changeset (the forged hooks): %+v", rp.Changes)
	}
	html := filepath.Join(filepath.Dir(rep), "run.html")
	outputs := map[string]func() string{
		"changes diff": func() string { return b.Sysprof(t, "changes", "diff", rp.Changes.Run).Stdout },
		"changes diff --format markdown": func() string {
			return b.Sysprof(t, "changes", "diff", "--format", "markdown", rp.Changes.Run).Stdout
		},
		"show --tree --html --report": func() string {
			testutil.MustCode(t, "show --html", b.Sysprof(t, "show", "-p", profile, "--tree", "--html", html, "--report", rep), 0)
			data, err := os.ReadFile(html)
			if err != nil {
				t.Fatal(err)
			}
			return string(data)
		},
		"drift --format markdown": func() string {
			return sc.run(t, b, nil, extra, slices.Concat([]string{testutil.SysprofBin, "drift", "-p", profile, "--format", "markdown", "--"}, argv)...).Stdout
		},
	}
	for name, out := range outputs {
		got := out()
		if rawControl(got) {
			t.Errorf("%s holds raw control or bidi characters:\n%q", name, got)
		}
		// drift's learn rolls the hook files up into .git/hooks (pending): no names to show.
		if name != "drift --format markdown" && (!strings.Contains(got, "1Asysprof: 0 operation(s) denied") || !strings.Contains(got, `\u202e`)) {
			t.Errorf("%s does not name the forged hooks (escaped):\n%s", name, got)
		}
	}
}

// copyFile copies src to dst (its directory made) with mode.
func copyFile(t *testing.T, src, dst string, mode os.FileMode) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	testutil.WriteFile(t, dst, string(data), mode)
}

// TestSupplyChainPoisonedLearn (issue 23 item 4): the payload is live at learn already. The
// persistence and secret allowances it made are written pending (the .pth's site-packages
// too), enforce with the payload live denies them (the host's files stay as they were), and
// refine --only accepts one.
func TestSupplyChainPoisonedLearn(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTools(t, hostPath, "unshare", "nsenter", "ip", "python3", "git", "make")
	root, sc, b, site := poisonedMakeBox(t, "sysprof-e2e-poisoned-")
	persist := []string{"write=$HOME/.bashrc", "write=$WORKDIR/.git/hooks/pre-push", "write=$WORKDIR/.github/workflows/ci.yml",
		"write=$HOME/.config/autostart/helper.desktop", "write=$USERSITE/zz-helper.pth", "read=$HOME/.ssh/id_ed25519"}
	arm := []string{"SUPPLY_ARM=" + strings.Join(persist, "\n")}
	profile := filepath.Join(root, "make.yaml")
	r := sc.run(t, b, nil, arm, testutil.SysprofBin, "learn", "-p", profile, "--", "make")
	testutil.MustCode(t, "learn the live payload", r, 0)
	var pending []string
	for _, c := range policy.Pending(loadProfile(t, profile)) {
		pending = append(pending, c.Item)
	}
	for _, want := range []string{"$HOME/.bashrc", "$WORKDIR/.git/hooks", "$WORKDIR/.github", "$HOME/.config/autostart", "$HOME/.local/lib/python3"} {
		if !slices.ContainsFunc(pending, func(p string) bool { return strings.Contains(p, want) }) {
			t.Errorf("learn did not write pending what reaches %s: pending %q\n%s", want, pending, r.Stderr)
		}
	}
	// The key is not granted at all (learn keeps a credential store hidden unless
	// --allow-secret names it), pending or not.
	for _, rr := range loadProfile(t, profile).Filesystem.Read {
		if strings.Contains(rr.Path, ".ssh") {
			t.Errorf("learn granted reading %s", rr.Path)
		}
	}
	// Put the host back as it was before the poisoned learn, then enforce the same payload.
	plantSecrets(t, b)
	for _, p := range []string{filepath.Join(b.Work, ".git", "hooks", "pre-push"), filepath.Join(b.Work, ".github"),
		filepath.Join(b.Home, ".config", "autostart"), filepath.Join(site, "zz-helper.pth"), filepath.Join(b.Work, "out")} {
		os.RemoveAll(p)
	}
	rep := filepath.Join(root, "report.json")
	r = sc.run(t, b, nil, arm, testutil.SysprofBin, "enforce", "-p", profile, "--report", rep, "--", "make")
	for _, p := range []string{filepath.Join(b.Work, ".git", "hooks", "pre-push"), filepath.Join(b.Work, ".github"),
		filepath.Join(b.Home, ".config", "autostart", "helper.desktop"), filepath.Join(site, "zz-helper.pth")} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("enforce let a pending write through: %s exists on the host\n%s", p, r.Stderr)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(b.Home, ".bashrc")); string(got) != "# rc\n" {
		t.Errorf("enforce let the pending .bashrc write through: %q", got)
	}
	if strings.Contains(r.Stdout+r.Stderr, "read=$HOME/.ssh/id_ed25519: LEAKED") {
		t.Errorf("enforce let the pending read of the key through:\n%s", r.Stderr)
	}
	rp := testutil.ReadReport(t, rep)
	if !slices.ContainsFunc(rp.Denials, func(d report.Denial) bool { return strings.HasSuffix(d.Path, ".bashrc") }) {
		t.Errorf("the pending .bashrc write is not a denial:\n%s", r.Stderr)
	}
	// refine --only accepts the one named: no longer pending, the others stay.
	r = b.Sysprof(t, "refine", "-p", profile, "--from", rep, "--workdir", b.Work, "--only", "$HOME/.bashrc")
	testutil.MustCode(t, "refine --only", r, 0)
	after := policy.Pending(loadProfile(t, profile))
	if slices.ContainsFunc(after, func(c policy.Change) bool { return c.Item == "$HOME/.bashrc" }) || len(after) != len(pending)-1 {
		t.Errorf("after refine --only $HOME/.bashrc: pending %v (before %q)\n%s", after, pending, r)
	}
}

// poisonedMakeBox is the make fixture with the supply-chain payload, its secrets planted and
// its network namespace started, below a new directory of /var/cache named prefix*: the
// directory, the environment, the box and the user's site-packages directory.
func poisonedMakeBox(t *testing.T, prefix string) (string, *supplyEnv, *testutil.Box, string) {
	t.Helper()
	root, err := os.MkdirTemp("/var/cache", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	sc := startSupplyEnv(t, root)
	b := newBox(t, root, "make", "dev", "work", "")
	testutil.CopyTree(t, testutil.Testdata("attacks", "supplychain", "make"), b.Work)
	for _, f := range []string{"payload.py", "input.txt"} {
		copyFile(t, testutil.Testdata("attacks", "supplychain", f), filepath.Join(b.Work, "tools", f), 0o644)
	}
	plantSecrets(t, b)
	b.Extra = append(b.Extra, "SUPPLY_WORK="+b.Work, "SUPPLY_REGISTRY=registry.test:8080")
	site := strings.TrimSpace(b.Run(t, "python3", "-c", "import site; print(site.getusersitepackages())").Stdout)
	return root, sc, b, site
}
