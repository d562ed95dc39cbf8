package paths

import "strings"

// Within reports whether p equals root or lies beneath it, by path components: "/a/b" is within
// "/a", "/ab" is not. Root "/" holds every path, root "" none. Both are clean (no trailing
// slash); portable forms ($HOME/...) compare the same way. Globs are not expanded: Covers is
// for rules.
func Within(p, root string) bool {
	switch root {
	case "":
		return false
	case "/":
		return true
	}
	return below(p, root)
}

// CoveredBy reports whether p is one of roots or lies beneath one, by path components, except
// that a root "/" covers only "/" itself: the enforcer lists / beside its subtrees and treats it
// apart (topLevel keeps /a beside /; a write stage on / is refused while /a is still staged).
// Use Within where / means everything.
func CoveredBy(p string, roots []string) bool {
	for _, r := range roots {
		if r != "" && (r == "/" && p == "/" || below(p, r)) {
			return true
		}
	}
	return false
}

func below(p, root string) bool {
	return p == root || len(p) > len(root) && p[len(root)] == '/' && strings.HasPrefix(p, root)
}
