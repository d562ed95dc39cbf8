package refine

import (
	"testing"

	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
)

// A limit the run reached is a proposal to raise it, and accepting it raises the profile's
// limit (never lowers one).
func TestRefineRaisesALimit(t *testing.T) {
	base := &policy.Profile{Metadata: policy.Metadata{Name: "x", Command: []string{"x"}, Runs: 1}, Limits: policy.Limits{Pids: 64, MemoryMiB: 300}}
	g := policy.LimitGrant(policy.SectionLimitPids, 130)
	rep := &report.Report{Denials: []report.Denial{{Kind: report.KindLimit, What: "pids limit 64 reached", Exe: "(run)", Count: 3,
		Suggest: g.String(), Change: &g, Risk: policy.RiskLow}}}
	props, err := Propose(base, rep, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(props) != 1 || props[0].Exact.Section != policy.SectionLimitPids {
		t.Fatalf("proposals %+v, want one raising limits.pids", props)
	}
	out, err := Apply(base, []Decision{{Proposal: props[0], Choice: AllowExact}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Limits.Pids != 130 || out.Limits.MemoryMiB != 300 {
		t.Errorf("limits after refine %+v, want pids 130, memory unchanged", out.Limits)
	}
}
