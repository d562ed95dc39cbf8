package policy

import "testing"

// A fresh learn that turned the private /tmp off has it on its review list (Diff against
// nothing sees no change), and so does a merge that turns it off.
func TestReviewPrivateTmpOff(t *testing.T) {
	off := &Profile{APIVersion: APIVersion, Kind: Kind}
	on := &Profile{APIVersion: APIVersion, Kind: Kind, Filesystem: Filesystem{PrivateTmp: true}}
	for _, c := range []struct {
		name     string
		old, new *Profile
		want     bool
	}{{"fresh, off", nil, off, true}, {"fresh, on", nil, on, false}, {"merged off", on, off, true}, {"stays on", on, on, false}} {
		got := false
		for _, ch := range Review(c.old, c.new) {
			got = got || ch.Section == SectionPrivateTmp
		}
		if got != c.want {
			t.Errorf("%s: privateTmp on the review list = %v, want %v", c.name, got, c.want)
		}
	}
}
