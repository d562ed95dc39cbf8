package guard

import (
	"bufio"
	"net/netip"
	"os"
	"slices"
	"strings"
)

// NetRule is one inet entry of the profile's network allowlist, as the cgroup hooks hold it.
// A host rule (Host set) is resolved when the command starts and kept current while it runs.
type NetRule struct {
	Section  string       `json:"section"` // connect, send, bind
	Proto    string       `json:"proto"`   // tcp, udp, mptcp
	Prefix   netip.Prefix `json:"prefix,omitzero"`
	Host     string       `json:"host,omitempty"`
	Port     uint16       `json:"port"`
	Endpoint string       `json:"endpoint"` // as the profile spells it
}

// hasHosts reports whether a rule names a host (then DNS must work).
func hasHosts(rules []NetRule) bool {
	return slices.ContainsFunc(rules, func(r NetRule) bool { return r.Host != "" })
}

// dnsRules allows what resolving names needs: udp and tcp port 53 to each nameserver of
// resolv.conf (connect for tcp and connected udp, send for unconnected udp).
func dnsRules(nameservers []netip.Addr) []NetRule {
	var out []NetRule
	for _, ns := range nameservers {
		p := netip.PrefixFrom(ns, ns.BitLen())
		ep := netip.AddrPortFrom(ns, 53).String()
		for _, r := range []NetRule{{Section: "connect", Proto: "udp"}, {Section: "send", Proto: "udp"}, {Section: "connect", Proto: "tcp"}} {
			r.Prefix, r.Port, r.Endpoint = p, 53, ep
			out = append(out, r)
		}
	}
	return out
}

// nameservers reads the nameserver lines of a resolv.conf.
func nameservers(path string) []netip.Addr {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []netip.Addr
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) >= 2 && fs[0] == "nameserver" {
			if a, err := netip.ParseAddr(strings.SplitN(fs[1], "%", 2)[0]); err == nil {
				out = append(out, a.Unmap())
			}
		}
	}
	return out
}

// hookKeys are the trie entries a rule with a resolved prefix becomes. UDP connect and send
// rules allow both calls (a connected UDP socket sends with send(2), which the sendmsg hook
// does not see; an unconnected one sends with sendto(2), which the connect hook does not see).
// IPv4 rules are also entered as v4-mapped IPv6 (a dual-stack socket connecting to
// ::ffff:a.b.c.d passes only the connect6 hook).
type hookKey struct {
	Op     uint8 // bpf NOP_*
	Proto  uint8 // bpf NP_*
	Port   uint16
	Prefix netip.Prefix
}

const (
	nopConnect = 1
	nopSend    = 2
	nopBind    = 3
	npTCP      = 1
	npUDP      = 2
	npMPTCP    = 3
	npOther    = 4
)

var sectionOps = map[string]uint8{"connect": nopConnect, "send": nopSend, "bind": nopBind}

// protoNums are the trie's protocols. MPTCP is tcp there: the hooks run on an MPTCP socket's
// first TCP subflow and see IPPROTO_TCP, so an mptcp rule allows that endpoint over tcp too
// (whether a socket may be MPTCP at all is seccomp's socket() rule).
var protoNums = map[string]uint8{"tcp": npTCP, "udp": npUDP, "mptcp": npTCP}

func hookKeys(r NetRule, prefix netip.Prefix) []hookKey {
	ops := []uint8{sectionOps[r.Section]}
	if r.Proto == "udp" && r.Section != "bind" {
		ops = []uint8{nopConnect, nopSend}
	}
	prefixes := []netip.Prefix{prefix}
	if prefix.Addr().Is4() {
		a4 := prefix.Addr().As4()
		mapped := netip.AddrFrom16([16]byte{10: 0xff, 11: 0xff, 12: a4[0], 13: a4[1], 14: a4[2], 15: a4[3]})
		prefixes = append(prefixes, netip.PrefixFrom(mapped, 96+prefix.Bits()))
	}
	var out []hookKey
	for _, op := range ops {
		for _, p := range prefixes {
			out = append(out, hookKey{Op: op, Proto: protoNums[r.Proto], Port: r.Port, Prefix: p})
		}
	}
	return out
}
