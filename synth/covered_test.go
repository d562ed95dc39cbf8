package synth

import (
	"slices"
	"testing"
)

// dropCovered walks the set in order and keeps only the answers along the last directory: a
// sibling that sorts between a directory and its children ("/a/b-c" between "/a/b" and
// "/a/b/x", '-' < '/') must not make "/a/b/x" uncovered.
func TestDropCoveredOrder(t *testing.T) {
	set := newRuleSet()
	for _, p := range []string{"/", "/a/b", "/a/b-c", "/a/b.d/y", "/a/b/x", "/a/b/x/z", "/c/*/d", "/c/e/d/f", "$HOME/k", "$HOME/k-1/j", "$HOME/k/l", "rel"} {
		set.set(p, &pathRule{prov: prov{by: "x"}, files: 1})
	}
	also := map[string]*pathRule{"$HOME/k-1": {prov: prov{by: "y"}}}
	if n := dropCovered(set, also); n != 9 {
		t.Errorf("dropped %d, want 9", n)
	}
	if got, want := set.paths(), []string{"$HOME/k", "/", "rel"}; !slices.Equal(got, want) {
		t.Errorf("kept %q, want %q", got, want)
	}

	set = newRuleSet()
	for _, p := range []string{"/a/b", "/a/b-c", "/a/b.d/y", "/a/b/x", "/a/b/x/z", "/c/*/d", "/c/e/d/f"} {
		set.set(p, &pathRule{prov: prov{by: "x"}, files: 1})
	}
	if n := dropCovered(set, nil); n != 3 {
		t.Errorf("dropped %d, want 3", n)
	}
	if got, want := set.paths(), []string{"/a/b", "/a/b-c", "/a/b.d/y", "/c/*/d"}; !slices.Equal(got, want) {
		t.Errorf("kept %q, want %q", got, want)
	}
}
