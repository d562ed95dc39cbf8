package main

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// gitScript clones over HTTPS with git's store helper (which reads ~/.git-credentials), then
// the canary looks for a piece of the real password ($1) in what it can read.
const gitScript = `N=$1
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null GIT_TERMINAL_PROMPT=0
git -c credential.helper=store clone -q https://git.test/repo.git clone >git.log 2>&1; echo "git rc=$?"
echo "stored=$(cat "$HOME/.git-credentials")"
echo "files: $(grep -rlsF -e "$N" "$HOME/.git-credentials" "$PWD" /etc | tr '\n' ' ')"
echo "environ: $(for f in /proc/[0-9]*/environ; do grep -lsaF -e "$N" "$f"; done | tr '\n' ' ')"
`

// git clone over HTTPS from a server that wants Basic auth, the password brokered from
// ~/.git-credentials: git (its store helper, git-remote-https) holds a stand-in, the server
// gets the real password.
func TestCredentialsGitBrokered(t *testing.T) {
	brokeredRun(t, "git credentials run", gitInNetns, "git")
}

func gitInNetns(bin string) error {
	base, caFile, leaf, err := credsBase("sysprof-gitcreds-", "git.test")
	if err != nil {
		return err
	}
	defer os.RemoveAll(base)
	real := randomSecret(32)
	needle := real[4:20]
	// A bare repository with one commit, served by git http-backend behind Basic auth.
	repos := filepath.Join(base, "repos")
	src := filepath.Join(base, "src")
	for _, c := range [][]string{
		{"init", "-q", "--bare", filepath.Join(repos, "repo.git")},
		{"init", "-q", src},
		{"-C", src, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "first"},
		{"-C", src, "push", "-q", filepath.Join(repos, "repo.git"), "HEAD:refs/heads/main"},
		{"-C", filepath.Join(repos, "repo.git"), "symbolic-ref", "HEAD", "refs/heads/main"},
	} {
		if out, err := exec.Command("git", c...).CombinedOutput(); err != nil {
			return fmt.Errorf("git %v: %v %s", c, err, out)
		}
	}
	gitExec, _ := exec.Command("git", "--exec-path").Output()
	backend := &cgi.Handler{Path: filepath.Join(strings.TrimSpace(string(gitExec)), "git-http-backend"),
		Env: []string{"GIT_PROJECT_ROOT=" + repos, "GIT_HTTP_EXPORT_ALL=1"}}
	var mu sync.Mutex
	var saw []string
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
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(w, r)
	})}
	go srv.Serve(tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{leaf}}))
	defer srv.Close()

	work, home := filepath.Join(base, "work"), filepath.Join(base, "home")
	os.MkdirAll(work, 0o755)
	os.MkdirAll(home, 0o755)
	os.WriteFile(filepath.Join(home, ".git-credentials"), []byte("https://me:"+real+"@git.test\n"), 0o600)
	os.WriteFile(filepath.Join(work, "prof.yaml"), []byte(brokerProfile("{name: git-clone, command: [git, clone], runs: 1, incomplete: false}", "",
		[]string{"git.test:443"}, []string{`{file: $HOME/.git-credentials, key: "https://me@git.test", hosts: [git.test], how: basic}`})), 0o644)
	repFile := filepath.Join(base, "rep.json")
	cmd := exec.Command(bin, "enforce", "-p", "prof.yaml", "--report", repFile, "--resolve", "git.test="+regAddr, "--", "sh", "-c", gitScript, "sh", needle)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "HOME="+home, "SSL_CERT_FILE="+caFile)
	outB, err := cmd.CombinedOutput()
	out := string(outB)
	gitLog, _ := os.ReadFile(filepath.Join(work, "git.log"))
	mu.Lock()
	server := strings.Join(saw, "\n")
	mu.Unlock()
	fail := func(f string, a ...any) error {
		return fmt.Errorf(f+"\noutput:\n%s\ngit.log:\n%s\nserver saw:\n%s", append(a, out, gitLog, server)...)
	}
	if err != nil {
		return fail("enforce: %v", err)
	}
	if !strings.Contains(out, "git rc=0") {
		return fail("git clone failed")
	}
	if _, err := os.Stat(filepath.Join(work, "clone", ".git")); err != nil {
		return fail("no clone: %v", err)
	}
	if !strings.Contains(out, "files: \n") || !strings.Contains(out, "environ: \n") || strings.Contains(out, "stored=https://me:"+real) {
		return fail("the canary found the real password")
	}
	if !strings.Contains(server, "true me:"+real) {
		return fail("the server never got the real password")
	}
	rep, _, err := readReportFile(repFile)
	if err != nil {
		return err
	}
	if len(rep.CredentialUses) == 0 || !strings.HasSuffix(rep.CredentialUses[0].Binary, "git-remote-http") && !strings.HasSuffix(rep.CredentialUses[0].Binary, "git-remote-https") {
		return fail("uses: %+v", rep.CredentialUses)
	}
	return nil
}
