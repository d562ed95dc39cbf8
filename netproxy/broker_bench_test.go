package netproxy

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strconv"
	"testing"
)

// tlsBulkUpstream is an HTTPS server for bulk.test (a test CA's certificate) answering every
// request with size zero bytes (Content-Length), keep-alive.
func tlsBulkUpstream(b *testing.B, size int64) (net.Listener, *x509.CertPool) {
	ca, err := NewBroker(nil)
	if err != nil {
		b.Fatal(err)
	}
	cert, err := ca.leaf("bulk.test")
	if err != nil {
		b.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca.ca)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{*cert}})
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
		for left := size; left > 0; {
			n, err := w.Write(buf[:min(left, int64(len(buf)))])
			if err != nil {
				return
			}
			left -= int64(n)
		}
	})}
	go srv.Serve(ln)
	b.Cleanup(func() { srv.Close() })
	return ln, roots
}

// brokerBenchProxy is a proxy for bulk.test on the upstream's port, brokering a token to it
// when broker is set (else TLS is spliced); it returns the synthetic address to dial and the
// CA pool a client inside trusts.
func brokerBenchProxy(b *testing.B, up net.Listener, upRoots *x509.CertPool, broker bool) (string, *x509.CertPool, string) {
	port := uint16(up.Addr().(*net.TCPAddr).Port)
	opts := Options{Resolve: map[string][]netip.Addr{"bulk.test": {netip.MustParseAddr("127.0.0.1")}}}
	clientRoots, standIn := upRoots, ""
	if broker {
		standIn, _ = NewStandIn(realToken)
		br, err := NewBroker([]Credential{{Name: "bench token", Hosts: []string{"bulk.test"}, Header: "Authorization", StandIn: standIn, Real: realToken}})
		if err != nil {
			b.Fatal(err)
		}
		br.Roots = upRoots
		clientRoots = x509.NewCertPool()
		clientRoots.AppendCertsFromPEM(br.CAPEM)
		opts.Broker = br
	}
	// The holder lookup every logged use makes walks this test's PID namespace (the host's
	// here; a sandbox's own is small): measured apart (owner lookups in BENCHMARKS.md).
	tweak := func(p *Proxy) {
		if os.Getenv("SYSPROF_BENCH_OWNER") == "" {
			p.ownerOf = func(string, netip.AddrPort, netip.AddrPort) []who { return []who{{Exe: "/usr/bin/node"}} }
		}
	}
	p, _ := startProxy(b, []Rule{{Host: "bulk.test", Port: port, Endpoint: "bulk.test:" + strconv.Itoa(int(port))}}, opts, tweak)
	b.Cleanup(func() { p.Close() })
	syn, _ := p.plan.Synthetic("bulk.test")
	return netip.AddrPortFrom(syn, port).String(), clientRoots, standIn
}

// tlsFetch makes one TLS connection to addr (as bulk.test), one GET with the token, reads
// the whole answer and closes.
func tlsFetch(b *testing.B, addr string, roots *x509.CertPool, token string, size int64) {
	c, err := tls.Dial("tcp", addr, &tls.Config{ServerName: "bulk.test", RootCAs: roots, NextProtos: []string{"http/1.1"}})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET /pkg HTTP/1.1\r\nHost: bulk.test\r\nAuthorization: Bearer "+token+"\r\nConnection: close\r\n\r\n"); err != nil {
		b.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReaderSize(c, 64<<10), nil)
	if err != nil {
		b.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil || n != size {
		b.Fatalf("got %d bytes, want %d: %v", n, size, err)
	}
}

// HTTPS bulk transfer, 256 MiB a connection: direct, through the proxy spliced (a name without
// a credentials rule), and through the broker (TLS terminated both ways, the token swapped,
// the body scanned for the real value on its way in).
// go test ./netproxy -run - -bench BrokerBulk -benchtime 10x
func BenchmarkBrokerBulk(b *testing.B) {
	const size = 256 << 20
	up, roots := tlsBulkUpstream(b, size)
	b.Run("direct", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			tlsFetch(b, up.Addr().String(), roots, realToken, size)
		}
	})
	for _, broker := range []bool{false, true} {
		name := map[bool]string{false: "splice", true: "broker"}[broker]
		b.Run(name, func(b *testing.B) {
			addr, clientRoots, standIn := brokerBenchProxy(b, up, roots, broker)
			if !broker {
				standIn = realToken
			}
			b.SetBytes(size)
			for b.Loop() {
				tlsFetch(b, addr, clientRoots, standIn, size)
			}
		})
	}
}

// HTTPS connection setup: connect, TLS, one GET, a one-byte answer, close; direct, spliced and
// brokered (the difference is what each adds per connection: the broker's two handshakes).
// go test ./netproxy -run - -bench BrokerConnect -benchtime 1000x
func BenchmarkBrokerConnect(b *testing.B) {
	up, roots := tlsBulkUpstream(b, 1)
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			tlsFetch(b, up.Addr().String(), roots, realToken, 1)
		}
	})
	for _, broker := range []bool{false, true} {
		name := map[bool]string{false: "splice", true: "broker"}[broker]
		b.Run(name, func(b *testing.B) {
			addr, clientRoots, standIn := brokerBenchProxy(b, up, roots, broker)
			if !broker {
				standIn = realToken
			}
			for b.Loop() {
				tlsFetch(b, addr, clientRoots, standIn, 1)
			}
		})
	}
}
