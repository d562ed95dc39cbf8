package synth

import (
	"strings"

	"github.com/sysprof/sysprof/paths"
)

// expandOr is paths.Expand, or p itself when p cannot be expanded with ctx (a pattern over a
// variable ctx lacks then covers no host path).
func expandOr(p string, ctx map[string]string) string {
	if x, err := paths.Expand(p, ctx); err == nil {
		return x
	}
	return p
}

// parentDir is path.Dir for portable paths, "" at the top ("/" and "$WORKDIR" have no parent
// inside the profile).
func parentDir(p string) string {
	i := strings.LastIndexByte(p, '/')
	switch {
	case i < 0 || p == "/":
		return ""
	case i == 0:
		return "/"
	}
	return p[:i]
}

// depth counts components: "/" is 0, "/usr" 1, "$HOME" 1, "$HOME/.cache" 2.
func depth(p string) int {
	if p == "/" || p == "" {
		return 0
	}
	return strings.Count(strings.TrimPrefix(p, "/"), "/") + 1
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
