package policy

import "testing"

// A new resolve-only name is a low-risk widening (enforce would answer NXDOMAIN without it);
// one dropped narrows.
func TestDiffResolveNames(t *testing.T) {
	old := &Profile{Network: Network{Resolve: []Endpoint{{Endpoint: "a.example"}}}}
	cur := &Profile{Network: Network{Resolve: []Endpoint{{Endpoint: "b.example"}}}}
	var added, removed bool
	for _, c := range Diff(old, cur) {
		if c.Section != SectionResolve {
			continue
		}
		switch {
		case c.Item == "b.example" && c.Widens && c.Risk == RiskLow:
			added = true
		case c.Item == "a.example" && !c.Widens:
			removed = true
		default:
			t.Errorf("unexpected change %+v", c)
		}
	}
	if !added || !removed {
		t.Errorf("added %v removed %v: %+v", added, removed, Diff(old, cur))
	}
}

// A name the old profile connects to is answered already: only resolving it now is no
// widening.
func TestDiffResolveNameConnectedBefore(t *testing.T) {
	old := &Profile{Network: Network{Connect: []Endpoint{{Endpoint: "a.example:443", Proto: "tcp"}}}}
	cur := &Profile{Network: Network{Resolve: []Endpoint{{Endpoint: "a.example"}}}}
	for _, c := range Diff(old, cur) {
		if c.Widens {
			t.Errorf("widening %+v", c)
		}
	}
}
