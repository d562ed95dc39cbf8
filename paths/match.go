package paths

import (
	"os"
	"path"
	"slices"
	"strings"
)

// MatchComponent matches one path component s against pattern pat: `*` matches any run of
// characters, `?` one character, `[...]` a class (path.Match syntax); a component equal to the
// pattern always matches, so a name that holds a bracket matches itself.
func MatchComponent(pat, s string) bool {
	if pat == s {
		return true
	}
	if !HasGlob(pat) {
		return false
	}
	if strings.ContainsAny(pat, "?[\\") {
		ok, err := path.Match(pat, s)
		return err == nil && ok
	}
	// Only stars, the common case: the parts between them are a prefix, middle parts found
	// leftmost in order, and a suffix of what remains.
	star := strings.IndexByte(pat, '*')
	if !strings.HasPrefix(s, pat[:star]) {
		return false
	}
	s = s[star:]
	rest := pat[star+1:]
	for {
		next := strings.IndexByte(rest, '*')
		if next < 0 {
			return len(s) >= len(rest) && strings.HasSuffix(s, rest)
		}
		mid := rest[:next]
		i := strings.Index(s, mid)
		if i < 0 {
			return false
		}
		s = s[i+len(mid):]
		rest = rest[next+1:]
	}
}

// HasGlob reports whether p holds a glob metacharacter (`*`, `?` or `[`); a pattern without
// one matches only itself.
func HasGlob(p string) bool { return strings.ContainsAny(p, "*?[") }

