package netproxy

import (
	"bufio"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"syscall"
	"testing"
)

// benchProxy starts a proxy without a sandbox (startProxy) for bulk.test, which resolves to
// the upstream ln. It returns the address clients dial.
func benchProxy(b *testing.B, upstream net.Listener) (string, func()) {
	port := uint16(upstream.Addr().(*net.TCPAddr).Port)
	p, _ := startProxy(b, []Rule{{Host: "bulk.test", Port: port, Endpoint: "bulk.test:" + strconv.Itoa(int(port))}},
		Options{Resolve: map[string][]netip.Addr{"bulk.test": {netip.MustParseAddr("127.0.0.1")}}}, nil)
	syn, _ := p.plan.Synthetic("bulk.test")
	return netip.AddrPortFrom(syn, port).String(), func() { p.Close() }
}

// startProxy starts a proxy without a sandbox: for each port of the rules one listener bound
// on the host to the synthetic address of the first name with that port (all of 127/8 is
// local), the stub on a free loopback port (returned). tweak, when set, runs before Start
// (test hooks). The test's process is the sandbox's root: the owner of a connection is the
// test binary.
func startProxy(tb testing.TB, rules []Rule, opts Options, tweak func(*Proxy)) (*Proxy, string) {
	plan, err := NewPlan(rules)
	if err != nil {
		tb.Fatal(err)
	}
	return startPlan(tb, plan, opts, tweak)
}

// startPlan is startProxy for a plan made already.
func startPlan(tb testing.TB, plan *Plan, opts Options, tweak func(*Proxy)) (*Proxy, string) {
	dns, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	fd := func(c syscall.Conn) int {
		rc, _ := c.SyscallConn()
		var out int
		rc.Control(func(f uintptr) { out, _ = syscall.Dup(int(f)) })
		return out
	}
	fds := []int{fd(dns.(syscall.Conn))}
	dnsAddr := dns.LocalAddr().String()
	dns.Close()
	for _, port := range plan.Inside.Ports {
		var at netip.Addr
		for _, r := range plan.Rules {
			if r.Port == port && r.Host != "" {
				at, _ = plan.Synthetic(r.Host)
				break
			}
		}
		if !at.IsValid() {
			at = netip.MustParseAddr("127.0.0.1")
		}
		ln, err := net.Listen("tcp", netip.AddrPortFrom(at, port).String())
		if err != nil {
			tb.Fatal(err)
		}
		fds = append(fds, fd(ln.(syscall.Conn)))
		ln.Close()
	}
	for _, dst := range plan.Inside.UDP { // the UDP relays' sockets, bound where the init stage binds them
		pc, err := net.ListenPacket("udp", dst.String())
		if err != nil {
			tb.Fatal(err)
		}
		fds = append(fds, fd(pc.(syscall.Conn)))
		pc.Close()
	}
	diag, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 4 /* NETLINK_SOCK_DIAG */)
	if err != nil {
		tb.Fatal(err)
	}
	fds = append(fds, diag)
	p := New(plan, opts)
	if tweak != nil {
		tweak(p)
	}
	if err := p.Start(fds, os.Getpid()); err != nil {
		tb.Fatal(err)
	}
	return p, dnsAddr
}

// serve answers each connection: after the request header, size bytes (then close).
func serve(b *testing.B, size int64) net.Listener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		zero, _ := os.Open("/dev/zero")
		defer zero.Close()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					l, err := r.ReadString('\n')
					if err != nil || l == "\r\n" {
						break
					}
				}
				buf := make([]byte, 1<<20)
				for left := size; left > 0; {
					n, err := c.Write(buf[:min(left, int64(len(buf)))])
					if err != nil {
						return
					}
					left -= int64(n)
				}
			}()
		}
	}()
	return ln
}

func fetch(b *testing.B, addr string, size int64) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: bulk.test\r\n\r\n"); err != nil {
		b.Fatal(err)
	}
	n, err := io.Copy(io.Discard, c)
	if err != nil || n != size {
		b.Fatalf("got %d bytes, want %d: %v", n, size, err)
	}
}

// Bulk transfer: 256 MiB a connection, direct and through the proxy.
// go test ./netproxy -run - -bench Bulk -benchtime 20x
func BenchmarkBulk(b *testing.B) {
	const size = 256 << 20
	up := serve(b, size)
	defer up.Close()
	b.Run("direct", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			fetch(b, up.Addr().String(), size)
		}
	})
	b.Run("proxy", func(b *testing.B) {
		addr, stop := benchProxy(b, up)
		defer stop()
		b.SetBytes(size)
		for b.Loop() {
			fetch(b, addr, size)
		}
	})
}

// Connection setup: connect, a request, a one-byte answer, close; direct and through the
// proxy (the difference is what the proxy adds per connection).
// go test ./netproxy -run - -bench Connect -benchtime 2000x
func BenchmarkConnect(b *testing.B) {
	up := serve(b, 1)
	defer up.Close()
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			fetch(b, up.Addr().String(), 1)
		}
	})
	b.Run("proxy", func(b *testing.B) {
		addr, stop := benchProxy(b, up)
		defer stop()
		for b.Loop() {
			fetch(b, addr, 1)
		}
	})
}
