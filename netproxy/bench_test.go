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

// benchProxy starts a proxy without a sandbox: its listener is bound on the host to the
// synthetic address of bulk.test (all of 127/8 is local), and bulk.test resolves to the
// upstream ln. It returns the address clients dial.
func benchProxy(b *testing.B, upstream net.Listener) (string, func()) {
	port := uint16(upstream.Addr().(*net.TCPAddr).Port)
	plan, err := NewPlan([]Rule{{Host: "bulk.test", Port: port, Endpoint: "bulk.test:" + strconv.Itoa(int(port))}})
	if err != nil {
		b.Fatal(err)
	}
	syn, _ := plan.Synthetic("bulk.test")
	ln, err := net.Listen("tcp", netip.AddrPortFrom(syn, port).String())
	if err != nil {
		b.Fatal(err)
	}
	dns, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	fd := func(c syscall.Conn) int {
		rc, _ := c.SyscallConn()
		var out int
		rc.Control(func(f uintptr) { out, _ = syscall.Dup(int(f)) })
		return out
	}
	diag, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 4 /* NETLINK_SOCK_DIAG */)
	if err != nil {
		b.Fatal(err)
	}
	fds := []int{fd(dns.(syscall.Conn)), fd(ln.(syscall.Conn)), diag}
	dns.Close()
	ln.Close()
	p := New(plan, Options{Resolve: map[string][]netip.Addr{"bulk.test": {netip.MustParseAddr("127.0.0.1")}}})
	if err := p.Start(fds, os.Getpid()); err != nil {
		b.Fatal(err)
	}
	return netip.AddrPortFrom(syn, port).String(), func() { p.Close() }
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
