package enforcer

import (
	"net/netip"
	"slices"
	"testing"

	"github.com/sysprof/sysprof/policy"
)

func TestCompileNetRules(t *testing.T) {
	n := policy.Network{
		Connect: []policy.Endpoint{{Endpoint: "10.0.0.0/8:443", Proto: "tcp"}, {Endpoint: "crates.io:443"}, {Endpoint: "unix:/run/x.sock"}},
		Send:    []policy.Endpoint{{Endpoint: "[::1]:53", Proto: "udp"}},
		Bind:    []policy.Endpoint{{Endpoint: "127.0.0.1:0", Proto: "tcp"}},
	}
	got, err := compileNetRules(n)
	if err != nil {
		t.Fatal(err)
	}
	want := []NetRule{
		{Section: "bind", Proto: "tcp", Prefix: netip.MustParsePrefix("127.0.0.1/32"), Port: 0, Endpoint: "127.0.0.1:0"},
		{Section: "connect", Proto: "tcp", Prefix: netip.MustParsePrefix("10.0.0.0/8"), Port: 443, Endpoint: "10.0.0.0/8:443"},
		{Section: "connect", Proto: "tcp", Host: "crates.io", Port: 443, Endpoint: "crates.io:443"},
		{Section: "send", Proto: "udp", Prefix: netip.MustParsePrefix("::1/128"), Port: 53, Endpoint: "[::1]:53"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("rules:\n got %+v\nwant %+v", got, want)
	}
	if _, err := compileNetRules(policy.Network{Connect: []policy.Endpoint{{Endpoint: "1.2.3.4:1", Proto: "sctp"}}}); err == nil {
		t.Error("sctp accepted")
	}
}
