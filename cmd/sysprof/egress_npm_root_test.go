package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sysprof/sysprof/internal/npmregistry"
	"github.com/sysprof/sysprof/internal/testutil"
)

// npmRegistry serves one package, sysprof-probe 1.0.0, whose postinstall script writes
// postinstall.txt, from a loopback HTTP server the test starts.
func npmRegistry(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url, srv := npmregistry.Serve(ln, []string{"sysprof-probe"}, 1)
	t.Cleanup(func() { srv.Close() })
	return url
}

// npm install of a package with a postinstall script from a local registry: learned, then
// enforced from a clean node_modules (the egress proxy carries the registry connection) with
// zero denials.
func TestEgressNpmInstallLearnedThenEnforced(t *testing.T) {
	testutil.RequireRoot(t)
	npm := testutil.RequireTool(t, "npm")
	registry := npmRegistry(t)
	bin, err := sysprofBinary()
	if err != nil {
		t.Fatal(err)
	}
	// Everything under a 0755 directory: the enforced run also goes as nobody.
	base, err := os.MkdirTemp("", "sysprof-npm-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(base)
	os.Chmod(base, 0o755)
	work, home := filepath.Join(base, "work"), filepath.Join(base, "home")
	os.MkdirAll(work, 0o755)
	os.MkdirAll(home, 0o755)
	pub := filepath.Join(base, "sysprof")
	if b, err := os.ReadFile(bin); err != nil || os.WriteFile(pub, b, 0o755) != nil {
		t.Fatalf("copy sysprof: %v", err)
	}
	bin = pub
	testutil.WriteFile(t, filepath.Join(work, "package.json"), `{"name":"app","version":"1.0.0","dependencies":{"sysprof-probe":"1.0.0"}}`, 0o644)
	install := []string{npm, "install", "--registry=" + registry, "--no-audit", "--no-fund", "--no-update-notifier", "--cache=" + filepath.Join(work, ".npm-cache")}
	asNobody := false
	run := func(args ...string) (string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "HOME="+home)
		if asNobody {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	clean := func() {
		for _, p := range []string{filepath.Join(work, "node_modules"), filepath.Join(work, "package-lock.json")} {
			os.RemoveAll(p)
		}
	}
	// Twice, as a user learns: a cold cache, then a warm one (what the enforced run has).
	for range 2 {
		if out, err := run(append([]string{"learn", "-p", "npm.yaml", "--"}, install...)...); err != nil {
			t.Fatalf("learn: %v\n%s", err, out)
		}
		clean()
	}
	prof, _ := os.ReadFile(filepath.Join(work, "npm.yaml"))
	if !strings.Contains(string(prof), "network:") || !strings.Contains(string(prof), registry[len("http://"):len(registry)-1]) {
		t.Fatalf("the learned profile does not name the registry %s:\n%s", registry, prof)
	}
	marker := filepath.Join(work, "node_modules", "sysprof-probe", "postinstall.txt")
	// As root, then as an ordinary user (the same design: no cgroup hooks either way).
	for _, nobody := range []bool{false, true} {
		clean()
		os.Remove(marker)
		if nobody {
			if err := exec.Command("chown", "-R", "65534:65534", work, home).Run(); err != nil {
				t.Fatal(err)
			}
		}
		asNobody = nobody
		out, err := run(append([]string{"enforce", "-p", "npm.yaml", "--report", "rep.json", "--"}, install...)...)
		if err != nil {
			t.Fatalf("enforce (nobody %v): %v\n%s", nobody, err, out)
		}
		if b, err := os.ReadFile(marker); err != nil || string(b) != "ok" {
			t.Errorf("nobody %v: the postinstall script did not run under enforce: %v\n%s", nobody, err, out)
		}
		rep := testutil.ReadReport(t, filepath.Join(work, "rep.json"))
		if len(rep.Denials) != 0 {
			t.Errorf("nobody %v: want zero denials, got %d:\n%s", nobody, len(rep.Denials), out)
		}
		if !strings.Contains(strings.Join(rep.Notes, "\n"), "egress: allowed 127.0.0.1:") {
			t.Errorf("nobody %v: the registry connection did not go through the proxy: %v", nobody, rep.Notes)
		}
	}
}
