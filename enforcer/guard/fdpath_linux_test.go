package guard

import "testing"

// A failed exec by descriptor (a sealed memfd) suggests the memfd_create rule, not an exec rule
// on /proc/self/fd/N.
func TestFdPath(t *testing.T) {
	for p, want := range map[string]bool{
		"/proc/self/fd/3": true, "/proc/42/fd/10": true, "/dev/fd/4": true, "/proc/thread-self/fd/5": true,
		"/proc/self/fdinfo/3": false, "/proc/self/fd/": false, "/proc/self/fd/3/x": false, "/usr/bin/fd/3": false, "/proc/self/exe": false,
	} {
		if got := fdPath(p); got != want {
			t.Errorf("fdPath(%q) = %v, want %v", p, got, want)
		}
	}
}
