package policy

import "testing"

// A set-id mode on a mode argument is critical to allow (issue 23 item 3), a plain one is not.
func TestSetIDModeRisk(t *testing.T) {
	if r, _ := ArgValueRisk("fchmodat", 2, 0o4755); r != RiskCritical {
		t.Errorf("fchmodat 04755: %v, want critical", r)
	}
	if r, _ := ArgValueRisk("fchmodat", 2, 0o755); r == RiskCritical {
		t.Errorf("fchmodat 0755: %v, want below critical", r)
	}
	if r, _ := ArgAnyRisk("openat", 3); r != RiskCritical {
		t.Errorf("any openat mode: %v, want critical", r)
	}
}
