package synth

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/trace"
)

// endpoint renders one observed network access as a profile endpoint and its proto:
//   - host:port when the name that resolved to the address is known (the enforcer resolves it
//     again at run time: addresses of registries move), else addr:port, [v6]:port;
//   - loopback stays the exact address, whatever name resolved to it;
//   - a bind keeps its address (0.0.0.0:0 is an ephemeral bind on any address, [::1]:0 one
//     on loopback); port 0 means any ephemeral port, in bind rules only;
//   - unix:/path (portable) and unix:@name for abstract sockets, with no proto.
//
// It returns "" for what a profile cannot express as an endpoint: an unnamed unix socket, a
// raw or packet socket (the socket argument rules decide those), port 0 outside bind, an
// address that is neither known nor named.
func (s *state) endpoint(n netObs) (string, string) {
	if n.family == "unix" {
		if n.path == "" || n.path == "@" {
			return "", ""
		}
		return "unix:" + n.path, ""
	}
	proto := strings.ToLower(n.proto)
	switch proto {
	case "stream":
		proto = "tcp"
	case "dgram":
		proto = "udp"
	case "tcp", "udp", "mptcp":
	default:
		return "", ""
	}
	if n.port == 0 && n.op != trace.OpBind {
		return "", ""
	}
	addr, err := netip.ParseAddr(n.addr)
	if err == nil {
		addr = addr.WithZone("")
	}
	port := strconv.Itoa(n.port)
	if n.op == trace.OpBind && n.addr == "" { // unspecified address, family decides
		if n.family == "inet6" {
			return "[::]:" + port, proto
		}
		return "0.0.0.0:" + port, proto
	}
	host := n.host
	if host == "" {
		host = s.dnsName[n.addr]
	}
	switch {
	case err == nil && addr.IsLoopback():
	case host != "":
		return strings.ToLower(strings.TrimSuffix(host, ".")) + ":" + port, proto
	}
	if err == nil && addr.Is6() && !addr.Is4In6() {
		return "[" + addr.String() + "]:" + port, proto
	}
	if err == nil {
		return addr.Unmap().String() + ":" + port, proto
	}
	return "", "" // no address and no name
}

// passNetwork turns the observed endpoints into the allowlist. DNS needs nothing special: the
// query to the resolver (udp 53) was itself observed as a connect or send and is allowed as
// seen. Failed attempts (connection refused, unreachable) are not granted.
func (s *state) passNetwork() []string {
	failed, unexpressed, probes := 0, 0, 0
	dns := map[string]bool{}
	// glibc's getaddrinfo sorts several addresses (RFC 6724) by connecting a UDP socket to
	// each, port included, and sending nothing: a UDP "connect" to the name:port the binary
	// then reached over TCP is that probe, not a UDP destination. As a rule by name it would
	// only be refused by enforce (UDP is relayed to exact addresses), with a warning each run.
	// Looked up only, the same probe names no TCP connect, but it reaches every address of the
	// name (it sorts two or more): a UDP connect by name to two addresses or more is that.
	tcpTo := map[[2]string]bool{}
	udpAddrs := map[[2]string]map[string]bool{}
	for _, n := range s.net {
		ep, proto := s.endpoint(n)
		switch {
		case !n.ok || n.op != trace.OpConnect || ep == "":
		case proto != "udp":
			tcpTo[[2]string{n.exe, ep}] = true
		default:
			k := [2]string{n.exe, ep}
			if udpAddrs[k] == nil {
				udpAddrs[k] = map[string]bool{}
			}
			udpAddrs[k][n.addr] = true
		}
	}
	for k, addrs := range udpAddrs {
		if len(addrs) >= 2 {
			tcpTo[k] = true
		}
	}
	for _, n := range s.net {
		if !n.ok {
			failed++
			continue
		}
		ep, proto := s.endpoint(n)
		if ep == "" {
			unexpressed++
			continue
		}
		if a, err := policy.ParseEndpoint(ep); err == nil && a.Host != "" && proto == "udp" && n.op == trace.OpConnect && a.Port != 53 && tcpTo[[2]string{n.exe, ep}] {
			probes++
			continue
		}
		k := epKey{n.op, ep, proto}
		s.reached(k, s.provOf(n.exe))
		if n.port == 53 && n.op != trace.OpBind {
			dns[ep+" ("+proto+")"] = true
		}
	}
	var counts [3]int
	for k := range s.endpoints {
		switch k.op {
		case trace.OpConnect:
			counts[0]++
		case trace.OpSend:
			counts[1]++
		case trace.OpBind:
			counts[2]++
		}
	}
	var msgs []string
	if len(s.endpoints) == 0 {
		msgs = append(msgs, "no network: the command gets a private network namespace with only loopback")
	} else {
		msgs = append(msgs, fmt.Sprintf("%s allowed: connect %d, send %d, bind %d", plural(len(s.endpoints), "endpoint"), counts[0], counts[1], counts[2]))
	}
	shared := 0
	for _, p := range s.endpoints {
		if p.by == policy.AnyBinary {
			shared++
		}
	}
	if shared > 0 {
		msgs = append(msgs, fmt.Sprintf("%s reached by more than one binary: by: any (a per-binary rule passes for one binary's file and its transport helpers only)", plural(shared, "endpoint")))
	}
	if len(dns) > 0 {
		msgs = append(msgs, "DNS: resolver "+strings.Join(sortedKeys(dns), ", ")+" allowed as seen")
	}
	if n := len(s.resolveOnly()); n > 0 {
		msgs = append(msgs, fmt.Sprintf("resolve: %s looked up but never connected to: the DNS stub answers them under enforce, no connection to them is allowed", plural(n, "name")))
	}
	if unexpressed > 0 {
		msgs = append(msgs, fmt.Sprintf("no endpoint for %s (unnamed unix, raw or packet sockets, port 0): the socket argument rules decide those",
			plural(unexpressed, "access")))
	}
	if failed > 0 {
		msgs = append(msgs, fmt.Sprintf("not granted: %s that failed during learning", plural(failed, "network attempt")))
	}
	if probes > 0 {
		msgs = append(msgs, fmt.Sprintf("not granted: %s to a name:port the same binary then connected to over TCP (getaddrinfo's address-sorting probe: it sends nothing)", plural(probes, "UDP connect")))
	}
	return msgs
}

// resolveOnly are the names looked up that no connect or send rule names (sorted): a lookup
// that is only a probe (a mirror list, a resolve-then-decide) answers the same under enforce.
// The loopback names resolve from the sandbox's hosts file and need no rule.
func (s *state) resolveOnly() []string {
	named := map[string]bool{"localhost": true}
	for k := range s.endpoints {
		if a, err := policy.ParseEndpoint(k.endpoint); err == nil && a.Host != "" {
			named[a.Host] = true
		}
	}
	var out []string
	for n := range s.resolved {
		n = strings.ToLower(strings.TrimSuffix(n, "."))
		if a, err := policy.ParseEndpoint(n + ":1"); err != nil || a.Host == "" || named[n] {
			continue
		}
		out = append(out, n)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// reached records that p's binary reached k (policy.ReachedBy: two binaries make the rule
// every binary's).
func (s *state) reached(k epKey, p prov) {
	old, ok := s.endpoints[k]
	if !ok {
		s.endpoints[k] = p
		return
	}
	out := earliest(old, p)
	out.by = policy.ReachedBy(old.by, p.by)
	s.endpoints[k] = out
}
