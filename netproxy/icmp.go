package netproxy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/sysprof/sysprof/report"
)

// Datagrams: every address of the sandbox's namespace is local, so a UDP datagram to anything
// but the stub finds no socket and the kernel answers it with ICMP "port unreachable" on
// loopback (never rate limited per destination there). The observer reads those errors on a
// raw ICMP socket opened in the namespace: each is a datagram that did not leave, with its
// source, destination and first bytes (a DNS query sent straight to a resolver names its
// question).

// unreachable is a UDP datagram the sandbox sent that no socket took.
type unreachable struct {
	src, dst netip.AddrPort
	payload  []byte // what of the datagram the error carried (up to ~500 bytes)
}

// parseICMP4 reads an ICMPv4 port-unreachable error for a UDP datagram, with or without the
// IPv4 header a raw socket returns first (net.IPConn strips it).
func parseICMP4(b []byte) (unreachable, bool) {
	icmp := b
	if len(b) >= 20 && b[0]>>4 == 4 { // an IPv4 header (an ICMP type is never 0x4X here)
		if b[9] != 1 /* ICMP */ {
			return unreachable{}, false
		}
		icmp = b[int(b[0]&0xf)*4:]
	}
	if len(icmp) < 8+20 || icmp[0] != 3 || icmp[1] != 3 { // destination unreachable: port
		return unreachable{}, false
	}
	orig := icmp[8:]
	ihl := int(orig[0]&0xf) * 4
	if orig[0]>>4 != 4 || orig[9] != 17 /* UDP */ || ihl < 20 || len(orig) < ihl+8 {
		return unreachable{}, false
	}
	udp := orig[ihl:]
	return unreachable{
		src:     netip.AddrPortFrom(netip.AddrFrom4([4]byte(orig[12:16])), binary.BigEndian.Uint16(udp[0:])),
		dst:     netip.AddrPortFrom(netip.AddrFrom4([4]byte(orig[16:20])), binary.BigEndian.Uint16(udp[2:])),
		payload: udp[8:],
	}, true
}

// parseICMP6 reads an ICMPv6 port-unreachable error for a UDP datagram (a raw ICMPv6 socket
// returns the message without the IPv6 header).
func parseICMP6(b []byte) (unreachable, bool) {
	if len(b) < 8+40+8 || b[0] != 1 || b[1] != 4 { // destination unreachable: port
		return unreachable{}, false
	}
	orig := b[8:]
	if orig[0]>>4 != 6 || orig[6] != 17 /* UDP, no extension header */ {
		return unreachable{}, false
	}
	udp := orig[40:]
	return unreachable{
		src:     netip.AddrPortFrom(netip.AddrFrom16([16]byte(orig[8:24])), binary.BigEndian.Uint16(udp[0:])),
		dst:     netip.AddrPortFrom(netip.AddrFrom16([16]byte(orig[24:40])), binary.BigEndian.Uint16(udp[2:])),
		payload: udp[8:],
	}, true
}

// udpDenial describes a datagram that did not leave: a DNS query sent past the stub, or UDP
// the proxy does not carry. ok is false for what never tried to leave (datagrams between
// the sandbox's own loopback sockets, the stub's answer to a client that had gone).
func (p *Plan) udpDenial(u unreachable) (d report.Denial, ok bool) {
	src, dst := u.src.Addr().Unmap(), u.dst.Addr().Unmap()
	if src == StubAddr.Addr() && u.src.Port() == StubAddr.Port() {
		return d, false
	}
	name, synthetic := p.nameAt(dst)
	if !synthetic && (dst.IsLoopback() || dst.IsUnspecified()) {
		return d, false
	}
	ep := netip.AddrPortFrom(dst, u.dst.Port()).String()
	d = report.Denial{Syscall: "sendto", Endpoint: ep, Proto: "udp"}
	if synthetic {
		d.Host, d.Endpoint = name, fmt.Sprintf("%s:%d", name, u.dst.Port())
	}
	if u.dst.Port() == 53 {
		if q := dnsQuestion(u.payload); q != "" {
			d.Host = q
			d.What = fmt.Sprintf("dns %s to %s udp (not through sysprof's DNS stub: no answer)", q, ep)
			d.Suggest = fmt.Sprintf("none: names resolve through sysprof's DNS stub (the sandbox's /etc/resolv.conf), not %s; a name the stub should answer is network.resolve: + %s", ep, q)
			return d, true
		}
		d.What = fmt.Sprintf("dns to %s udp (not through sysprof's DNS stub: no answer)", ep)
		d.Suggest = "none: names resolve through sysprof's DNS stub (the sandbox's /etc/resolv.conf)"
		return d, true
	}
	d.What = fmt.Sprintf("send %s udp (only DNS through the stub leaves the sandbox; the proxy carries TCP)", d.Endpoint)
	d.Suggest = "none: UDP other than DNS never leaves the sandbox (QUIC clients fall back to TCP)"
	return d, true
}

// dnsQuestion is the name a DNS query asks for, "" when b is not one.
func dnsQuestion(b []byte) string {
	var ps dnsmessage.Parser
	h, err := ps.Start(b)
	if err != nil || h.Response {
		return ""
	}
	q, err := ps.Question()
	if err != nil {
		return ""
	}
	return canonName(q.Name.String())
}

// serveICMP records the datagrams an ICMP socket of the sandbox's namespace reports unreachable.
func (p *Proxy) serveICMP(c net.PacketConn, v6 bool) {
	defer p.wg.Done()
	buf := make([]byte, 2048)
	for {
		n, _, err := c.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) || p.ctx.Err() != nil {
				return
			}
			continue
		}
		parse := parseICMP4
		if v6 {
			parse = parseICMP6
		}
		u, ok := parse(buf[:n])
		if !ok {
			continue
		}
		d, ok := p.plan.udpDenial(u)
		if !ok {
			continue
		}
		u.payload = nil
		select {
		case p.dnsSlots <- struct{}{}:
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				defer func() { <-p.dnsSlots }()
				p.deny(d, first(p.ownerOf("udp", u.src, u.dst)))
			}()
		default:
			p.deny(d, who{})
		}
	}
}
