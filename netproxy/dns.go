package netproxy

import (
	"net/netip"
	"strings"

	"golang.org/x/net/dns/dnsmessage"
)

// answer builds the stub's reply to one query: the synthetic address for an allowed name's A
// query, an empty answer for its other types, NXDOMAIN for every other name. A name of the
// host's hosts file is answered in the families the file gives it (HostsFamilies): AAAA with
// the IPv6 twin of its synthetic address (synthetic6) when the file has an IPv6 address for it,
// and no A when it has no IPv4 one, so that a client gets the families it got on the host (curl
// -6, getent ahostsv6; glibc sorts what it sorted there), each reaching the same listener. A
// name of the DNS gets AAAA when the host gets a reachable IPv6 address for it (HostHas6).
// name is the name asked for and denied reports whether that is a refusal to record ("" and
// false for what is not a query). nil: no reply (not a query).
func (p *Plan) answer(msg []byte) (resp []byte, name string, denied bool) {
	var ps dnsmessage.Parser
	h, err := ps.Start(msg)
	if err != nil || h.Response {
		return nil, "", false
	}
	rh := dnsmessage.Header{ID: h.ID, Response: true, OpCode: h.OpCode, Authoritative: true,
		RecursionDesired: h.RecursionDesired, RecursionAvailable: true}
	q, err := ps.Question()
	if err != nil || h.OpCode != 0 {
		rh.RCode = dnsmessage.RCodeFormatError
		if h.OpCode != 0 {
			rh.RCode = dnsmessage.RCodeNotImplemented
		}
		b := dnsmessage.NewBuilder(nil, rh)
		out, _ := b.Finish()
		return out, "", false
	}
	name = canonName(q.Name.String())
	addr, ok := p.Names[name]
	// localhost and every name under it are loopback (RFC 6761; nss-myhostname and
	// systemd-resolved answer so on the host), also when learned as a resolve-only name.
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		addr, ok = netip.MustParseAddr("127.0.0.1"), true
	}
	if !ok {
		rh.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, rh)
	b.EnableCompression()
	if b.StartQuestions() != nil || b.Question(q) != nil || b.StartAnswers() != nil {
		return nil, name, !ok
	}
	if ok && !p.no4[name] && q.Type == dnsmessage.TypeA && q.Class == dnsmessage.ClassINET {
		_ = b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 5}, dnsmessage.AResource{A: addr.As4()})
	}
	if ok && q.Type == dnsmessage.TypeAAAA && q.Class == dnsmessage.ClassINET && p.answers6(name) {
		_ = b.AAAAResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 5}, dnsmessage.AAAAResource{AAAA: synthetic6Of(addr).As16()})
	}
	out, err := b.Finish()
	if err != nil {
		return nil, name, !ok
	}
	return out, name, !ok
}
