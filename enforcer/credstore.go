package enforcer

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// hideAround returns what to hide of credential store store (a host path or pattern) so that
// the paths in keep (host paths or patterns inside it) stay reachable and nothing else of it
// does: for a directory, every entry not on the way to a kept path, recursively; for a
// pattern, every match that is not kept; a store that does not exist is hidden whole.
func hideAround(store string, keep []string) []string {
	var kept []string
	for _, k := range keep {
		if strings.ContainsAny(k, "*?[") {
			m, _ := globMatches(k, globLimit, &dirListings{})
			kept = append(kept, m...)
		} else {
			kept = append(kept, filepath.Clean(k))
		}
	}
	leadsTo := func(p string) bool {
		return slices.ContainsFunc(kept, func(k string) bool { return strings.HasPrefix(k, p+"/") })
	}
	var out []string
	var visit func(p string, dir bool)
	visit = func(p string, dir bool) {
		switch {
		case slices.Contains(kept, p):
		case dir && leadsTo(p):
			ents, err := os.ReadDir(p) // a symlink on the way is no directory here: hidden whole
			if err != nil {
				out = append(out, p)
				return
			}
			for _, e := range ents {
				visit(filepath.Join(p, e.Name()), e.IsDir())
			}
		default:
			out = append(out, literalPattern(p))
		}
	}
	if strings.ContainsAny(store, "*?[") {
		m, _ := globMatches(store, globLimit, &dirListings{})
		for _, p := range m {
			st, err := os.Lstat(p)
			visit(p, err == nil && st.IsDir())
		}
		return out
	}
	st, err := os.Stat(store) // the store itself may be a link (~/.aws -> elsewhere)
	if err != nil || !st.IsDir() {
		return []string{store} // absent (hidden by name) or a file a rule names from below
	}
	visit(store, true)
	return out
}

// literalPattern returns p as a hidden rule that compile hides as p: a name holding glob
// characters becomes a pattern with '?' in their place (which matches it).
func literalPattern(p string) string {
	if !strings.ContainsAny(p, "*?[") {
		return p
	}
	return strings.Map(func(r rune) rune {
		if r == '*' || r == '?' || r == '[' {
			return '?'
		}
		return r
	}, p)
}
