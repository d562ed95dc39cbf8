package refine

import (
	"path"
	"slices"
	"strings"

	"github.com/sysprof/sysprof/synth"
)

// Portable rewrites an absolute host path from a report into the portable form profiles use:
// the longest prefix that is the value of one of synth.PathVars in env (keys without `$`)
// becomes that variable, and per-run random components become globs (synth.GlobComponent),
// the way learning writes paths. Paths under /proc, /sys and /dev keep their names, except
// that /proc/<pid> becomes /proc/self (the narrowest form that can match again: a pid is
// per-run) and /dev/pts/<n> becomes /dev/pts/*. A path in a credential store is not globbed:
// a reviewer must see exactly which secret was asked for. Portable or relative paths come
// back unchanged.
//
// synth has the same rules for traces (unexported); this applies them to one path.
func Portable(p string, env map[string]string) string {
	if p == "" || !path.IsAbs(p) {
		return p
	}
	p = path.Clean(p)
	comps := strings.Split(p[1:], "/")
	switch {
	case len(comps) >= 2 && comps[0] == "proc" && allDigits(comps[1]):
		comps[1] = "self"
		return "/" + strings.Join(comps, "/")
	case len(comps) == 3 && comps[0] == "dev" && comps[1] == "pts" && allDigits(comps[2]):
		return "/dev/pts/*"
	case comps[0] == "proc" || comps[0] == "sys" || comps[0] == "dev":
		return p
	}
	out, rest := p, ""
	best := ""
	for _, name := range synth.PathVars {
		v := env[name]
		if v == "" || !path.IsAbs(v) {
			continue
		}
		v = path.Clean(v)
		if v == "/" || len(v) <= len(best) {
			continue
		}
		if p == v || strings.HasPrefix(p, v+"/") {
			best, out, rest = v, "$"+name, strings.TrimPrefix(p[len(v):], "/")
		}
	}
	if best == "" {
		out, rest = "", p[1:]
	}
	if rest == "" {
		return out
	}
	parts := strings.Split(rest, "/")
	if credentialStore(out+"/"+rest) == "" {
		for i, c := range parts {
			parts[i] = synth.GlobComponent(c)
		}
	}
	return out + "/" + strings.Join(slices.Clip(parts), "/")
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
