package auditcorpus

import (
	"testing"
	"time"

	"github.com/sysprof/sysprof/audit"
)

// A month of reports with planted findings: audit finds every planted one in its class, and
// nothing routine is called suspicious.
func TestAuditFindsPlanted(t *testing.T) {
	dir := t.TempDir()
	planted, err := Generate(dir, Options{Reports: 400, Machines: 8, Projects: 5, Days: 30, End: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	res, err := audit.Read([]string{dir}, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Skipped) != 0 || res.Runs != 400 {
		t.Fatalf("read %d runs, skipped %q", res.Runs, res.Skipped)
	}
	runs := map[audit.Class]int{}
	for _, f := range res.Findings {
		runs[f.Class] += f.Runs
		if f.Class == audit.Overbroad && f.Target != "$WORKDIR/node_modules/@aws-sdk/client-s3/dist-cjs/index.js" && f.Target != "telemetry.example.com:443" {
			t.Errorf("routine escape called overbroad: %s %s by %s role %s (%s)", f.Access, f.Target, f.Exe, f.Role, f.Reason)
		}
		if f.Class == audit.Suspicious {
			switch f.Target {
			case "$WORKDIR/.git/hooks/pre-commit", "$HOME/.ssh/id_ed25519", "198.51.100.23:8443":
			default:
				t.Errorf("routine escape called suspicious: %s %s by %s (%s)", f.Access, f.Target, f.Exe, f.Reason)
			}
		}
	}
	if runs[audit.Suspicious] != planted["suspicious"] || runs[audit.Overbroad] != planted["overbroad"] {
		t.Errorf("suspicious in %d runs, overbroad in %d; planted %d and %d", runs[audit.Suspicious], runs[audit.Overbroad], planted["suspicious"], planted["overbroad"])
	}
	t.Log(res.Summary())
}
