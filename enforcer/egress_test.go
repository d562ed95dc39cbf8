package enforcer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
)

// egressEnv carries the upstreams' ports to the ordinary-user half (TestMain runs
// egressHelper when it is set).
const egressEnv = "SYSPROF_TEST_EGRESS_PORTS"

// egressUpstreams starts the loopback upstreams the allowed names resolve to (--resolve):
// plain HTTP and TLS, both answering "upstream <host>".
func egressUpstreams(t *testing.T) (httpPort, tlsPort int) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "upstream %s", r.Host) })
	s1 := httptest.NewServer(h)
	s2 := httptest.NewTLSServer(h)
	t.Cleanup(s1.Close)
	t.Cleanup(s2.Close)
	port := func(u string) int { p, _ := strconv.Atoi(u[strings.LastIndexByte(u, ':')+1:]); return p }
	return port(s1.URL), port(s2.URL)
}

// egressScript is what the sandboxed command does: each attack right after its benign control.
// Every line ends with the command's exit status.
const egressScript = `H=$1; T=$2
c() { curl -sS -m 10 "$@" 2>/dev/null; echo " rc=$?"; }
printf 'allowed:'; c http://allowed.test:$H/
printf 'other-name:'; c http://other.test:$H/
printf 'same-address:'; c --connect-to other.test:$H:allowed.test:$H http://other.test:$H/
printf 'tls-allowed:'; c -k https://allowed.test:$T/
printf 'tls-other-sni:'; c -k --connect-to other.test:$T:allowed.test:$T https://other.test:$T/
printf 'metadata-ip:'; c http://169.254.169.254:$H/
printf 'metadata-name:'; c http://metadata.google.internal:$H/
printf 'metadata-by-name:'; c http://meta.test:$H/
printf 'metadata-by-cidr:'; c -k https://169.254.169.254:$T/
printf 'raw-ip:'; c http://127.0.0.1:$H/
printf 'curl-only-by-curl:'; c http://curlonly.test:$H/
printf 'curl-only-by-bash:'; bash -c 'exec 3<>/dev/tcp/curlonly.test/'$H' && printf "GET / HTTP/1.0\r\nHost: curlonly.test\r\n\r\n" >&3 && cat <&3' 2>/dev/null | tail -1; echo " rc=$?"
export REQ='GET / HTTP/1.0\r\nHost: bashonly.test\r\n\r\n'
printf 'bash-only-by-bash:'; bash -c 'exec 3<>/dev/tcp/bashonly.test/'$H' && printf "$REQ" >&3 && while IFS= read -r l || [ -n "$l" ]; do last=$l; done <&3; printf %s "$last"' 2>/dev/null; echo " rc=$?"
printf 'bash-only-inherited:'; bash -c 'exec 3<>/dev/tcp/bashonly.test/'$H' || exit 1; sh -c "printf \"\$REQ\" >&3; cat <&3" | tail -1; exit 0' 2>/dev/null; echo " rc=$?"
printf 'bash-only-forked-before-exec:'; sh -c '( sleep 0.5; curl -sS -m 10 http://bashonly.test:'$H'/ 2>/dev/null; echo " rc=$?" ) & exec bash -c "sleep 2; true"'
printf 'dns-past-the-stub:'; bash -c 'printf "\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x04leak\x04test\x00\x00\x01\x00\x01" >/dev/udp/10.0.0.2/53'; echo " rc=$?"
printf 'udp-quic:'; bash -c 'printf x >/dev/udp/192.0.2.7/443'; echo " rc=$?"
printf 'udp-allowed-name:'; bash -c 'printf x >/dev/udp/allowed.test/'$H; echo " rc=$?"
`

