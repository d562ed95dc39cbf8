package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
)

// Issue 23 item 3: inside the sandbox no set-id mode is set. A profile learned from a plain
// chmod lets `chmod 4755` (and 2755, and a create whose mode carries the bits) fail with EPERM,
// and each is a denial in the report; the plain chmod still works.
func TestSetIDModesRefusedAndReported(t *testing.T) {
	testutil.RequireRoot(t)
	root := t.TempDir()
	b := newBox(t, root, "x", "dev", "work", "")
	profile := filepath.Join(root, "profile.yaml")
	learn := `touch f && chmod 755 f && mkdir -p d && python3 -c 'import os; os.close(os.open("g", os.O_CREAT | os.O_WRONLY, 0o644))'`
	if r := b.Sysprof(t, "learn", "-p", profile, "--", "sh", "-c", learn); r.Code != 0 {
		t.Fatalf("learn: %s", r)
	}
	rep := filepath.Join(root, "report.json")
	script := `chmod 755 f && echo plain-ok; chmod 4755 f || echo setuid-refused; chmod 2755 f || echo setgid-refused; ` +
		`python3 -c 'import os; os.close(os.open("g", os.O_RDONLY, 0o4755)); print("open-without-create-ok")'; ` +
		`python3 -c 'import os; os.open("h", os.O_CREAT | os.O_WRONLY, 0o4755)' 2>/dev/null || echo create-refused`
	r := b.Sysprof(t, "enforce", "-p", profile, "--report", rep, "--", "sh", "-c", script)
	for _, want := range []string{"plain-ok", "setuid-refused", "setgid-refused", "open-without-create-ok", "create-refused"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("enforce: output lacks %s: %s", want, r)
		}
	}
	if !strings.Contains(r.Stderr, "Operation not permitted") {
		t.Errorf("chmod 4755 did not fail with EPERM: %s", r)
	}
	got := map[string]int{}
	for _, d := range testutil.ReadReport(t, rep).Denials {
		if d.Kind == "syscall" {
			got[d.Syscall] += d.Count
		}
	}
	if got["fchmodat"]+got["chmod"] < 2 || got["openat"]+got["open"] < 1 {
		t.Errorf("the report does not have the set-id chmods and the create: %v", got)
	}
}
