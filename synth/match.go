package synth

import (
	"strconv"
	"strings"

	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/trace"
)

// Access is one file access to check against a profile: Kind is a trace.Access* kind and Path
// an absolute host path. PID, when set, is the pid of the process making the access, so that
// /proc/<PID>/... is matched as /proc/self/....
type Access struct {
	Kind string
	Path string
	PID  int
}

// Allows reports whether profile p, expanded with ctx (variable values without the `$`), lets
// access a succeed as far as the filesystem policy goes. It is the plain-Go model of what the
// enforcer builds:
//
//   - a hidden path (or anything below it) is never allowed, whatever else covers it;
//   - read needs a read or write rule covering the path (write implies read);
//   - list needs a list, read or write rule covering the directory;
//   - write, create and delete need a write rule covering the path;
//   - exec needs an exec rule covering the path;
//   - metadata (stat, access) needs only that the path is not hidden: it is visible.
//
// A rule covers its path and everything below it; `*` matches within one component and a `**`
// component matches any number of components. A rule whose variable ctx does not define
// covers nothing.
func Allows(p *policy.Profile, ctx map[string]string, a Access) bool {
	target := a.Path
	if a.PID > 0 {
		pre := "/proc/" + strconv.Itoa(a.PID)
		if target == pre || strings.HasPrefix(target, pre+"/") {
			target = "/proc/self" + target[len(pre):]
		}
	}
	covered := func(rules []policy.PathRule) bool {
		for _, r := range rules {
			pat := Expand(r.Path, ctx)
			if strings.HasPrefix(pat, "$") {
				continue
			}
			if Covers(pat, target) {
				return true
			}
		}
		return false
	}
	fs := &p.Filesystem
	if covered(fs.Hidden) {
		return false
	}
	switch a.Kind {
	case trace.AccessMetadata:
		return true
	case trace.AccessRead:
		return covered(fs.Read) || covered(fs.Write)
	case trace.AccessList:
		return covered(fs.List) || covered(fs.Read) || covered(fs.Write)
	case trace.AccessWrite, trace.AccessCreate, trace.AccessDelete:
		return covered(fs.Write)
	case trace.AccessExec:
		return covered(fs.Exec)
	}
	return false
}

// Hidden reports whether path (absolute) is hidden by p under ctx.
func Hidden(p *policy.Profile, ctx map[string]string, path string) bool {
	for _, r := range p.Filesystem.Hidden {
		if pat := Expand(r.Path, ctx); !strings.HasPrefix(pat, "$") && Covers(pat, path) {
			return true
		}
	}
	return false
}

// Covers reports whether rule pattern pat covers path p: p matches pat, or lies below a path
// that does. Both are compared component by component; in pat `*` matches any run of
// characters within a component and a `**` component matches zero or more components. p is
// taken literally (a `*` in p is only matched by a `*` or a glob in pat), so Covers also
// answers whether one rule covers another.
func Covers(pat, p string) bool {
	if pat == p {
		return true
	}
	// A variable stands for a whole prefix: $HOME/x is only covered by rules starting with
	// $HOME itself (or by /), never by a glob such as /*/x.
	if pv, vv := strings.HasPrefix(pat, "$"), strings.HasPrefix(p, "$"); pat != "/" && (pv || vv) {
		if !pv || !vv || firstComp(pat) != firstComp(p) {
			return false
		}
	}
	if strings.IndexByte(pat, '*') < 0 { // fast path: a plain prefix on a component boundary
		return pat == "/" || len(p) > len(pat) && p[len(pat)] == '/' && p[:len(pat)] == pat
	}
	pi, qi := compStart(pat), compStart(p)
	return coverComps(pat, pi, p, qi)
}

// The matcher walks component lists in place instead of splitting them: a list is a path and
// the offset of its first component (compStart), and an offset past the end (len+1) is the
// empty list. "/" is the empty list, "" the list holding one empty component, and one leading
// slash is not a component: the lists strings.Split(strings.TrimPrefix(p, "/"), "/") would give.

// compStart is the offset of the first component of p.
func compStart(p string) int {
	switch {
	case p == "/":
		return 2
	case strings.HasPrefix(p, "/"):
		return 1
	}
	return 0
}

// comp returns the component of p at offset i and the offset of the next one.
func comp(p string, i int) (string, int) {
	j := strings.IndexByte(p[i:], '/')
	if j < 0 {
		return p[i:], len(p) + 1
	}
	return p[i : i+j], i + j + 1
}

func coverComps(pat string, pi int, p string, qi int) bool {
	for pi <= len(pat) {
		pc, pnext := comp(pat, pi)
		if pc == "**" {
			for {
				if coverComps(pat, pnext, p, qi) {
					return true
				}
				if qi > len(p) {
					return false
				}
				_, qi = comp(p, qi)
			}
		}
		if qi > len(p) {
			return false
		}
		qc, qnext := comp(p, qi)
		if !globMatch(pc, qc) {
			return false
		}
		pi, qi = pnext, qnext
	}
	return true
}

// globMatch matches one component against a pattern whose only metacharacter is `*`.
func globMatch(pat, s string) bool {
	star := strings.IndexByte(pat, '*')
	if star < 0 {
		return pat == s
	}
	// The parts between stars: the first is a prefix, the middle ones are found leftmost in
	// order, the last is a suffix of what remains.
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

func firstComp(p string) string {
	if i := strings.IndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return p
}
