package policy

import (
	"slices"
	"testing"

	"github.com/sysprof/sysprof/paths"
)

// The user's preload of a system library brings its calls (family preload) and, with a private
// /tmp, the sandbox's own /dev/shm; a preload of anything else, or a profile learned --exact,
// gets nothing.
func TestWithUserPreload(t *testing.T) {
	libc := "/usr/lib/x86_64-linux-gnu/libc.so.6"
	if _, _, ok := paths.UserPreload(paths.EnvList([]string{"LD_PRELOAD=" + libc})); !ok {
		t.Skip("no x86_64 multiarch libc here")
	}
	p := &Profile{Syscalls: Syscalls{Allow: []Syscall{{Name: "read"}, {Name: "unlink"}}}, Filesystem: Filesystem{PrivateTmp: true}}
	q, note := WithUserPreload(p, paths.EnvList([]string{"LD_PRELOAD=" + libc}))
	if note == "" || q == p {
		t.Fatalf("a system preload added nothing")
	}
	for _, n := range PreloadCalls {
		i := slices.IndexFunc(q.Syscalls.Allow, func(s Syscall) bool { return s.Name == n })
		if i < 0 {
			t.Errorf("%s not allowed", n)
		} else if n != "unlink" && q.Syscalls.Allow[i].Family != PreloadFamily {
			t.Errorf("%s: family %q", n, q.Syscalls.Allow[i].Family)
		}
	}
	if !slices.ContainsFunc(q.Filesystem.Write, func(r PathRule) bool { return r.Path == PreloadShm }) {
		t.Errorf("private /tmp: /dev/shm not writable: %v", q.Filesystem.Write)
	}
	if len(p.Syscalls.Allow) != 2 || len(p.Filesystem.Write) != 0 {
		t.Errorf("p itself was changed: %+v", p)
	}
	// The host's /dev/shm (no private /tmp) stays as learned.
	host := Clone(p)
	host.Filesystem.PrivateTmp = false
	if q, _ := WithUserPreload(host, paths.EnvList([]string{"LD_PRELOAD=" + libc})); slices.ContainsFunc(q.Filesystem.Write, func(r PathRule) bool { return r.Path == PreloadShm }) {
		t.Errorf("the host's /dev/shm made writable")
	}
	for _, env := range [][]string{nil, {"LD_PRELOAD=" + t.TempDir() + "/evil.so"}, {"LD_PRELOAD=./evil.so"}, {"LD_PRELOAD=" + libc + ":/tmp/evil.so"}} {
		if q, _ := WithUserPreload(p, paths.EnvList(env)); q != p {
			t.Errorf("%v: not a system preload, yet the profile grew", env)
		}
	}
	exact := Clone(p)
	exact.Metadata.Exact = true
	if q, _ := WithUserPreload(exact, paths.EnvList([]string{"LD_PRELOAD=" + libc})); q != exact {
		t.Errorf("a profile learned --exact grew")
	}
}