// Literal returns the pattern that matches exactly the path component name: name itself when
// it holds no glob metacharacter, else name with `*`, `?`, `[` and `\` escaped by a backslash
// (path.Match's escape, which MatchComponent, Covers and Glob honour). A file a tool named `*`
// or `**` under .git/hooks is then a rule for that one file, never for every hook. Braces need
// nothing: the matcher has no alternation.
func Literal(name string) string {
	if !HasGlob(name) {
		return name
	}
	var b strings.Builder
	b.Grow(len(name) + 4)
	for i := 0; i < len(name); i++ {
		switch c := name[i]; c {
		case '*', '?', '[', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// Covers reports whether rule pattern pat covers path p: p matches pat, or lies below a path
// that does. Both are compared component by component (MatchComponent); a `**` component in
// pat matches zero or more components. Both may be portable ($HOME/x) or absolute: a variable
// stands for a whole prefix, so $HOME/x is only covered by rules starting with $HOME itself or
// by "/", never by a glob such as /*/x. p is taken literally (a `*` in p is only matched by a
// `*` or a glob in pat), so Covers also answers whether one rule covers another.
func Covers(pat, p string) bool {
	if pat == p {
		return true
	}
	if pv, vv := strings.HasPrefix(pat, "$"), strings.HasPrefix(p, "$"); pat != "/" && (pv || vv) {
		if !pv || !vv || firstComp(pat) != firstComp(p) {
			return false
		}
	}
	if !HasGlob(pat) { // a plain prefix on a component boundary
		return pat == "/" || len(p) > len(pat) && p[len(pat)] == '/' && p[:len(pat)] == pat
	}
	return coverComps(pat, ComponentStart(pat), p, ComponentStart(p))
}

// The matcher walks component lists in place instead of splitting them: a list is a path and
// the offset of its first component (compStart), and an offset past the end (len+1) is the
// empty list. "/" is the empty list, "" the list holding one empty component, and one leading
// slash is not a component.

// ComponentStart is the offset of p's first component, for walking p with Component without
// splitting it.
func ComponentStart(p string) int {
	switch {
	case p == "/":
		return 2
	case strings.HasPrefix(p, "/"):
		return 1
	}
	return 0
}

// Component returns the component of p at offset i and the offset of the next one (past the
// end, len(p)+1, when it was the last).
func Component(p string, i int) (string, int) {
	j := strings.IndexByte(p[i:], '/')
	if j < 0 {
		return p[i:], len(p) + 1
	}
	return p[i : i+j], i + j + 1
}

func coverComps(pat string, pi int, p string, qi int) bool {
	for pi <= len(pat) {
		pc, pnext := Component(pat, pi)
		if pc == "**" {
			for {
				if coverComps(pat, pnext, p, qi) {
					return true
				}
				if qi > len(p) {
					return false
				}
				_, qi = Component(p, qi)
			}
		}
		if qi > len(p) {
			return false
		}
		qc, qnext := Component(p, qi)
		if !MatchComponent(pc, qc) {
			return false
		}
		pi, qi = pnext, qnext
	}
	return true
}

func firstComp(p string) string {
	if i := strings.IndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return p
}

// Lister lists directories for Glob; any nil field takes its plain default.
type Lister struct {
	// Read returns dir's entries sorted by name (os.ReadDir; nil when it cannot be read).
	Read func(dir string) []os.DirEntry
	// Listed reports whether dir was read already (reading it again costs nothing).
	Listed func(dir string) bool
	// Lacks reports whether dir was read whole and holds no entry name (no lstat needed).
	Lacks func(dir, name string) bool
	// Prefetch hints that dir will be read soon.
	Prefetch func(dir string)
}

// Glob returns the existing host paths matching pattern (absolute, clean), whose components
// may be globs (MatchComponent) or `**` (any number of directories), sorted, and whether it
// stopped reading directories after limit entries (matches further down are then missing). It
// goes breadth first, so that what it reads first is what lies nearest: a project's own .env
// before those deep in node_modules.
func Glob(pattern string, limit int, l Lister) ([]string, bool) {
	if l.Read == nil {
		l.Read = func(dir string) []os.DirEntry { e, _ := os.ReadDir(dir); return e }
	}
	if l.Listed == nil {
		l.Listed = func(string) bool { return false }
	}
	if l.Lacks == nil {
		l.Lacks = func(string, string) bool { return false }
	}
	if l.Prefetch == nil {
		l.Prefetch = func(string) {}
	}
	type step struct {
		dir   string
		parts []string // what is left of the pattern below dir
	}
	queue := []step{{"/", strings.Split(strings.TrimPrefix(pattern, "/"), "/")}}
	var out []string
	seen, cut := 0, false
	list := func(dir string) ([]os.DirEntry, bool) {
		if !l.Listed(dir) && seen > limit {
			return nil, false
		}
		ents := l.Read(dir)
		seen += len(ents)
		return ents, true
	}
	join := path.Join
	for i := 0; i < len(queue); i++ {
		dir, parts := queue[i].dir, queue[i].parts
		if len(parts) == 0 {
			if _, err := os.Lstat(dir); err == nil {
				out = append(out, dir)
			}
			continue
		}
		part := parts[0]
		switch {
		case part == "**":
			ents, ok := list(dir) // first: the zero-directory step below can use it
			if !ok {
				cut = true
				continue
			}
			queue = append(queue, step{dir, parts[1:]}) // zero directories
			for _, e := range ents {
				if e.IsDir() {
					sub := join(dir, e.Name())
					queue = append(queue, step{sub, parts})
					if seen <= limit {
						l.Prefetch(sub)
					}
				}
			}
		case HasGlob(part):
			ents, ok := list(dir)
			if !ok {
				cut = true
				continue
			}
			for _, e := range ents {
				if MatchComponent(part, e.Name()) {
					queue = append(queue, step{join(dir, e.Name()), parts[1:]})
				}
			}
		default:
			if len(parts) == 1 && l.Lacks(dir, part) {
				continue // no lstat needed (one a directory for **/.env)
			}
			queue = append(queue, step{join(dir, part), parts[1:]})
		}
		queue[i] = step{} // let the strings go
	}
	slices.Sort(out)
	return slices.Compact(out), cut
}
