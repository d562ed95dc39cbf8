package enforcer

import (
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
)

// TestRefusedConnectsOnTheRecord (issue 23 item 5): as root the guard reports a TCP connect
// Landlock refused (DNS over TCP to a resolver's address, a port no rule names), with and
// without a network allowlist. (Covered host unix sockets: TestHostSocketsHidden; datagrams:
// TestEgressByNameAsRoot.)
func TestRefusedConnectsOnTheRecord(t *testing.T) {
	testutil.RequireRoot(t)
	for _, tc := range []struct {
		name string
		net  policy.Network
	}{
		{"no network", policy.Network{}},
		{"allowlist", policy.Network{Connect: []policy.Endpoint{{Endpoint: "allowed.test:443", Proto: "tcp"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := victimProfile()
			p.Network = tc.net
			o := runVictim(t, p, false, "connect=10.0.0.2:53", "connect=127.0.0.1:9")
			if o.err != nil || o.code != 0 {
				t.Fatalf("run: %s", o)
			}
			for _, want := range []string{
				"connect 10.0.0.2:53 tcp (EACCES: no network rule names port 53): DNS past sysprof's stub",
				"connect 127.0.0.1:9 tcp (EACCES: no network rule names port 9)",
			} {
				var d *report.Denial
				for i := range o.rep.Denials {
					if o.rep.Denials[i].What == want {
						d = &o.rep.Denials[i]
					}
				}
				switch {
				case d == nil:
					t.Errorf("no denial %q:\n%s", want, o)
				case d.Kind != report.KindNetwork || !strings.HasSuffix(d.Exe, "/escape") || !strings.HasPrefix(d.Suggest, "network.connect: + ") || d.Allowed:
					t.Errorf("denial %+v: want a network denial by the victim with a suggestion", *d)
				}
			}
			if !strings.Contains(o.stdout, "connect: EACCES") {
				t.Errorf("the connects were not refused by Landlock:\n%s", o)
			}
		})
	}
}
