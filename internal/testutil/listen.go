package testutil

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Listen listens on network and addr until the test ends, accepting and closing every
// connection: something a sandboxed command may or may not reach. A TCP address must be on
// loopback (tests reach nothing else); a unix socket path or @abstract name is taken as it is.
func Listen(t testing.TB, network, addr string) net.Listener {
	t.Helper()
	l := listen(t, network, addr)
	if l == nil {
		return nil
	}
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

// listen is Listen without the accepting loop.
func listen(t testing.TB, network, addr string) net.Listener {
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
	return l
}

// LoopbackTCP listens on a free port of 127.0.0.1 (Listen) and returns the port.
func LoopbackTCP(t testing.TB) int {
	t.Helper()
	return Port(Listen(t, "tcp4", "127.0.0.1:0"))
}

// ServerPort is a free loopback TCP port for a server the test starts later, maybe several
// times (learn, enforce as root and as nobody), closed in between: one below the kernel's
// ephemeral range, which no connect and no listen on port 0 (another test's, another
// package's) is given meanwhile. The kernel's own pick for port 0 was free only until the next
// outgoing connection took it.
func ServerPort(t testing.TB) int {
	t.Helper()
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				low = n
			}
		}
	}
	const from = 10000
	if low <= from+100 {
		t.Fatalf("the ephemeral port range starts at %d: no room below it for the test's servers", low)
	}
	for range 200 {
		port := from + rand.IntN(low-from)
		if l, err := net.Listen("tcp4", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
			l.Close()
			return port
		}
	}
	t.Fatalf("no free loopback port in %d-%d", from, low-1)
	return 0
}

// Port is a TCP listener's port.
func Port(l net.Listener) int { return l.Addr().(*net.TCPAddr).Port }

// Recorder is a TCP server on 127.0.0.1 that keeps every byte it receives and answers an HTTP
// GET with a fixed body: the "attacker" an attack test's command may try to reach.
type Recorder struct {
	Port   int
	ln     net.Listener
	mu     sync.Mutex
	conns  int
	got    bytes.Buffer
	answer string
}

// Record listens on a free port of 127.0.0.1 until the test ends; answer(port) is the body of
// its reply to an HTTP GET (Content-Type text/x-sh: a script an attack fetches).
func Record(t testing.TB, answer func(port int) string) *Recorder {
	t.Helper()
	ln := listen(t, "tcp4", "127.0.0.1:0")
	port := Port(ln)
	r := &Recorder{Port: port, ln: ln, answer: answer(port)}
	go r.serve()
	return r
}

func (r *Recorder) serve() {
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			r.mu.Lock()
			r.conns++
			r.mu.Unlock()
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			buf := make([]byte, 4096)
			for {
				n, err := c.Read(buf)
				r.mu.Lock()
				r.got.Write(buf[:n])
				req := r.got.String()
				r.mu.Unlock()
				if strings.HasPrefix(req, "GET ") && strings.Contains(req, "\r\n\r\n") {
					fmt.Fprintf(c, "HTTP/1.0 200 OK\r\nContent-Type: text/x-sh\r\nContent-Length: %d\r\n\r\n%s", len(r.answer), r.answer)
					return
				}
				if err != nil {
					return
				}
			}
		}()
	}
}

// Received returns how many connections were accepted and every byte they sent.
func (r *Recorder) Received() (int, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.conns, r.got.String()
}

// LoopbackUDP binds a free UDP port of 127.0.0.1 until the test ends, reading and dropping
// every datagram, and returns the port.
func LoopbackUDP(t testing.TB) int {
	t.Helper()
	c, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			if _, _, err := c.ReadFrom(buf); err != nil {
				return
			}
		}
	}()
	return c.LocalAddr().(*net.UDPAddr).Port
}
