package seccomp

import (
	"strings"
	"testing"

	"github.com/sysprof/sysprof/policy"
)

// TestFamiliesClosedForOlderProfiles (issue 24 item 8): a profile learned before the send and
// copy-fallback families existed (sendto and rename learned, no family members listed) runs
// under every I/O condition: the compiled filter allows sendmmsg (glibc's resolver on a
// dual-stack host) and the copy fallback of a rename, as learn would have added them; a
// profile learned --exact gets only what it lists.
func TestFamiliesClosedForOlderProfiles(t *testing.T) {
	older := &policy.Profile{Syscalls: policy.Syscalls{Architectures: []string{"x86_64"}}}
	for _, n := range []string{"openat", "read", "close", "sendto", "rename"} {
		older.Syscalls.Allow = append(older.Syscalls.Allow, policy.Syscall{Name: n, Provenance: policy.Provenance{By: "/usr/bin/node", Seen: 1}})
	}
	exact := policy.Clone(older)
	exact.Metadata.Exact = true
	var none [6]uint64
	mates := []string{"sendmmsg", "sendmsg", "copy_file_range", "sendfile", "ftruncate", "fchmod", "renameat2", "splice"}
	for _, tc := range []struct {
		name string
		p    *policy.Profile
		want uint32
	}{
		{"older profile", older, RetAllow},
		{"--exact profile", exact, RetNotify},
	} {
		c, err := Compile(tc.p, "x86_64", Options{})
		if err != nil {
			t.Fatal(err)
		}
		vm := newVM(t, c.Program)
		for _, n := range mates {
			if got := vm.run(t, x86, nr64(n), none); got != tc.want {
				t.Errorf("%s: %s = %s, want %s", tc.name, n, actionName(got), actionName(tc.want))
			}
		}
		// Nothing outside the families comes with them.
		if got := vm.run(t, x86, nr64("ptrace"), none); got != RetNotify {
			t.Errorf("%s: ptrace = %s, want NOTIFY", tc.name, actionName(got))
		}
		noted := strings.Contains(strings.Join(c.Notes, "\n"), "sendmmsg (send)")
		if noted != (tc.want == RetAllow) {
			t.Errorf("%s: notes %q: want a note on the closed families %v", tc.name, c.Notes, tc.want == RetAllow)
		}
	}
}
