package guard

import (
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestHasHosts(t *testing.T) {
	if !hasHosts([]NetRule{{Section: "connect", Proto: "tcp", Prefix: netip.MustParsePrefix("10.0.0.0/8"), Port: 443}, {Section: "connect", Proto: "tcp", Host: "registry.example", Port: 443}}) {
		t.Error("hasHosts: false")
	}
	if hasHosts([]NetRule{{Section: "connect", Proto: "tcp", Prefix: netip.MustParsePrefix("10.0.0.0/8"), Port: 443}}) {
		t.Error("hasHosts: true without a host")
	}
}

func TestHookKeys(t *testing.T) {
	v4 := netip.MustParsePrefix("10.0.0.0/8")
	keys := hookKeys(NetRule{Section: "connect", Proto: "tcp", Port: 443}, v4)
	want := []hookKey{
		{Op: nopConnect, Proto: npTCP, Port: 443, Prefix: v4},
		{Op: nopConnect, Proto: npTCP, Port: 443, Prefix: netip.MustParsePrefix("::ffff:10.0.0.0/104")},
	}
	if !slices.Equal(keys, want) {
		t.Errorf("tcp v4: %+v", keys)
	}
	// UDP connect and send allow each other; MPTCP is tcp to the hooks.
	keys = hookKeys(NetRule{Section: "send", Proto: "udp", Port: 53}, netip.MustParsePrefix("::1/128"))
	if len(keys) != 2 || keys[0].Op != nopConnect || keys[1].Op != nopSend || keys[0].Proto != npUDP {
		t.Errorf("udp v6: %+v", keys)
	}
	keys = hookKeys(NetRule{Section: "connect", Proto: "mptcp", Port: 1}, netip.MustParsePrefix("::1/128"))
	if len(keys) != 1 || keys[0].Proto != npTCP {
		t.Errorf("mptcp: %+v", keys)
	}
	keys = hookKeys(NetRule{Section: "bind", Proto: "udp", Port: 0}, netip.MustParsePrefix("::/128"))
	if len(keys) != 1 || keys[0].Op != nopBind {
		t.Errorf("udp bind: %+v", keys)
	}
}

func TestNameserversAndDNSRules(t *testing.T) {
	f := filepath.Join(t.TempDir(), "resolv.conf")
	os.WriteFile(f, []byte("# c\nsearch x\nnameserver 127.0.0.53\nnameserver fe80::1%eth0\nnameserver bogus\noptions edns0\n"), 0o644)
	ns := nameservers(f)
	if want := []netip.Addr{netip.MustParseAddr("127.0.0.53"), netip.MustParseAddr("fe80::1")}; !slices.Equal(ns, want) {
		t.Fatalf("nameservers %v, want %v", ns, want)
	}
	rules := dnsRules(ns[:1])
	if len(rules) != 3 || rules[0].Port != 53 || rules[0].Endpoint != "127.0.0.53:53" {
		t.Errorf("dns rules %+v", rules)
	}
	if nameservers(filepath.Join(t.TempDir(), "none")) != nil {
		t.Error("a missing resolv.conf has nameservers")
	}
}
