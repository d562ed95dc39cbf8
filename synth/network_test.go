package synth

import (
	"slices"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/trace"
)

// A connection's own name (learn's SNI/Host, per binary) becomes name:port by that binary,
// one endpoint per name on a shared address, with no DNS answer in the trace; an address
// no name was seen for stays literal.
func TestConnectNamedBySNI(t *testing.T) {
	tr := &trace.Trace{
		Version:   trace.Version,
		Command:   []string{"node"},
		Context:   map[string]string{"WORKDIR": "/w", "HOME": "/home/a", "TMPDIR": "/tmp"},
		Host:      trace.Host{Kernel: "6.18", Arch: trace.ArchX86_64},
		Processes: []trace.Process{{ID: 1, PID: 10, Exe: "/usr/bin/node"}},
		Network: []trace.NetworkAccess{
			{Exe: "/usr/bin/node", Op: trace.OpConnect, Family: "inet", Proto: "tcp", Addr: "198.51.100.7", Port: 443, Host: "registry.test", OK: true, Count: 1},
			{Exe: "/usr/bin/node", Op: trace.OpConnect, Family: "inet", Proto: "tcp", Addr: "198.51.100.7", Port: 443, Host: "cdn.test", OK: true, Count: 1},
			{Exe: "/usr/bin/node", Op: trace.OpConnect, Family: "inet", Proto: "tcp", Addr: "203.0.113.9", Port: 443, OK: true, Count: 1},
		},
	}
	res, err := Synthesize(tr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range res.Profile.Network.Connect {
		got[e.Endpoint] = e.By
	}
	for _, ep := range []string{"registry.test:443", "cdn.test:443", "203.0.113.9:443"} {
		if by, ok := got[ep]; !ok || by != "/usr/bin/node" {
			t.Errorf("%s: by %q (present %v); all %v", ep, by, ok, got)
		}
	}
	if len(got) != 3 {
		t.Errorf("endpoints %v", got)
	}
}

// glibc's getaddrinfo connects a UDP socket to each address of a name (port included) to sort
// them and sends nothing: that UDP connect to the name:port the binary then reached over TCP
// is no rule (enforce would refuse a UDP rule by name, with a warning every run). A UDP
// destination of its own, or one by address, stays. Looked up only, the probe reaches two
// addresses or more of the name, and is no rule either.
func TestAddressSortingProbeIsNoUDPRule(t *testing.T) {
	curl := "/usr/bin/curl"
	tr := &trace.Trace{
		Version:   trace.Version,
		Command:   []string{"curl"},
		Context:   map[string]string{"WORKDIR": "/w", "HOME": "/home/a", "TMPDIR": "/tmp"},
		Host:      trace.Host{Kernel: "6.18", Arch: trace.ArchX86_64},
		Processes: []trace.Process{{ID: 1, PID: 10, Exe: curl}},
		Network: []trace.NetworkAccess{
			{Exe: curl, Op: trace.OpConnect, Family: "inet", Proto: "tcp", Addr: "10.77.0.3", Port: 8080, Host: "multi.test", OK: true, Count: 1},
			{Exe: curl, Op: trace.OpConnect, Family: "inet", Proto: "udp", Addr: "10.77.0.3", Port: 8080, Host: "multi.test", OK: true, Count: 1},
			{Exe: curl, Op: trace.OpConnect, Family: "inet", Proto: "udp", Addr: "10.77.0.4", Port: 8080, Host: "multi.test", OK: true, Count: 1},
			{Exe: curl, Op: trace.OpConnect, Family: "inet", Proto: "udp", Addr: "10.77.0.5", Port: 8125, Host: "statsd.test", OK: true, Count: 1},
			{Exe: curl, Op: trace.OpConnect, Family: "inet", Proto: "udp", Addr: "10.77.0.6", Port: 8080, OK: true, Count: 1},
			// Looked up only (getaddrinfo with a port, no connect after): the probe reaches
			// both addresses of the name.
			{Exe: curl, Op: trace.OpConnect, Family: "inet", Proto: "udp", Addr: "10.77.0.7", Port: 443, Host: "lookup.test", OK: true, Count: 1},
			{Exe: curl, Op: trace.OpConnect, Family: "inet6", Proto: "udp", Addr: "fd77::7", Port: 443, Host: "lookup.test", OK: true, Count: 1},
		},
	}
	res, err := Synthesize(tr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range res.Profile.Network.Connect {
		got = append(got, e.Proto+" "+e.Endpoint)
	}
	slices.Sort(got)
	want := "tcp multi.test:8080, udp 10.77.0.6:8080, udp statsd.test:8125"
	if g := strings.Join(got, ", "); g != want {
		t.Errorf("connect rules %q, want %q", g, want)
	}
}

// Two binaries that reached one endpoint make its rule every binary's (by: any): enforce
// passes a per-binary rule to that binary's own file only, so naming the first would deny the
// second on the next run. One binary keeps its name, and the review says which went to any.
func TestEndpointReachedByTwoBinariesIsAny(t *testing.T) {
	git, node := "/usr/lib/git-core/git-remote-http", "/usr/bin/node"
	tr := &trace.Trace{
		Version:   trace.Version,
		Command:   []string{"sh"},
		Context:   map[string]string{"WORKDIR": "/w", "HOME": "/home/a", "TMPDIR": "/tmp"},
		Host:      trace.Host{Kernel: "6.18", Arch: trace.ArchX86_64},
		Processes: []trace.Process{{ID: 1, PID: 10, Exe: git}, {ID: 2, PID: 11, Exe: node}},
		Network: []trace.NetworkAccess{
			{Exe: git, Op: trace.OpConnect, Family: "inet", Proto: "tcp", Addr: "127.0.0.1", Port: 8080, OK: true, Count: 1},
			{Exe: node, Op: trace.OpConnect, Family: "inet", Proto: "tcp", Addr: "127.0.0.1", Port: 8080, OK: true, Count: 1},
			{Exe: node, Op: trace.OpConnect, Family: "inet", Proto: "tcp", Addr: "127.0.0.1", Port: 9090, OK: true, Count: 1},
		},
	}
	res, err := Synthesize(tr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, e := range res.Profile.Network.Connect {
		got[e.Endpoint] = e.By
	}
	if got["127.0.0.1:8080"] != "any" || got["127.0.0.1:9090"] != node {
		t.Errorf("by per endpoint %v, want 127.0.0.1:8080 by any, 127.0.0.1:9090 by %s", got, node)
	}
	if !slices.ContainsFunc(res.Explain, func(s Step) bool { return strings.Contains(s.Message, "1 endpoint reached by more than one binary") }) {
		t.Errorf("explain does not say an endpoint went to any: %v", res.Explain)
	}
}
