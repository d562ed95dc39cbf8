package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
)

// TestEnforceProcSelf: /proc/self names the calling process, whichever it is. A tool that read
// /proc/self/status while learning (Go and Rust runtimes read /proc/self/cgroup, mountinfo and
// maps at start) must be able to read its own /proc/self/status under enforce; and any refusal
// must be in the report. cat runs as a child of sh: the sandbox's first process is not the one
// reading (as with every compiler a build driver starts).
func TestEnforceProcSelf(t *testing.T) {
	testutil.RequireRoot(t)
	testutil.RequireTools(t, hostPath, "cat")
	testutil.RequireTools(t, hostPath, "sh")
	b := cliBox(t)
	p := filepath.Join(b.Home, "procself.yaml")
	argv := []string{"sh", "-c", "cat /proc/self/status; exit $?"}
	r := b.Sysprof(t, append([]string{"learn", "-p", p, "--"}, argv...)...)
	testutil.MustCode(t, "learn", r, 0)
	rep := filepath.Join(b.Tmp, "procself.json")
	r = b.Sysprof(t, append([]string{"enforce", "-p", p, "--report", rep, "--"}, argv...)...)
	denials := testutil.ReadReport(t, rep).Denials
	if r.Code != 0 && len(denials) == 0 {
		t.Errorf("enforce: the command failed but the report has no denial (every denial must be explained)")
	}
	testutil.MustCode(t, "enforce", r, 0)
	testutil.RequireNoDenials(t, "enforce", rep, r)
	if !strings.Contains(r.Stdout, "Name:\tcat") {
		t.Errorf("enforce: stdout is not cat's own status:\n%s", r.Stdout)
	}
}
