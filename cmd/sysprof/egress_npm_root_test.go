package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/report"
)

// npmRegistry serves one package, sysprof-probe 1.0.0, whose postinstall script writes
// postinstall.txt, from a loopback HTTP server the test starts (a packument and a tarball).
func npmRegistry(t *testing.T) string {
	var tgz bytes.Buffer
	gz := gzip.NewWriter(&tgz)
	tw := tar.NewWriter(gz)
	for name, body := range map[string]string{
		"package/package.json": `{"name":"sysprof-probe","version":"1.0.0","scripts":{"postinstall":"node -e \"require('fs').writeFileSync('postinstall.txt','ok')\""}}`,
		"package/index.js":     "module.exports = 1;\n",
	} {
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg})
		tw.Write([]byte(body))
	}
	tw.Close()
	gz.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	s1 := sha1.Sum(tgz.Bytes())
	s512 := sha512.Sum512(tgz.Bytes())
	doc, _ := json.Marshal(map[string]any{
		"name": "sysprof-probe", "dist-tags": map[string]string{"latest": "1.0.0"},
		"versions": map[string]any{"1.0.0": map[string]any{
			"name": "sysprof-probe", "version": "1.0.0", "scripts": map[string]string{"postinstall": "node -e \"require('fs').writeFileSync('postinstall.txt','ok')\""},
			"dist": map[string]string{"tarball": base + "/sysprof-probe/-/sysprof-probe-1.0.0.tgz", "shasum": hex.EncodeToString(s1[:]),
				"integrity": "sha512-" + base64.StdEncoding.EncodeToString(s512[:])},
		}},
	})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/sysprof-probe":
			w.Header().Set("Content-Type", "application/json")
			w.Write(doc)
		case "/sysprof-probe/-/sysprof-probe-1.0.0.tgz":
			w.Write(tgz.Bytes())
		default:
			http.NotFound(w, r)
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return base + "/"
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
	work, home := t.TempDir(), t.TempDir()
	testutil.WriteFile(t, filepath.Join(work, "package.json"), `{"name":"app","version":"1.0.0","dependencies":{"sysprof-probe":"1.0.0"}}`, 0o644)
	install := []string{npm, "install", "--registry=" + registry, "--no-audit", "--no-fund", "--no-update-notifier", "--cache=" + filepath.Join(work, ".npm-cache")}
	run := func(args ...string) (string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "HOME="+home)
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
	out, err := run(append([]string{"enforce", "-p", "npm.yaml", "--report", "rep.json", "--"}, install...)...)
	if err != nil {
		t.Fatalf("enforce: %v\n%s", err, out)
	}
	if b, err := os.ReadFile(marker); err != nil || string(b) != "ok" {
		t.Errorf("the postinstall script did not run under enforce: %v\n%s", err, out)
	}
	var rep report.Report
	b, _ := os.ReadFile(filepath.Join(work, "rep.json"))
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Denials) != 0 {
		t.Errorf("want zero denials, got %d:\n%s", len(rep.Denials), out)
	}
	if !strings.Contains(strings.Join(rep.Notes, "\n"), "egress: allowed 127.0.0.1:") {
		t.Errorf("the registry connection did not go through the proxy: %v", rep.Notes)
	}
}
