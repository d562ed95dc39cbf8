package enforcer

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
)

// A real multi-process tool (cc spawns cc1 and as) under every layer: a broad but ordinary
// syscall set (everything but the privileged ones), the system read-only, only out/ and a
// private /tmp writable, no network. It must build exactly as unsandboxed, with no denials.
func TestRealToolCompilesUnderAllLayers(t *testing.T) {
	testutil.RequireRoot(t)
	cc := testutil.RequireTool(t, "cc")
	work := t.TempDir()
	os.MkdirAll(filepath.Join(work, "out"), 0o755)
	if err := os.WriteFile(filepath.Join(work, "hello.c"), []byte("int main(void) { return 0; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := unprivilegedProfile()
	p.Filesystem = policy.Filesystem{
		Read:       rules("/usr", "/etc", "/proc", "/lib", "/lib64", "$WORKDIR"),
		Write:      rules("$WORKDIR/out", "$TMPDIR", "/dev/null"),
		Exec:       rules("/usr/bin", "/usr/lib", "/usr/libexec"),
		Hidden:     rules("$HOME/.ssh"),
		PrivateTmp: true,
	}
	var out bytes.Buffer
	rep, code, err := Run(context.Background(), Options{
		Profile: p, Command: []string{cc, "-c", "hello.c", "-o", "out/hello.o"}, Dir: work,
		Vars: map[string]string{"TMPDIR": "/tmp"}, Env: []string{"PATH=/usr/bin:/bin", "TMPDIR=/tmp"},
		Stdout: &out, Stderr: &out,
	})
	if err != nil || code != 0 {
		var b bytes.Buffer
		if rep != nil {
			rep.WriteTable(&b)
		}
		t.Fatalf("cc under the sandbox: exit %d err %v\n%s\n%s", code, err, out.String(), b.String())
	}
	if len(rep.Denials) != 0 {
		var b bytes.Buffer
		rep.WriteTable(&b)
		t.Errorf("denials for a plain compile:\n%s", b.String())
	}
	if _, err := os.Stat(filepath.Join(work, "out", "hello.o")); err != nil {
		t.Errorf("no object file: %v", err)
	}
	for _, l := range rep.Layers {
		if l.State != "applied" {
			t.Errorf("layer %s %s: %s", l.Name, l.State, l.Detail)
		}
	}
}
