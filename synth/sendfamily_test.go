package synth

import (
	"slices"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/policy"
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

// sendmsg and sendmmsg can pass fds (SCM_RIGHTS). A command that reaches a unix socket by path
// (a host daemon's) gets them only when learned: as sendto's mates they would let it hand its
// fds to that daemon. Inet and abstract sockets keep the whole family; the profile read back
// (Resynthesize) decides the same.
func TestSendFamilyPassesNoFDsToUnixSockets(t *testing.T) {
	for _, tc := range []struct {
		name     string
		net      trace.NetworkAccess
		wantMate bool
	}{
		{"inet", trace.NetworkAccess{Exe: "/usr/bin/tool", Op: trace.OpConnect, Family: "inet", Proto: "tcp", Addr: "127.0.0.1", Port: 8080, OK: true, Count: 1}, true},
		{"abstract unix", trace.NetworkAccess{Exe: "/usr/bin/tool", Op: trace.OpConnect, Family: "unix", Proto: "stream", Path: "@x", OK: true, Count: 1}, true},
		{"unix path", trace.NetworkAccess{Exe: "/usr/bin/tool", Op: trace.OpConnect, Family: "unix", Proto: "stream", Path: "/run/dbus/system_bus_socket", OK: true, Count: 1}, false},
		{"unix path send", trace.NetworkAccess{Exe: "/usr/bin/tool", Op: trace.OpSend, Family: "unix", Proto: "dgram", Path: "/dev/log", OK: true, Count: 1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &trace.Trace{Version: trace.Version, Command: []string{"tool"}, Host: trace.Host{Arch: trace.ArchX86_64},
				Context: map[string]string{"HOME": "/h", "WORKDIR": "/w", "TMPDIR": "/tmp"}}
			tr.Syscalls = append(tr.Syscalls, trace.SyscallCount{Exe: "/usr/bin/tool", Arch: trace.ArchX86_64, Name: "sendto", Count: 1})
			tr.Network = append(tr.Network, tc.net)
			res, err := Synthesize(tr, testOpts())
			if err != nil {
				t.Fatal(err)
			}
			again, err := Resynthesize(res.Profile, testOpts())
			if err != nil {
				t.Fatal(err)
			}
			for i, p := range []*policy.Profile{res.Profile, again.Profile} {
				allowed := map[string]bool{}
				for _, s := range p.Syscalls.Allow {
					allowed[s.Name] = true
				}
				if !allowed["sendto"] || allowed["sendmsg"] != tc.wantMate || allowed["sendmmsg"] != tc.wantMate {
					t.Errorf("profile %d: sendto %v, sendmsg %v, sendmmsg %v; want the fd-passing mates %v", i, allowed["sendto"], allowed["sendmsg"], allowed["sendmmsg"], tc.wantMate)
				}
			}
			if !tc.wantMate && !slices.ContainsFunc(res.Explain, func(s Step) bool { return strings.Contains(s.Message, "SCM_RIGHTS") }) {
				t.Errorf("the explanation does not say why sendmsg is left out: %v", res.Explain)
			}
		})
	}
}
