package synth

import "github.com/sysprof/sysprof/paths"

// patternSet indexes rule patterns by their literal prefix (the components before the first
// one with a glob), so that the patterns that can cover a path, or be covered by it, are found
// without trying every one. Covers compares component by component and a component without a
// glob matches only itself, so a pattern covers only paths whose components start with its
// literal prefix; a pattern without one ("/", "", a glob or `**` first) is always a candidate.
//
// Components are counted as Covers counts them: one leading slash is not a component.
type patternSet struct {
	pats   []string
	lits   []string         // literal prefix of each pattern, without the leading slash
	always []int            // indexes of patterns without a literal first component
	byKey  map[string][]int // first component → indexes, ascending
	// The last lookup: paths come sorted, so the next one usually has the same first component.
	lastKey  string
	lastList []int
}

func newPatternSet(pats []string) *patternSet {
	ps := &patternSet{pats: pats, lits: make([]string, len(pats)), byKey: map[string][]int{}}
	for i, p := range pats {
		ps.lits[i] = literalPrefix(p)
		if k, ok := plainFirst(p); ok {
			ps.byKey[k] = append(ps.byKey[k], i)
		} else {
			ps.always = append(ps.always, i)
		}
	}
	return ps
}

// plainFirst returns the first component of p (the first element of
// strings.Split(strings.TrimPrefix(p, "/"), "/"), "/" for the path "/") and whether it is a
// plain, non-empty name without globs.
func plainFirst(p string) (string, bool) {
	if p == "/" {
		return "/", false
	}
	k, _ := paths.Component(p, paths.ComponentStart(p))
	return k, k != "" && !paths.HasGlob(k)
}

// literalPrefix returns the components of pattern p before its first one with a glob, joined,
// without the leading slash ("" when the first has one, or p is "/" or "").
func literalPrefix(p string) string {
	if p == "/" {
		return ""
	}
	i := paths.ComponentStart(p)
	end := i
	for j := i; j <= len(p); {
		c, next := paths.Component(p, j)
		if paths.HasGlob(c) {
			break
		}
		end = min(next-1, len(p))
		j = next
	}
	if end <= i {
		return ""
	}
	return p[i:end]
}

// under reports whether the component list of x starts with the components lit (literal, no
// leading slash; "" is the empty list, which every x starts with).
func under(lit, x string) bool {
	return lit == "" || paths.Within(x[min(paths.ComponentStart(x), len(x)):], lit)
}

// firstCovering returns the lowest index i, among the patterns that can cover x (a superset of
// those that do), for which match(i) is true, or -1.
func (ps *patternSet) firstCovering(x string, match func(i int) bool) int {
	best := -1
	scan := func(list []int) {
		for _, i := range list {
			if best >= 0 && i >= best {
				return
			}
			if under(ps.lits[i], x) && match(i) {
				best = i
				return
			}
		}
	}
	scan(ps.always)
	if k, ok := plainFirst(x); ok {
		// Without a plain first component (/, "", a glob) x is covered only by the always
		// candidates: a plain name matches only itself.
		if k != ps.lastKey {
			ps.lastKey, ps.lastList = k, ps.byKey[k]
		}
		scan(ps.lastList)
	}
	return best
}

// coversNoneUnder reports whether no pattern can cover a path whose first component is the
// plain name k (plainFirst): none starts with k, and none with a glob.
func (ps *patternSet) coversNoneUnder(k string) bool {
	return len(ps.always) == 0 && len(ps.byKey[k]) == 0
}

// touches reports whether a rule on d would reach into one of the patterns: d lies in one or
// contains one (touchesStore over the set).
func (ps *patternSet) touches(d string) bool {
	k, ok := plainFirst(d)
	if !ok {
		return touchesStore(d, ps.pats)
	}
	dl := literalPrefix(d)
	for _, list := range [][]int{ps.always, ps.byKey[k]} {
		for _, i := range list {
			st := ps.pats[i]
			if under(ps.lits[i], d) && paths.Covers(st, d) || under(dl, st) && paths.Covers(d, st) {
				return true
			}
		}
	}
	return false
}