// egressRun enforces a profile that allows allowed.test (both ports, any binary),
// curlonly.test (learned by curl) and bashonly.test (learned by bash) on the script;
// other.test resolves, for the proxy, to the same upstream address as allowed.test.
func egressRun(httpPort, tlsPort int, work string) (string, *report.Report, error) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		return "", nil, err
	}
	curl, _ = filepath.EvalSymlinks(curl)
	bash, err := exec.LookPath("bash")
	if err != nil {
		return "", nil, err
	}
	bash, _ = filepath.EvalSymlinks(bash)
	p := toolProfile("egress")
	p.Network.Connect = []policy.Endpoint{
		{Endpoint: fmt.Sprintf("allowed.test:%d", httpPort), Proto: "tcp"},
		{Endpoint: fmt.Sprintf("allowed.test:%d", tlsPort), Proto: "tcp"},
		{Endpoint: fmt.Sprintf("curlonly.test:%d", httpPort), Proto: "tcp", Provenance: policy.Provenance{By: curl}},
		{Endpoint: fmt.Sprintf("bashonly.test:%d", httpPort), Proto: "tcp", Provenance: policy.Provenance{By: bash}},
		{Endpoint: fmt.Sprintf("meta.test:%d", httpPort), Proto: "tcp"}, // resolves to the metadata address
		{Endpoint: fmt.Sprintf("0.0.0.0/0:%d", tlsPort), Proto: "tcp"},  // does not name the metadata address
	}
	lo := []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	var out strings.Builder
	rep, code, err := Run(context.Background(), Options{Profile: p, Audit: true, LogAllowed: true, Dir: work,
		Command: []string{"sh", "-c", egressScript, "sh", strconv.Itoa(httpPort), strconv.Itoa(tlsPort)},
		Resolve: map[string][]netip.Addr{"allowed.test": lo, "other.test": lo, "curlonly.test": lo, "bashonly.test": lo,
			"meta.test": {netip.MustParseAddr("169.254.169.254")}},
		Stdout: &out, Stderr: io.Discard})
	if err == nil && code != 0 {
		err = fmt.Errorf("exit %d", code)
	}
	return out.String(), rep, err
}

