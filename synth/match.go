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
	if !strings.Contains(pat, "*") { // fast path: a plain prefix on a component boundary
		return pat == "/" || strings.HasPrefix(p, pat+"/")
	}
	return coverComps(splitPath(pat), splitPath(p))
}

func splitPath(p string) []string {
	if p == "/" {
		return nil
	}
	return strings.Split(strings.TrimPrefix(p, "/"), "/")
}

func coverComps(pat, p []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(p); i++ {
				if coverComps(pat[1:], p[i:]) {
					return true
				}
			}
			return false
		}
		if len(p) == 0 || !globMatch(pat[0], p[0]) {
			return false
		}
		pat, p = pat[1:], p[1:]
	}
	return true
}

// globMatch matches one component against a pattern whose only metacharacter is `*`.
func globMatch(pat, s string) bool {
	if !strings.Contains(pat, "*") {
		return pat == s
	}
	parts := strings.Split(pat, "*")
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, mid := range parts[1 : len(parts)-1] {
		i := strings.Index(s, mid)
		if i < 0 {
			return false
		}
		s = s[i+len(mid):]
	}
	return len(s) >= len(last) && strings.HasSuffix(s, last)
}

func firstComp(p string) string {
	if i := strings.IndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return p
}
