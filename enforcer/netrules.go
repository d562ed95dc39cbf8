package enforcer

import (
	"fmt"
	"strings"

	"github.com/sysprof/sysprof/policy"
)

// checkEndpoints refuses an inet endpoint of a network section that does not parse or names a
// protocol other than tcp, udp or mptcp (none means tcp); unix ones are the sandbox plan's
// business. The egress proxy enforces what passes (egress.go).
func checkEndpoints(n policy.Network) error {
	for _, set := range []struct {
		name string
		eps  []policy.Endpoint
	}{{"connect", n.Connect}, {"send", n.Send}, {"bind", n.Bind}} {
		for _, e := range set.eps {
			if strings.HasPrefix(e.Endpoint, "unix:") {
				continue
			}
			if _, err := policy.ParseEndpoint(e.Endpoint); err != nil {
				return fmt.Errorf("network.%s: %w", set.name, err)
			}
			switch strings.ToLower(e.Proto) {
			case "", "tcp", "udp", "mptcp":
			default:
				return fmt.Errorf("network.%s: %s: protocol %q (want tcp, udp or mptcp)", set.name, e.Endpoint, e.Proto)
			}
		}
	}
	return nil
}
