package synth

import (
	"slices"
	"testing"

	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/trace"
)

// A name only looked up (a DNS answer, no connection) is kept as a resolve rule, so the same
// lookup answers under enforce; a name connected to is a connect rule only; the list survives
// reading the profile back.
func TestResolveOnlyNamesKept(t *testing.T) {
	exe := "/usr/bin/curl"
	tr := &trace.Trace{Version: trace.Version, Command: []string{"curl"}, Host: trace.Host{Arch: trace.ArchX86_64},
		Context: map[string]string{"HOME": "/h", "WORKDIR": "/w", "TMPDIR": "/tmp"},
		DNS: []trace.DNSAnswer{
			{Name: "api.example", Addrs: []string{"192.0.2.1"}, Server: "127.0.0.53:53"},
			{Name: "probe.example", Addrs: []string{"192.0.2.9"}, Server: "127.0.0.53:53"},
			{Name: "gone.example", Server: "127.0.0.53:53"}, // NXDOMAIN when learned: nothing to keep
		},
		Network: []trace.NetworkAccess{{Exe: exe, Op: trace.OpConnect, Family: "inet", Proto: "tcp", Addr: "192.0.2.1", Port: 443, OK: true}},
	}
	res, err := Synthesize(tr, testOpts())
	if err != nil {
		t.Fatal(err)
	}
	names := func(p *policy.Profile) (out []string) {
		for _, e := range p.Network.Resolve {
			out = append(out, e.Endpoint)
		}
		return out
	}
	if got := names(res.Profile); !slices.Equal(got, []string{"probe.example"}) {
		t.Errorf("resolve %q, want [probe.example]", got)
	}
	if len(res.Profile.Network.Connect) != 1 || res.Profile.Network.Connect[0].Endpoint != "api.example:443" {
		t.Errorf("connect %+v, want api.example:443", res.Profile.Network.Connect)
	}
	again, err := Resynthesize(res.Profile, testOpts())
	if err != nil {
		t.Fatal(err)
	}
	if got := names(again.Profile); !slices.Equal(got, []string{"probe.example"}) {
		t.Errorf("read back: resolve %q, want [probe.example]", got)
	}
	if _, err := policy.Parse("resolve.yaml", mustMarshal(t, res.Profile)); err != nil {
		t.Errorf("the profile does not load back: %v", err)
	}
}

func mustMarshal(t *testing.T, p *policy.Profile) []byte {
	t.Helper()
	b, err := policy.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
