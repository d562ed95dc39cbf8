package netproxy

import (
	"encoding/binary"
	"net/netip"
	"strings"
	"testing"
)

// icmp4 builds an ICMPv4 port-unreachable error for a UDP datagram src -> dst carrying data,
// with the IPv4 header a raw socket returns when withIP.
func icmp4(src, dst netip.AddrPort, data []byte, withIP bool) []byte {
	orig := make([]byte, 20+8)
	orig[0], orig[9] = 0x45, 17
	copy(orig[12:], src.Addr().AsSlice())
	copy(orig[16:], dst.Addr().AsSlice())
	binary.BigEndian.PutUint16(orig[20:], src.Port())
	binary.BigEndian.PutUint16(orig[22:], dst.Port())
	msg := append([]byte{3, 3, 0, 0, 0, 0, 0, 0}, append(orig, data...)...)
	if !withIP {
		return msg
	}
	ip := make([]byte, 20)
	ip[0], ip[9] = 0x45, 1
	return append(ip, msg...)
}

func icmp6(src, dst netip.AddrPort, data []byte) []byte {
	orig := make([]byte, 40+8)
	orig[0], orig[6] = 0x60, 17
	copy(orig[8:], src.Addr().AsSlice())
	copy(orig[24:], dst.Addr().AsSlice())
	binary.BigEndian.PutUint16(orig[40:], src.Port())
	binary.BigEndian.PutUint16(orig[42:], dst.Port())
	return append([]byte{1, 4, 0, 0, 0, 0, 0, 0}, append(orig, data...)...)
}

// A query for leak.test, as a resolver library sends it.
var leakQuery = []byte("\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x04leak\x04test\x00\x00\x01\x00\x01")

func TestUDPDenials(t *testing.T) {
	plan, err := NewPlan([]Rule{{Host: "allowed.test", Port: 443, Endpoint: "allowed.test:443"}})
	if err != nil {
		t.Fatal(err)
	}
	syn, _ := plan.Synthetic("allowed.test")
	client := netip.MustParseAddrPort("127.0.0.1:40000")
	client6 := netip.MustParseAddrPort("[::1]:40000")
	for _, c := range []struct {
		name string
		msg  []byte
		v6   bool
		want string // "" : not a denial
	}{
		{"dns past the stub", icmp4(client, netip.MustParseAddrPort("10.0.0.2:53"), leakQuery, true), false, "dns leak.test to 10.0.0.2:53 udp"},
		{"dns past the stub, header stripped", icmp4(client, netip.MustParseAddrPort("8.8.8.8:53"), leakQuery, false), false, "dns leak.test to 8.8.8.8:53 udp"},
		{"dns past the stub, not a query", icmp4(client, netip.MustParseAddrPort("8.8.8.8:53"), []byte("x"), false), false, "dns to 8.8.8.8:53 udp"},
		{"quic", icmp4(client, netip.MustParseAddrPort("192.0.2.7:443"), nil, true), false, "send 192.0.2.7:443 udp"},
		{"quic to an allowed name", icmp4(client, netip.AddrPortFrom(syn, 443), nil, true), false, "send allowed.test:443 udp"},
		{"v6", icmp6(client6, netip.MustParseAddrPort("[2001:db8::1]:53"), leakQuery), true, "dns leak.test to [2001:db8::1]:53 udp"},
		{"the sandbox's own loopback", icmp4(client, netip.MustParseAddrPort("127.0.0.1:9999"), nil, true), false, ""},
		{"the stub answering a client that left", icmp4(StubAddr, client, nil, true), false, ""},
	} {
		parse := parseICMP4
		if c.v6 {
			parse = parseICMP6
		}
		u, ok := parse(c.msg)
		if !ok {
			t.Errorf("%s: not parsed", c.name)
			continue
		}
		d, ok := plan.udpDenial(u)
		switch {
		case c.want == "" && ok:
			t.Errorf("%s: a denial %q for what never tried to leave", c.name, d.What)
		case c.want != "" && (!ok || !strings.HasPrefix(d.What, c.want) || d.Suggest == "" || d.Proto != "udp"):
			t.Errorf("%s: denial %+v, want What %q...", c.name, d, c.want)
		}
	}
	for _, bad := range [][]byte{nil, {3, 3}, {3, 1, 0, 0, 0, 0, 0, 0}, icmp4(client, client, nil, true)[:30]} {
		if _, ok := parseICMP4(bad); ok {
			t.Errorf("parseICMP4(%x) took a malformed message", bad)
		}
	}
}
