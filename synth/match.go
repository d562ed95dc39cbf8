package synth

import (
	"slices"
	"strconv"
	"strings"

	"github.com/sysprof/sysprof/paths"
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
//   - read needs a read or write rule covering the path (write implies read), but for the
//     harmless devices and files every profile reads (baseReads: /dev/null, /dev/urandom, ...);
//   - list needs a list, read or write rule covering the directory;
//   - write, create and delete need a write rule covering the path; a write or create (an
//     open with O_CREAT: a shell's `>/dev/null`) of a base device (baseDevice: /dev/null,
//     /dev/zero, ...), which is there whatever the command does, needs none, a delete does;
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
		if paths.Within(target, pre) {
			target = "/proc/self" + target[len(pre):]
		}
	}
	covered := func(rules []policy.PathRule) bool {
		for _, r := range rules {
			pat := expandOr(r.Path, ctx)
			if strings.HasPrefix(pat, "$") {
				continue
			}
			if paths.Covers(pat, target) {
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
		return covered(fs.Read) || covered(fs.Write) || slices.Contains(baseReads, target)
	case trace.AccessList:
		return covered(fs.List) || covered(fs.Read) || covered(fs.Write)
	case trace.AccessWrite, trace.AccessCreate:
		return covered(fs.Write) || baseDevice(target)
	case trace.AccessDelete:
		return covered(fs.Write)
	case trace.AccessExec:
		return covered(fs.Exec)
	case trace.AccessMap:
		// A toolchain root stays mappable whole under enforce (see inToolchainRoot).
		for _, v := range paths.Vars() {
			if x := ctx[v.Name]; v.Role == paths.RoleToolchain && x != "" && paths.Within(target, x) {
				return true
			}
		}
		return covered(fs.Exec)
	}
	return false
}

// Hidden reports whether path (absolute) is hidden by p under ctx.
func Hidden(p *policy.Profile, ctx map[string]string, path string) bool {
	for _, r := range p.Filesystem.Hidden {
		if pat := expandOr(r.Path, ctx); !strings.HasPrefix(pat, "$") && paths.Covers(pat, path) {
			return true
		}
	}
	return false
}
