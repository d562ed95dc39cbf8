package testutil

import (
	"net"
	"net/netip"
	"testing"
)

// Listen listens on network and addr until the test ends, accepting and closing every
// connection: something a sandboxed command may or may not reach. A TCP address must be on
// loopback (tests reach nothing else); a unix socket path or @abstract name is taken as it is.
func Listen(t testing.TB, network, addr string) net.Listener {
	t.Helper()
	if network != "unix" {
		ap, err := netip.ParseAddrPort(addr)
		if err != nil || !ap.Addr().IsLoopback() {
			t.Fatalf("testutil.Listen %s %s: not a loopback address and port", network, addr)
			return nil // a fake testing.TB may return from Fatalf
		}
	}
	l, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return l
}

// LoopbackTCP listens on a free port of 127.0.0.1 (Listen) and returns the port.
func LoopbackTCP(t testing.TB) int {
	t.Helper()
	return Port(Listen(t, "tcp4", "127.0.0.1:0"))
}

// Port is a TCP listener's port.
func Port(l net.Listener) int { return l.Addr().(*net.TCPAddr).Port }
