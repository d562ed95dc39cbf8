package main

import (
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

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
)

// The scaffolding the brokered-credential tests share (npm, pip, git, docker).

// regAddr is the registries' address: a documentation address (TEST-NET-1) on the loopback of
// a network namespace of the test's own, so that no name resolves to the host's loopback.
const regAddr = "192.0.2.10"

// brokeredRun requires root, ip and tools, then runs fn with the sysprof binary in a network
// namespace of its own (inOwnNetns); what names the run in the failure.
func brokeredRun(t *testing.T, what string, fn func(bin string) error, tools ...string) {
	testutil.RequireRoot(t)
	for _, tool := range append([]string{"ip"}, tools...) {
		testutil.RequireTool(t, tool)
	}
	bin, err := sysprofBinary()
	if err != nil {
		t.Fatal(err)
	}
	if err := inOwnNetns(func() error { return fn(bin) }); err != nil {
		testutil.RequireNoErr(t, what, err)
	}
}

// inOwnNetns runs fn on a thread that enters a network namespace of its own, with regAddr on
// its loopback, and never leaves it (the thread ends with the goroutine): the registries
// listen there, and sysprof is started from there, so its proxy dials them in that namespace.
func inOwnNetns(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			errc <- testutil.NotAvailable("unshare(CLONE_NEWNET): %v", err)
			return
		}
		for _, args := range [][]string{{"link", "set", "lo", "up"}, {"addr", "add", regAddr + "/32", "dev", "lo"}} {
			if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
				errc <- fmt.Errorf("ip %v: %v: %s", args, err, out)
				return
			}
		}
		errc <- fn()
	}()
	return <-errc
}

// credsBase makes a world-readable temporary directory (the caller removes it) holding
// ca.pem, a test CA the host trusts through SSL_CERT_FILE, and returns the certificate it
// signed for the registries' names.
func credsBase(prefix string, names ...string) (base, caFile string, leaf tls.Certificate, err error) {
	base, err = os.MkdirTemp("", prefix)
	if err != nil {
		return "", "", leaf, err
	}
	os.Chmod(base, 0o755)
	caPEM, leaf, err := testCA(names[0], names[1:]...)
	if err == nil {
		caFile = filepath.Join(base, "ca.pem")
		err = os.WriteFile(caFile, caPEM, 0o644)
	}
	if err != nil {
		os.RemoveAll(base)
		return "", "", leaf, err
	}
	return base, caFile, leaf, nil
}

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

// randomSecret is n random lower-case letters and digits: a real value no file here holds.
func randomSecret(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	for i := range b {
		b[i] = "abcdefghijklmnopqrstuvwxyz0123456789"[int(b[i])%36]
	}
	return string(b)
}

// serveOther listens as other.test (regAddr:80, plain HTTP), the second allowed host the
// canary sends the stand-in to, and records each request (under mu) in *saw.
func serveOther(mu *sync.Mutex, saw *[]string) (*http.Server, error) {
	ln, err := net.Listen("tcp", regAddr+":80")
	if err != nil {
		return nil, err
	}
	other := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		*saw = append(*saw, fmt.Sprint(r.Method, " ", r.URL, " ", r.Header))
		mu.Unlock()
	})}
	go other.Serve(ln)
	return other, nil
}

// publicCopy copies the sysprof binary into base, where an ordinary user can run it.
func publicCopy(bin, base string) (string, error) {
	pub := filepath.Join(base, "sysprof")
	if b, err := os.ReadFile(bin); err != nil || os.WriteFile(pub, b, 0o755) != nil {
		return "", fmt.Errorf("copy sysprof: %v", err)
	}
	return pub, nil
}

// reportPath names a report file in a directory of its own under base, writable by anyone
// and outside the work tree (the report names the canary's argument).
func reportPath(base, name string) string {
	dir := filepath.Join(base, name)
	os.Mkdir(dir, 0o777)
	os.Chmod(dir, 0o777)
	return filepath.Join(dir, "rep.json")
}

// asNobody hands trees to nobody and makes cmd run as nobody.
func asNobody(cmd *exec.Cmd, trees ...string) error {
	if out, err := exec.Command("chown", append([]string{"-R", "65534:65534"}, trees...)...).CombinedOutput(); err != nil {
		return fmt.Errorf("chown: %v %s", err, out)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	return nil
}

// canaryLines reads the canary's "key=value" and "key: value" lines.
func canaryLines(out string) map[string]string {
	lines := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(l, "="); ok && !strings.Contains(k, ":") {
			lines[k] = v
		} else if k, v, ok := strings.Cut(l, ": "); ok {
			lines[k] = strings.TrimSpace(v)
		}
	}
	return lines
}

// readReportFile reads and parses the run report, returning its bytes too.
func readReportFile(path string) (*report.Report, []byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("report: %v", err)
	}
	rep, err := report.Parse(data)
	if err == nil && rep == nil {
		err = fmt.Errorf("empty")
	}
	if err != nil {
		return nil, nil, fmt.Errorf("report: %v", err)
	}
	return rep, data, nil
}

// standInDenied says whether the report holds a critical denial of the stand-in of source.
func standInDenied(rep *report.Report, source string) bool {
	for _, d := range rep.Denials {
		if d.Risk == report.RiskCritical && strings.Contains(d.What, "tried to send the stand-in of "+source) {
			return true
		}
	}
	return false
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

// brokerProfileHead is what every brokered-credential test's profile allows but the network:
// every unprivileged syscall (seccomp is not what they test), the system trees and the work
// tree.
const brokerProfileHead = `apiVersion: sysprof.dev/v1
kind: Profile
metadata: %s
syscalls:
  architectures: [x86_64]
  allow: [%s]
%sfilesystem:
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
`

// brokerProfile is a brokered-credential test's profile: brokerProfileHead with metadata,
// more syscall rules (syscallArgs, YAML lines under syscalls), TCP to the endpoints and the
// credentials rules.
func brokerProfile(metadata, syscallArgs string, endpoints, credentials []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, brokerProfileHead, metadata, allSyscalls(), syscallArgs)
	for _, e := range endpoints {
		fmt.Fprintf(&b, "    - {endpoint: %q, proto: tcp}\n", e)
	}
	b.WriteString("credentials:\n")
	for _, c := range credentials {
		b.WriteString("  - " + c + "\n")
	}
	return b.String()
}
