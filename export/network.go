package export

import (
	"fmt"
	"net"
	"net/netip"
	"strings"

	"github.com/sysprof/sysprof/policy"
)

type endpointKind int

const (
	epUnixPath     endpointKind = iota // unix:/path
	epUnixAbstract                     // unix:@name, scoped to the network namespace
	epAddr                             // an IP address or CIDR
	epHost                             // a host name
)

type endpoint struct {
	kind   endpointKind
	prefix netip.Prefix // epAddr (a single address is a /32 or /128)
	host   string       // epHost
	port   string
}

// parseEndpoint reads host:port, CIDR:port, [v6]:port, [v6/len]:port, unix:/path, unix:@name.
func parseEndpoint(s string) (endpoint, error) {
	if rest, ok := strings.CutPrefix(s, "unix:"); ok {
		if strings.HasPrefix(rest, "@") {
			return endpoint{kind: epUnixAbstract, host: rest}, nil
		}
		return endpoint{kind: epUnixPath, host: rest}, nil
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		// CIDR with a port: 10.0.0.0/8:443 splits fine; a bare v6 CIDR does not.
		return endpoint{}, fmt.Errorf("endpoint %q: %w", s, err)
	}
	if pfx, err := netip.ParsePrefix(host); err == nil {
		return endpoint{kind: epAddr, prefix: pfx.Masked(), port: port}, nil
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return endpoint{kind: epAddr, prefix: netip.PrefixFrom(a, a.BitLen()), port: port}, nil
	}
	return endpoint{kind: epHost, host: host, port: port}, nil
}

// endpoints lists every endpoint of the profile's network section, parsed.
func endpoints(p *policy.Profile) ([]endpoint, error) {
	var out []endpoint
	for _, l := range [][]policy.Endpoint{p.Network.Connect, p.Network.Send, p.Network.Bind} {
		for _, e := range l {
			ep, err := parseEndpoint(e.Endpoint)
			if err != nil {
				return nil, err
			}
			out = append(out, ep)
		}
	}
	return out, nil
}

// needsHostNetwork says whether the command needs the host's network namespace: any IP
// endpoint or host name, or an abstract unix socket (those live in the network namespace).
// Unix sockets by path work from a private namespace.
func needsHostNetwork(eps []endpoint) bool {
	for _, e := range eps {
		if e.kind != epUnixPath {
			return true
		}
	}
	return false
}

// usesIP says whether any endpoint is an IP address, CIDR or host name.
func usesIP(eps []endpoint) bool {
	for _, e := range eps {
		if e.kind == epAddr || e.kind == epHost {
			return true
		}
	}
	return false
}