// checkEgress checks the script's output and the report: every control worked, every attack
// failed and is a denial naming curl (or bash).
func checkEgress(out string, rep *report.Report, httpPort, tlsPort int) error {
	var errs []error
	sh, _ := exec.LookPath("sh")
	sh, _ = filepath.EvalSymlinks(sh)
	bash, _ := exec.LookPath("bash")
	bash, _ = filepath.EvalSymlinks(bash)
	lines := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, _ := strings.Cut(l, ":")
		lines[k] = v
	}
	for _, c := range []struct{ key, want string }{
		{"allowed", "upstream allowed.test:" + strconv.Itoa(httpPort) + " rc=0"},
		{"tls-allowed", "upstream allowed.test:" + strconv.Itoa(tlsPort) + " rc=0"},
		{"curl-only-by-curl", "upstream curlonly.test:" + strconv.Itoa(httpPort) + " rc=0"},
		{"bash-only-by-bash", "upstream bashonly.test rc=0"},
	} {
		if got := strings.TrimSpace(lines[c.key]); got != c.want {
			errs = append(errs, fmt.Errorf("benign %s: %q, want %q", c.key, got, c.want))
		}
	}
	for _, k := range []string{"other-name", "same-address", "tls-other-sni", "metadata-ip", "metadata-name", "metadata-by-name", "metadata-by-cidr", "raw-ip", "curl-only-by-bash", "bash-only-inherited", "bash-only-forked-before-exec"} {
		if v, ok := lines[k]; !ok || strings.Contains(v, "upstream") || strings.HasSuffix(v, " rc=0") && !strings.Contains(k, "-by-bash") && k != "bash-only-inherited" {
			errs = append(errs, fmt.Errorf("attack %s got through: %q", k, v))
		}
	}
	if rep == nil {
		return errors.Join(append(errs, errors.New("no report"))...)
	}
	find := func(what, exe string) *report.Denial {
		for i, d := range rep.Denials {
			if d.Kind == report.KindNetwork && strings.Contains(d.What, what) && strings.HasSuffix(d.Exe, exe) {
				return &rep.Denials[i]
			}
		}
		return nil
	}
	H := strconv.Itoa(httpPort)
	for _, c := range []struct{ what, exe string }{
		{"resolve other.test", "/curl"},
		{"connect other.test:" + H + " tcp (HTTP Host other.test on a connection resolved for allowed.test)", "/curl"},
		{"connect other.test:" + strconv.Itoa(tlsPort) + " tcp (TLS SNI other.test on a connection resolved for allowed.test)", "/curl"},
		{"connect 169.254.169.254:" + H + " tcp (link-local or metadata address)", "/curl"},
		{"resolve metadata.google.internal", "/curl"},
		{"connect meta.test:" + H + " tcp (meta.test resolves only to addresses never dialled for a name (169.254.169.254: link-local or metadata address))", "/curl"},
		{"connect 169.254.169.254:" + strconv.Itoa(tlsPort) + " tcp (link-local or metadata address (name it with its own rule))", "/curl"},
		{"connect 127.0.0.1:" + H + " tcp (raw IP connect", "/curl"},
		{"connect curlonly.test:" + H + " tcp (by " + bash + ": the rule names ", "/bash"},
		{"connect bashonly.test:" + H + " tcp (by " + sh + ": the rule names " + bash, "/" + filepath.Base(sh)},
		// A process forked before its parent exec'd bash runs under bash, but is not bash.
		{"connect bashonly.test:" + H + " tcp (by ", "/curl"},
		// Datagrams that did not leave (the ICMP observer); their sender may have exited
		// before its socket was looked up.
		{"dns leak.test to 10.0.0.2:53 udp (not through sysprof's DNS stub", ""},
		{"send 192.0.2.7:443 udp (only DNS through the stub leaves the sandbox", ""},
		{"send allowed.test:" + H + " udp (only DNS through the stub leaves the sandbox", ""},
	} {
		if d := find(c.what, c.exe); d == nil {
			errs = append(errs, fmt.Errorf("no denial %q by %s", c.what, c.exe))
		} else if d.Allowed || d.Suggest == "" {
			errs = append(errs, fmt.Errorf("denial %+v: allowed or without a suggestion", *d))
		}
	}
	// The parent chain names the command's ancestry and ends below sysprof's init stage: bash
	// under the script's shell; the shell given bash's socket under bash.
	if d := find("connect curlonly.test:"+H+" tcp (by ", "/bash"); d != nil && !slices.Equal(d.Parents, []string{sh}) {
		errs = append(errs, fmt.Errorf("denial by bash: parents %q, want [%s]", d.Parents, sh))
	}
	if d := find("connect bashonly.test:"+H+" tcp (by ", "/"+filepath.Base(sh)); d != nil && !slices.Equal(d.Parents, []string{bash, sh}) {
		errs = append(errs, fmt.Errorf("denial by the inheriting shell: parents %q, want [%s %s]", d.Parents, bash, sh))
	}
	for _, d := range rep.Denials {
		if d.Kind == report.KindNetwork && d.Proto != "udp" && strings.Contains(d.What, "allowed.test:") && !strings.Contains(d.What, "other.test") {
			errs = append(errs, fmt.Errorf("the allowed name was refused: %s", d.What))
		}
	}
	notes := strings.Join(rep.Notes, "\n")
	if !strings.Contains(notes, "egress: allowed allowed.test:"+H+" tcp by ") || !strings.Contains(notes, "/curl: 1 connection(s)") {
		errs = append(errs, fmt.Errorf("allowed connections not logged: %v", rep.Notes))
	}
	return errors.Join(errs...)
}

func TestEgressByNameAsRoot(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTool(t, "curl")
	testutil.RequireTool(t, "bash")
	h, tl := egressUpstreams(t)
	out, rep, err := egressRun(h, tl, t.TempDir())
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	if err := checkEgress(out, rep, h, tl); err != nil {
		t.Errorf("%v\noutput:\n%s", err, out)
	}
}

