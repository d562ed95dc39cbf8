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
	var out []string
	var walk func(dir string)
	walk = func(dir string) {
		ents, err := os.ReadDir(dir)
		if err != nil {
			out = append(out, dir)
			return
		}
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			switch {
			case slices.Contains(kept, p):
			case e.IsDir() && slices.ContainsFunc(kept, func(k string) bool { return strings.HasPrefix(k, p+"/") }):
				walk(p)
			default:
				out = append(out, p)
			}
		}
	}
	if strings.ContainsAny(store, "*?[") {
		m, _ := globMatches(store, globLimit, &dirListings{})
		for _, p := range m {
			switch st, err := os.Lstat(p); {
			case slices.Contains(kept, p):
			case err == nil && st.IsDir() && slices.ContainsFunc(kept, func(k string) bool { return strings.HasPrefix(k, p+"/") }):
				walk(p)
			default:
				out = append(out, p)
			}
		}
		return out
	}
	if st, err := os.Lstat(store); err != nil || !st.IsDir() {
		return []string{store} // absent (hidden by name) or a file the rule names from below
	}
	walk(store)
	return out
}
