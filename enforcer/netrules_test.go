package enforcer

import (
	"testing"

	"github.com/sysprof/sysprof/policy"
)

func TestCheckEndpoints(t *testing.T) {
	n := policy.Network{
		Connect: []policy.Endpoint{{Endpoint: "10.0.0.0/8:443", Proto: "tcp"}, {Endpoint: "crates.io:443"}, {Endpoint: "unix:/run/x.sock"}},
		Send:    []policy.Endpoint{{Endpoint: "[::1]:53", Proto: "udp"}},
		Bind:    []policy.Endpoint{{Endpoint: "127.0.0.1:0", Proto: "tcp"}},
	}
	if err := checkEndpoints(n); err != nil {
		t.Fatal(err)
	}
	for name, bad := range map[string]policy.Network{
		"sctp":       {Connect: []policy.Endpoint{{Endpoint: "1.2.3.4:1", Proto: "sctp"}}},
		"bind sctp":  {Bind: []policy.Endpoint{{Endpoint: "127.0.0.1:0", Proto: "sctp"}}},
		"no port":    {Send: []policy.Endpoint{{Endpoint: "1.2.3.4", Proto: "udp"}}},
		"named port": {Connect: []policy.Endpoint{{Endpoint: "host:http"}}},
	} {
		if err := checkEndpoints(bad); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
}
