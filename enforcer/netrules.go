package enforcer

import (
	"fmt"
	"slices"
	"strings"

	"github.com/sysprof/sysprof/enforcer/guard"
	"github.com/sysprof/sysprof/policy"
)

// NetRule is one inet entry of the profile's network allowlist, as the guard's cgroup hooks
// hold it.
type NetRule = guard.NetRule

// compileNetRules parses the inet endpoints of a network section (unix ones are the sandbox
// plan's business). An endpoint without a protocol is tcp.
func compileNetRules(n policy.Network) ([]NetRule, error) {
	var out []NetRule
	for _, set := range []struct {
		name string
		eps  []policy.Endpoint
	}{{"connect", n.Connect}, {"send", n.Send}, {"bind", n.Bind}} {
		for _, e := range set.eps {
			if strings.HasPrefix(e.Endpoint, "unix:") {
				continue
			}
			a, err := policy.ParseEndpoint(e.Endpoint)
			if err != nil {
				return nil, fmt.Errorf("network.%s: %w", set.name, err)
			}
			proto := strings.ToLower(e.Proto)
			if proto == "" {
				proto = "tcp"
			}
			switch proto {
			case "tcp", "udp", "mptcp":
			default:
				return nil, fmt.Errorf("network.%s: %s: protocol %q (want tcp, udp or mptcp)", set.name, e.Endpoint, e.Proto)
			}
			out = append(out, NetRule{Section: set.name, Proto: proto, Prefix: a.Prefix, Host: a.Host, Port: uint16(a.Port), Endpoint: e.Endpoint})
		}
	}
	slices.SortFunc(out, func(a, b NetRule) int {
		return strings.Compare(a.Section+" "+a.Proto+" "+a.Endpoint, b.Section+" "+b.Proto+" "+b.Endpoint)
	})
	return slices.Compact(out), nil
}
