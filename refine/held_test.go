package refine

import (
	"testing"

	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
)

// A change the run's changeset held (issue 22) is a write rule to accept like any denial; a
// dangerous change no rule may allow, and a learned change held only by --apply none, propose
// nothing. Accepted, the rule makes the next run's change learned: nothing proposed again.
func TestHeldChangesAreProposedAsWriteRules(t *testing.T) {
	r := rep()
	g := policy.Grant{Section: policy.SectionWrite, Item: "$WORKDIR/newfile.txt"}
	learned := policy.Grant{Section: policy.SectionWrite, Item: "$WORKDIR/target/x"}
	r.Changes = &report.Changes{Run: "20261203-abcd", Held: []report.Change{
		{Path: "/home/alice/src/hello-rs/newfile.txt", Op: "create", Type: "file", Class: "held", State: report.ChangeHeld, Reason: "no learned write rule covers it", Change: &g, Risk: policy.RiskLow},
		{Path: "/home/alice/src/hello-rs/evil", Op: "create", Type: "file", Class: "dangerous", State: report.ChangeHeld, Reason: "set-user-ID bit", Risk: policy.RiskCritical},
		{Path: "/home/alice/src/hello-rs/target/x", Op: "create", Type: "file", Class: "learned", State: report.ChangeHeld, Change: &learned},
	}}
	props, err := Propose(base(), r, aliceEnv)
	if err != nil {
		t.Fatal(err)
	}
	if len(props) != 1 || props[0].Exact.Grant.String() != g.String() || props[0].Default != AllowExact {
		t.Fatalf("proposals %+v: want exactly %s, accepted by default", props, g)
	}
	out, err := Apply(base(), []Decision{{props[0], AllowExact}})
	if err != nil {
		t.Fatal(err)
	}
	again, err := Propose(out, r, aliceEnv)
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != 0 {
		t.Errorf("after accepting the held change, still proposed: %+v", again)
	}
}
