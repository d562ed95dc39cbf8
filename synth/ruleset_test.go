package synth

import (
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestAddRule checks a rule set built by addRule (its rules, and its paths in order), which keeps the paths greater than all
// before it in order instead of in its map, against a plain map: on sequences of paths mostly
// in order, with repeats, paths out of order and rules put with set.
func TestAddRule(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	names := []string{"", "/a", "/a/b", "/a/b-c", "/a/b/c", "/b", "$X/y", "/a/b/d", "/c"}
	for iter := 0; iter < 2000; iter++ {
		s := newState(Options{})
		set := newRuleSet()
		want := map[string]prov{}
		var order []string
		for n := r.IntN(30); n > 0; n-- {
			p := names[r.IntN(len(names))]
			if r.IntN(3) > 0 && len(order) > 0 { // mostly sorted: a path after the last one
				p = slices.Max(order) + names[r.IntN(len(names))]
			}
			if r.IntN(50) == 0 {
				set.set("/unordered", &pathRule{files: 1})
				want["/unordered"] = prov{}
			}
			pr := prov{by: names[r.IntN(len(names))], rank: r.IntN(3), seen: 1}
			s.addRule(set, p, pr, "")
			if _, ok := want[p]; !ok {
				order = append(order, p)
			}
			want[p] = earliest(want[p], pr)
		}
		if set.len() != len(want) {
			t.Fatalf("iteration %d: %d rules, want %d", iter, set.len(), len(want))
		}
		for p, pr := range want {
			if r := set.get(p); r == nil || r.prov != pr {
				t.Fatalf("iteration %d: get(%q) = %v, want %v", iter, p, r, pr)
			}
		}
		// paths merges the ordered part with the map's (before byPath makes one map of both).
		if ps, wantPs := set.paths(), slices.Sorted(maps.Keys(want)); !slices.Equal(ps, wantPs) {
			t.Fatalf("iteration %d: paths() = %q, want %q", iter, ps, wantPs)
		}
		got := map[string]prov{}
		for p, rule := range set.byPath() {
			got[p] = rule.prov
		}
		if !maps.Equal(got, want) {
			t.Fatalf("iteration %d: addRule made %v, want %v", iter, got, want)
		}
	}
}