// The same design as an ordinary user: the test binary runs itself as nobody (no guard, a
// user namespace), the upstreams stay here.
func TestEgressByNameAsOrdinaryUser(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTool(t, "curl")
	testutil.RequireTool(t, "bash")
	h, tl := egressUpstreams(t)
	dir, err := os.MkdirTemp("", "sysprof-egress-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	self, _ := os.Executable()
	bin := filepath.Join(dir, "enforcer.test")
	if err := copyFile(self, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d,%d", egressEnv, h, tl), "HOME="+dir)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
}

// egressHelper is TestEgressByNameAsOrdinaryUser's half that runs as nobody.
func egressHelper(ports string) error {
	a, b, _ := strings.Cut(ports, ",")
	h, _ := strconv.Atoi(a)
	tl, _ := strconv.Atoi(b)
	dir, _ := os.Getwd()
	out, rep, err := egressRun(h, tl, dir)
	if err != nil {
		return fmt.Errorf("run: %w\n%s", err, out)
	}
	if err := checkEgress(out, rep, h, tl); err != nil {
		return fmt.Errorf("%w\noutput:\n%s", err, out)
	}
	return nil
}

// Fail closed: the proxy not coming up refuses the run (125) with and without --degrade, and
// --degrade never turns a rule the proxy cannot hold (UDP) into an allowance.
func TestEgressFailsClosed(t *testing.T) {
	testutil.RequireRoot(t)
	f := newFSFixture(t)
	allowed := testutil.LoopbackTCP(t)
	uc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer uc.Close()
	udp := uc.LocalAddr().(*net.UDPAddr).Port
	p := netProfile(f, policy.Endpoint{Endpoint: fmt.Sprintf("allowed.test:%d", allowed), Proto: "tcp"})
	marker := filepath.Join(f.work, "out", "ran")
	egressStartFail = errors.New("test: the proxy cannot start")
	for _, degrade := range []bool{false, true} {
		o := f.run(t, p, degrade, "write="+marker)
		var le *LayerError
		if o.err == nil || !asLayerError(o.err, &le) || le.Layer != LayerNetwork || ExitCode(o.err) != 125 || !strings.Contains(o.err.Error(), "the proxy cannot start") {
			t.Errorf("degrade %v: ran without its proxy: %s", degrade, o)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("degrade %v: the command ran", degrade)
		}
	}
	egressStartFail = nil
	// Benign control: the same profile runs once the proxy starts.
	if o := f.run(t, p, false, "write="+marker); o.err != nil || o.code != 0 {
		t.Fatalf("benign run: %s", o)
	}

	// A UDP rule the relay cannot hold (a range: udp.go relays exact addresses and names) does
	// not refuse the profile: the run goes on with the rule dropped (the datagram stays
	// refused), and says so on stderr and in the report, with and without --degrade.
	f = newFSFixture(t) // netProfile adds to the fixture's profile
	p = netProfile(f, policy.Endpoint{Endpoint: fmt.Sprintf("127.0.0.0/8:%d", udp), Proto: "udp"})
	for _, degrade := range []bool{false, true} {
		o := f.run(t, p, degrade, fmt.Sprintf("udp=127.0.0.1:%d", udp))
		if o.err != nil || o.code != 0 {
			t.Fatalf("degrade %v: a profile with a UDP rule did not run: %s", degrade, o)
		}
		said := fmt.Sprintf("network.send: 127.0.0.0/8:%d udp: refused", udp)
		if !strings.Contains(o.stderr, said) || !strings.Contains(strings.Join(o.rep.Notes, "\n"), said) {
			t.Errorf("degrade %v: the dropped UDP rule is not said (%q): %s", degrade, said, o)
		}
		// The datagram went to the sandbox's own loopback, never to the host's listener (the
		// run is over: anything sent is queued by now).
		uc.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		if n, _, err := uc.ReadFrom(make([]byte, 64)); err == nil {
			t.Errorf("degrade %v: a UDP datagram left the sandbox (%d bytes): %s", degrade, n, o)
		}
	}
}
