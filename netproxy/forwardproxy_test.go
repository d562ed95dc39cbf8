package netproxy

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
)

// forwardProxy is a loopback HTTP forward proxy (http_proxy's): an absolute-form request is
// answered "proxied URL", a CONNECT is tunnelled to 127.0.0.1 at the target's port. It
// records what it was asked for.
type forwardProxy struct {
	ln    net.Listener
	mu    sync.Mutex
	asked []string
}

func newForwardProxy(t *testing.T) *forwardProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &forwardProxy{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go f.handle(c)
		}
	}()
	return f
}

func (f *forwardProxy) handle(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		f.mu.Lock()
		f.asked = append(f.asked, req.Method+" "+req.RequestURI)
		f.mu.Unlock()
		if req.Method != "CONNECT" {
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\nproxied %s", len("proxied ")+len(req.RequestURI), req.RequestURI)
			if req.Close {
				return
			}
			continue
		}
		_, port, _ := net.SplitHostPort(req.RequestURI)
		up, err := net.Dial("tcp", "127.0.0.1:"+port)
		if err != nil {
			io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\n\r\n")
			return
		}
		defer up.Close()
		io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n")
		go func() { io.Copy(up, br); up.(*net.TCPConn).CloseWrite() }()
		io.Copy(c, up)
		return
	}
}

func (f *forwardProxy) port() uint16 { return uint16(f.ln.Addr().(*net.TCPAddr).Port) }

func (f *forwardProxy) saw() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.asked...)
}

// A forward proxy named by a rule (http_proxy=http://proxy.test:PORT) carries a request to
// exactly the destinations a rule allows, as if the tool had dialled them itself: its
// absolute-form target or CONNECT's host:port, and what a CONNECT tunnel carries (a TLS SNI,
// every HTTP request's Host) is checked against that target. Nothing refused reaches the proxy.
func TestForwardProxyTargetsChecked(t *testing.T) {
	fp := newForwardProxy(t)
	web := newUpstream(t, false)
	tlsUp := newUpstream(t, true)
	PP, WP, TP := fp.port(), web.port(), tlsUp.port()
	rules := []Rule{
		{Host: "proxy.test", Port: PP, Endpoint: fmt.Sprintf("proxy.test:%d", PP)},
		{Host: "web.test", Port: WP, Endpoint: fmt.Sprintf("web.test:%d", WP)},
		{Host: "tls.test", Port: TP, Endpoint: fmt.Sprintf("tls.test:%d", TP)},
	}
	connect := func(target string) string {
		return fmt.Sprintf("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	}
	get := func(url, host string) string {
		return fmt.Sprintf("GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", url, host)
	}
	web1 := fmt.Sprintf("web.test:%d", WP)
	for _, c := range []struct {
		name, raw  string
		want       string // in what the client reads back ("" none)
		denial     string // "" : none
		proxyAsked int
	}{
		{"absolute target allowed", get("http://"+web1+"/x", web1), "proxied http://" + web1 + "/x", "", 1},
		{"absolute target allowed, keep-alive", get("http://"+web1+"/a", web1) + get("http://Web.Test:"+fmt.Sprint(WP)+"/b", web1), "proxied http://Web.Test", "", 2},
		{"absolute target not in the profile", get("http://evil.test/", "evil.test"), "", "connect evil.test:80 tcp (through the proxy proxy.test:", 0},
		{"allowed name, other port", get("http://web.test:9/", "web.test:9"), "", "connect web.test:9 tcp (through the proxy", 0},
		{"allowed, then another target", get("http://"+web1+"/a", web1) + get("http://evil.test:8080/", "evil.test:8080"), "proxied http://" + web1 + "/a", "connect evil.test:8080 tcp (through the proxy", 1},
		{"https scheme takes port 443", get("https://web.test/", "web.test"), "", "connect web.test:443 tcp (through the proxy", 0},
		{"address target", get("http://10.9.9.9:"+fmt.Sprint(WP)+"/", "10.9.9.9"), "", "connect 10.9.9.9:", 0},
		{"CONNECT not in the profile", connect("evil.test:443"), "", "connect evil.test:443 tcp (through the proxy", 0},
		{"CONNECT, HTTP inside", connect(web1) + "GET / HTTP/1.1\r\nHost: web.test\r\nConnection: close\r\n\r\n", "upstream web.test", "", 1},
		{"CONNECT, HTTP inside to another host", connect(web1) + "GET / HTTP/1.1\r\nHost: evil.test\r\n\r\n", "", "HTTP Host evil.test", 1},
		{"CONNECT, not TLS nor HTTP inside", connect(web1) + "\x00\x01\x02binary", "", "CONNECT tunnel to web.test carries neither", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, _ := startProxy(t, rules, Options{Resolve: map[string][]netip.Addr{"proxy.test": lo}}, nil)
			before := len(fp.saw())
			a, _ := p.plan.Synthetic("proxy.test")
			out := exchange(t, netip.AddrPortFrom(a, PP).String(), c.raw)
			ds := denials(p)
			if c.want != "" && !strings.Contains(out, c.want) || strings.Contains(out, "evil.test") {
				t.Errorf("read back %q, want %q", out, c.want)
			}
			if got := fp.saw()[before:]; len(got) != c.proxyAsked {
				t.Errorf("the proxy was asked %q, want %d request(s)", got, c.proxyAsked)
			}
			if c.denial == "" && len(ds) > 0 || c.denial != "" && !hasDenial(ds, c.denial) {
				t.Errorf("denials %q, want one with %q", ds, c.denial)
			}
		})
	}
	// TLS through a CONNECT tunnel: its SNI must be the tunnel's target.
	for _, sni := range []string{"tls.test", "evil.test"} {
		t.Run("CONNECT, TLS inside to "+sni, func(t *testing.T) {
			p, _ := startProxy(t, rules, Options{Resolve: map[string][]netip.Addr{"proxy.test": lo}}, nil)
			a, _ := p.plan.Synthetic("proxy.test")
			c, err := net.Dial("tcp", netip.AddrPortFrom(a, PP).String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(20 * time.Second))
			fmt.Fprintf(c, "CONNECT tls.test:%d HTTP/1.1\r\nHost: tls.test:%d\r\n\r\n", TP, TP)
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("CONNECT: %v %v", resp, err)
			}
			tc := tls.Client(&bufConn{c, br}, &tls.Config{ServerName: sni, InsecureSkipVerify: true})
			herr := tc.Handshake()
			ds := denials(p)
			switch {
			case sni == "tls.test" && (herr != nil || len(ds) > 0):
				t.Errorf("handshake %v, denials %q", herr, ds)
			case sni != "tls.test" && (herr == nil || !hasDenial(ds, "TLS SNI evil.test")):
				t.Errorf("handshake %v, denials %q: want refused", herr, ds)
			}
		})
	}
}

