package paths

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// Split returns the variable name a portable path starts with ($NAME or ${NAME}, without the
// `$`) and the rest after it ("" or starting with "/"); ok is false when p does not start with
// a variable reference.
func Split(p string) (name, rest string, ok bool) {
	if !strings.HasPrefix(p, "$") {
		return "", "", false
	}
	s := p[1:]
	if strings.HasPrefix(s, "{") {
		end := strings.IndexByte(s, '}')
		if end < 0 {
			return "", "", false
		}
		return s[1:end], s[end+1:], true
	}
	end := strings.IndexFunc(s, func(r rune) bool {
		return !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	})
	if end < 0 {
		end = len(s)
	}
	return s[:end], s[end:], true
}

// Known reports whether p is absolute or starts with one of the path variables ($HOME or
// $HOME/...), the two forms a profile path may take.
func Known(p string) bool {
	if strings.HasPrefix(p, "/") {
		return true
	}
	name, rest, ok := Split(p)
	if !ok || !strings.HasPrefix(p, "$"+name) || rest != "" && rest[0] != '/' {
		return false
	}
	_, known := rank[name]
	return known
}

// Expand turns a portable path into a host path: a leading $VAR (or ${VAR}) is replaced by
// values[VAR] and the result cleaned. It fails when the variable has no value there, its value
// is not absolute, or p is neither absolute nor variable-relative. Globs (`*`, `**`) stay for
// the matcher.
func Expand(p string, values map[string]string) (string, error) {
	name, rest, ok := Split(p)
	if !ok {
		if strings.HasPrefix(p, "$") {
			return "", fmt.Errorf("path %q: unterminated ${", p)
		}
		if !path.IsAbs(p) {
			return "", fmt.Errorf("path %q is neither absolute nor $VAR-relative", p)
		}
		return path.Clean(p), nil
	}
	val := values[name]
	if val == "" {
		return "", fmt.Errorf("path %q: $%s is not set on this host: set %s in the environment sysprof runs in", p, name, name)
	}
	if !path.IsAbs(val) {
		return "", fmt.Errorf("path %q: $%s=%q is not absolute", p, name, val)
	}
	return path.Clean(val + rest), nil
}

// Root is a variable with its value on one host, a directory portable paths start from. Sub,
// when set, is where below the variable the directory stands (a worktree's linked git
// directory is $WORKDIR/.git: LinkedGitDirs).
type Root struct{ Name, Value, Sub string }

// Roots are the usable variables of one host, longest value first so that the longest prefix
// wins ($GOCACHE=/home/a/.cache/go-build beats $HOME=/home/a); among equal values the more
// specific name first.
type Roots []Root

// NewRoots keeps the path variables of values (names without the `$`) whose value is an
// absolute directory other than "/", and the work tree's linked git directories (as
// $WORKDIR/.git), longest first.
func NewRoots(values map[string]string) Roots {
	var rs Roots
	for _, v := range vars {
		val := values[v.Name]
		if val == "" {
			continue
		}
		c := path.Clean(val)
		if !path.IsAbs(c) || c == "/" {
			continue
		}
		rs = append(rs, Root{Name: v.Name, Value: c})
	}
	if values["WORKDIR"] != "" {
		for _, k := range []string{GitDirKey, GitCommonKey} {
			if c := path.Clean(values[k]); path.IsAbs(values[k]) && c != "/" {
				rs = append(rs, Root{Name: "WORKDIR", Value: c, Sub: ".git"})
			}
		}
	}
	slices.SortFunc(rs, func(a, b Root) int {
		if d := len(b.Value) - len(a.Value); d != 0 {
			return d
		}
		return rank[a.Name] - rank[b.Name]
	})
	return rs
}

// Cut finds the root abs lies at or below (abs clean and absolute): its name and the rest of
// abs after the root's value and its slash ("" when abs is the root itself), below the root's
// Sub.
func (rs Roots) Cut(abs string) (name, rest string, ok bool) {
	for _, r := range rs {
		if abs == r.Value {
			return r.Name, r.Sub, true
		}
		if len(abs) > len(r.Value) && abs[len(r.Value)] == '/' && abs[:len(r.Value)] == r.Value {
			rest = abs[len(r.Value)+1:]
			if r.Sub != "" {
				rest = r.Sub + "/" + rest
			}
			return r.Name, rest, true
		}
	}
	return "", "", false
}

// Portable rewrites an absolute host path into its variable form, the longest root first
// (/home/a/.cache/go-build/x → $GOCACHE/x); a path under no root, or not absolute, comes back
// cleaned or unchanged. Portable also globs random per-run names.
func (rs Roots) Portable(abs string) string {
	if !path.IsAbs(abs) {
		return abs
	}
	abs = path.Clean(abs)
	name, rest, ok := rs.Cut(abs)
	switch {
	case !ok:
		return abs
	case rest == "":
		return "$" + name
	}
	return "$" + name + "/" + rest
}
