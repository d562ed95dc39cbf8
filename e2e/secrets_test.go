package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/report"
)

// TestHiddenSecretReadsEmpty: npm reads ~/.npmrc on every run (issue 24 item 3). Learned once,
// the secret stays hidden and reads as an empty file, as root and as an ordinary user alike:
// npm falls back to its default registry (the .npmrc names another), the run has no denial
// (--fail-on-denial passes), the report lists the read as hidden, and drift passes.
func TestHiddenSecretReadsEmpty(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTools(t, hostPath, "npm")
	// Outside /tmp (the private /tmp would make the file absent, not hidden) and searchable by
	// uid 65534 (unlike root's HOME).
	root, err := os.MkdirTemp("/var/cache", "sysprof-e2e-secret-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	b := newBox(t, root, "x", "alice", filepath.Join("src", "project"), "")
	testutil.WriteFile(t, filepath.Join(b.Work, "package.json"), `{"name":"p","version":"1.0.0"}`+"\n", 0o644)
	testutil.WriteFile(t, filepath.Join(b.Home, ".npmrc"), "registry=http://secret-registry.invalid/\n", 0o600)
	argv := []string{"npm", "config", "get", "registry"}
	if r := b.Run(t, argv...); r.Code != 0 || !strings.Contains(r.Stdout, "secret-registry") {
		t.Fatalf("unsandboxed npm does not read the .npmrc: %s", r)
	}
	profile := filepath.Join(root, "profile.yaml")
	testutil.MustCode(t, "learn", b.Sysprof(t, append([]string{"learn", "-p", profile, "--"}, argv...)...), 0)
	p := loadProfile(t, profile)
	for _, r := range p.Filesystem.Read {
		if strings.Contains(r.Path, ".npmrc") && strings.HasPrefix(r.Path, "$HOME") {
			t.Errorf("the profile reads the secret: %s", r.Path)
		}
	}
	dr := b.Sysprof(t, append([]string{"drift", "--fail-on", "low", "-p", profile, "--"}, argv...)...)
	testutil.MustCode(t, "drift of a tool that reads a hidden secret", dr, 0)

	// A reader that prints what it gets: the hidden file's content, or the error.
	reader := []string{"node", "-e", `const fs = require("fs"); try { console.log("[" + fs.readFileSync(process.env.HOME + "/.npmrc", "utf8") + "]") } catch (e) { console.log(e.code) }`}
	readerProfile := filepath.Join(root, "reader.yaml")
	testutil.MustCode(t, "learn the reader", b.Sysprof(t, append([]string{"learn", "-p", readerProfile, "--"}, reader...)...), 0)

	openForNobody(t, root)
	for _, as := range []struct {
		name string
		wrap []string
	}{{"root", nil}, {"ordinary-user", []string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"}}} {
		t.Run(as.name, func(t *testing.T) {
			if as.name == "ordinary-user" {
				chownTree(t, b.Work, 65534)
				chownTree(t, b.Home, 65534)
			}
			rep := filepath.Join(root, as.name+"-report.json")
			r := runPerturbed(t, b, perturbation{name: as.name, stdout: "pipe", stdin: "null"},
				append(slicesClone(as.wrap), append([]string{testutil.SysprofBin, "enforce", "--fail-on-denial", "-p", profile, "--report", rep, "--"}, argv...)...))
			if r.Code != 0 || strings.Contains(r.Stdout, "secret-registry") || !strings.Contains(r.Stdout, "registry.npmjs.org") {
				t.Errorf("enforced npm: exit %d, stdout %q: want 0 and the default registry (the hidden .npmrc reads as empty)\n%s", r.Code, r.Stdout, r.Stderr)
			}
			got := testutil.ReadReport(t, rep)
			for _, d := range got.Denials {
				t.Errorf("denial: [%s] %s by %s: suggest %q", d.Kind, d.What, d.Exe, d.Suggest)
			}
			if !slices.ContainsFunc(got.Hidden, func(h report.HiddenRead) bool { return h.Path == "$HOME/.npmrc" }) {
				t.Errorf("report's hidden list %+v lacks $HOME/.npmrc", got.Hidden)
			}
			// What npm sees: an empty file (not EACCES, which npm also survives).
			r = runPerturbed(t, b, perturbation{name: as.name, stdout: "pipe", stdin: "null"},
				append(slicesClone(as.wrap), append([]string{testutil.SysprofBin, "enforce", "--fail-on-denial", "-p", readerProfile, "--"}, reader...)...))
			if r.Code != 0 || r.Stdout != "[]\n" {
				t.Errorf("reading the hidden .npmrc: exit %d, stdout %q, want 0 and [] (an empty file)\n%s", r.Code, r.Stdout, r.Stderr)
			}
		})
	}
}