// bufConn reads through the bufio.Reader that read the CONNECT answer.
type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (b *bufConn) Read(p []byte) (int, error) { return b.r.Read(p) }

// ProxyTarget finds what a request asks a forward proxy for, in first bytes cut short as
// learn captures them.
func TestProxyTarget(t *testing.T) {
	for _, c := range []struct {
		in   string
		host string
		port uint16
		ok   bool
	}{
		{"GET http://Web.Test:8080/x HTTP/1.1\r\nHost: web.test:8080\r\n", "web.test", 8080, true},
		{"GET http://web.test/ HTTP/1.1\r\nHo", "web.test", 80, true},
		{"POST https://web.test/ HTTP/1.1\r\n", "web.test", 443, true},
		{"CONNECT web.test:443 HTTP/1.1\r\n", "web.test", 443, true},
		{"CONNECT [fd00::1]:22 HTTP/1.1\r\n", "fd00::1", 22, true},
		{"GET http://10.0.0.1:81/ HTTP/1.1\r\n", "10.0.0.1", 81, true},
		{"GET / HTTP/1.1\r\nHost: web.test\r\n", "", 0, false},
		{"GET http://web.test/ HTT", "", 0, false},
		{"CONNECT web.test HTTP/1.1\r\n", "", 0, false},
		{"\x16\x03\x01", "", 0, false},
	} {
		host, port, ok := ProxyTarget([]byte(c.in))
		if host != c.host || port != c.port || ok != c.ok {
			t.Errorf("%q: %q %d %v, want %q %d %v", c.in, host, port, ok, c.host, c.port, c.ok)
		}
	}
}
