package paths

import (
	"slices"
	"testing"
)

// TestCompanions: man's col comes from man's own directory; a tool with none has none.
func TestCompanions(t *testing.T) {
	if got := Companions("/usr/bin/man"); !slices.Equal(got, []string{"/usr/bin/col"}) {
		t.Errorf("Companions(/usr/bin/man) = %v, want /usr/bin/col", got)
	}
	for _, p := range []string{"/usr/bin/git", "/usr/bin/manx", "$WORKDIR/man/x"} {
		if got := Companions(p); len(got) != 0 {
			t.Errorf("Companions(%s) = %v, want none", p, got)
		}
	}
}
