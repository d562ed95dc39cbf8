package enforcer

import (
	"testing"

	"github.com/sysprof/sysprof/policy"
)

// What enforce does about a per-binary rule's binary the profile's writes reach, as show says
// it: a directory it lies in is bound writable around it (the binary is bound read-only), a
// rule naming the file itself (exactly or by a glob) keeps it writable (said); the rest is
// neither.
func TestRuleBinaryWrites(t *testing.T) {
	for _, c := range []struct {
		writes []string
		want   string
	}{
		{nil, ""},
		{[]string{"$WORKDIR/out"}, ""},
		{[]string{"$WORKDIR/bin"}, "in a writable path: bound read-only under enforce"},
		{[]string{"$WORKDIR/bin/tool"}, "the profile writes that file: a program the run writes there passes as it"},
		{[]string{"$WORKDIR/bin/**"}, "the profile writes that file: a program the run writes there passes as it"},
		{[]string{"$WORKDIR/bin", "$WORKDIR/bin/t*"}, "the profile writes that file: a program the run writes there passes as it"},
	} {
		p := &policy.Profile{}
		for _, w := range c.writes {
			p.Filesystem.Write = append(p.Filesystem.Write, policy.PathRule{Path: w})
		}
		if got := RuleBinaryWrites(p, "$WORKDIR/bin/tool"); got != c.want {
			t.Errorf("writes %q: %q, want %q", c.writes, got, c.want)
		}
	}
}
