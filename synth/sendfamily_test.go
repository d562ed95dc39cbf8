package synth

import (
	"testing"

	"github.com/sysprof/sysprof/trace"
)

// A lookup learned on an IPv4-only host sends with sendto; on a dual-stack host glibc asks A
// and AAAA at once with sendmmsg. Either one learned allows the others, and --exact does not.
func TestSendCallsAreOneFamily(t *testing.T) {
	for _, seen := range []string{"sendto", "sendmmsg", "sendmsg"} {
		tr := &trace.Trace{Version: trace.Version, Command: []string{"getent", "hosts", "x"}, Host: trace.Host{Arch: trace.ArchX86_64},
			Context: map[string]string{"HOME": "/h", "WORKDIR": "/w", "TMPDIR": "/tmp"}}
		tr.Syscalls = append(tr.Syscalls, trace.SyscallCount{Exe: "/usr/bin/getent", Arch: trace.ArchX86_64, Name: seen, Count: 1})
		for _, exact := range []bool{false, true} {
			opts := testOpts()
			opts.Exact = exact
			res, err := Synthesize(tr, opts)
			if err != nil {
				t.Fatal(err)
			}
			allowed := map[string]bool{}
			for _, s := range res.Profile.Syscalls.Allow {
				allowed[s.Name] = true
			}
			for _, want := range []string{"sendto", "sendmsg", "sendmmsg"} {
				if allowed[want] != (!exact || want == seen) {
					t.Errorf("learned %s, exact=%v: %s allowed=%v", seen, exact, want, allowed[want])
				}
			}
		}
	}
}
