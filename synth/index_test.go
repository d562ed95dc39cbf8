package synth

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/paths"
)

// TestPatternSet checks the index against trying every pattern: firstCovering finds the first
// pattern that covers a path, touches agrees with touchesStore.
func TestPatternSet(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	pieces := []string{"/", "/", "/", "a", "b", "ab", "*", "**", "$H", "$HX", ".env", "*b", "a*", ""}
	gen := func() string {
		var b strings.Builder
		for n := r.IntN(6); n >= 0; n-- {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		return b.String()
	}
	for iter := 0; iter < 3000; iter++ {
		pats := make([]string, r.IntN(12))
		for i := range pats {
			pats[i] = gen()
		}
		ps := newPatternSet(pats)
		for k := 0; k < 50; k++ {
			x := gen()
			if k%3 == 0 && len(pats) > 0 {
				x = pats[r.IntN(len(pats))] + gen()
			}
			want := -1
			for i, p := range pats {
				if paths.Covers(p, x) {
					want = i
					break
				}
			}
			if got := ps.firstCovering(x, func(i int) bool { return paths.Covers(pats[i], x) }); got != want {
				t.Fatalf("patterns %q: firstCovering(%q) = %d, want %d", pats, x, got, want)
			}
			if got, want := ps.touches(x), touchesStore(x, pats); got != want {
				t.Fatalf("patterns %q: touches(%q) = %v, want %v", pats, x, got, want)
			}
		}
	}
}
