package refine

import (
	"os"
	"strings"
	"sync"

	"github.com/sysprof/sysprof/paths"
)

// Portable turns a host path from a report into the portable form a profile stores; see
// paths.Portable. On a merged-/usr host a path through /bin, /sbin or /lib* takes its /usr
// form first (usrForm): learn records what the kernel resolved (/usr/bin/ls), a denial the
// path the tool passed (/bin/ls), and one binary must not become two rows.
func Portable(p string, env map[string]string) string { return paths.Portable(usrForm(p), env) }

// usrMergedDirs are the top-level directories a merged-/usr host links into /usr.
var usrMergedDirs = []string{"bin", "sbin", "lib", "lib32", "lib64", "libx32"}

// UsrMerged reports whether /DIR is this host's link to /usr/DIR. Tests replace it.
var UsrMerged = func(dir string) bool { return hostUsrMerged()[dir] }

var hostUsrMerged = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{}
	for _, d := range usrMergedDirs {
		if t, err := os.Readlink("/" + d); err == nil && (t == "usr/"+d || t == "/usr/"+d) {
			m[d] = true
		}
	}
	return m
})

// usrForm is p with a merged-/usr alias (/bin/ls on a host where /bin is usr/bin) replaced by
// the /usr path it names (/usr/bin/ls): the canonical form, which Landlock enforces for both
// spellings there (it follows the link). Anything else is returned as is.
func usrForm(p string) string {
	rest, ok := strings.CutPrefix(p, "/")
	if !ok {
		return p
	}
	dir, _, _ := strings.Cut(rest, "/")
	for _, d := range usrMergedDirs {
		if dir == d && UsrMerged(d) {
			return "/usr/" + rest
		}
	}
	return p
}
