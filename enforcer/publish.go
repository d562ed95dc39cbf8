package enforcer

import (
	"net/netip"
	"slices"
	"strings"

	"github.com/sysprof/sysprof/policy"
)

// publishedListeners are the loopback TCP listeners of the profile (network.bind with a fixed
// port) that a dev server opens inside the sandbox's network namespace: each is published to
// the host at the same address and port (publish_linux.go), so that a browser or curl on the
// host reaches it. A wildcard bind is published on the host's loopback only (0.0.0.0 on
// 127.0.0.1, [::], node's default and dual-stack, on 127.0.0.1 and [::1], so that a client that
// tries ::1 for localhost first reaches it as it did when learned): the sandbox does not open
// a port to the network. Ephemeral binds (port 0) and UDP are not.
func publishedListeners(n policy.Network) []netip.AddrPort {
	var out []netip.AddrPort
	for _, e := range n.Bind {
		if p := strings.ToLower(e.Proto); p != "" && p != "tcp" {
			continue
		}
		ap, err := netip.ParseAddrPort(e.Endpoint)
		if err != nil || ap.Port() == 0 {
			continue
		}
		a := ap.Addr().Unmap().WithZone("")
		switch {
		case a.IsLoopback():
		case a.IsUnspecified():
			if a.Is6() {
				out = append(out, netip.AddrPortFrom(netip.IPv6Loopback(), ap.Port()))
			}
			a = netip.MustParseAddr("127.0.0.1")
		default:
			continue
		}
		out = append(out, netip.AddrPortFrom(a, ap.Port()))
	}
	slices.SortFunc(out, func(a, b netip.AddrPort) int { return a.Compare(b) })
	return slices.Compact(out)
}

// PublishEndpoint is the bind rule `enforce --publish PORT` adds: a loopback listener the
// profile did not learn, published like a learned one.
func PublishEndpoint(port uint16) policy.Endpoint {
	return policy.Endpoint{Endpoint: netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port).String(), Proto: "tcp",
		Provenance: policy.Provenance{By: "enforce --publish"}}
}
