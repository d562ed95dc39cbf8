package netproxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
)

// upstream is a loopback HTTP server that answers "upstream HOST" and records each request's
// Host.
type upstream struct {
	*httptest.Server
	mu    sync.Mutex
	hosts []string
}

func newUpstream(t *testing.T, useTLS bool) *upstream {
	u := &upstream{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		u.mu.Lock()
		u.hosts = append(u.hosts, r.Host)
		u.mu.Unlock()
		fmt.Fprintf(w, "upstream %s", r.Host)
	})
	if useTLS {
		u.Server = httptest.NewTLSServer(h)
	} else {
		u.Server = httptest.NewServer(h)
	}
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) port() uint16 { return uint16(u.Listener.Addr().(*net.TCPAddr).Port) }

func (u *upstream) saw() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.hosts...)
}

var lo = []netip.Addr{netip.MustParseAddr("127.0.0.1")}

// nameProxy starts a proxy allowing allowed.test on the upstreams' ports, every name
// resolving to loopback.
func nameProxy(t *testing.T, tweak func(*Proxy), ports ...uint16) (*Proxy, string) {
	var rules []Rule
	for _, port := range ports {
		rules = append(rules, Rule{Host: "allowed.test", Port: port, Endpoint: fmt.Sprintf("allowed.test:%d", port)})
	}
	p, dns := startProxy(t, rules, Options{Resolve: map[string][]netip.Addr{"allowed.test": lo}}, tweak)
	t.Cleanup(func() { p.Close() })
	return p, dns
}

func synth(p *Proxy, port uint16) string {
	a, _ := p.plan.Synthetic("allowed.test")
	return netip.AddrPortFrom(a, port).String()
}

// exchange sends raw bytes on a new connection and returns all it reads back until the
// proxy or the upstream closes.
func exchange(t *testing.T, addr string, raw string) string {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second)) // a hang fails, not a timing assertion
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(c)
	return string(b)
}

// denials closes the proxy and returns its denials' What.
func denials(p *Proxy) []string {
	ds, _ := p.Close()
	var out []string
	for _, d := range ds {
		out = append(out, d.What)
	}
	return out
}

func hasDenial(ds []string, frag string) bool {
	for _, d := range ds {
		if strings.Contains(d, frag) {
			return true
		}
	}
	return false
}

// Every request of a plain-HTTP connection is checked by name, however it is spelled; what
// the proxy cannot check is refused and reported, and nothing of it reaches the upstream.
func TestProxyHTTPEveryRequestChecked(t *testing.T) {
	u := newUpstream(t, false)
	P := u.port()
	const req = "GET / HTTP/1.1\r\nHost: %s\r\n\r\n"
	for _, c := range []struct {
		name, raw string
		denial    string // "" : benign, every request answered
		answers   int
	}{
		{"benign keep-alive", fmt.Sprintf(req+req, "allowed.test", "Allowed.Test:80") + "GET / HTTP/1.1\r\nHost: allowed.test\r\nConnection: close\r\n\r\n", "", 3},
		{"benign leading CRLF", "\r\n\r\n" + fmt.Sprintf(req, "allowed.test") + "\r\nGET / HTTP/1.1\r\nHost: allowed.test\r\nConnection: close\r\n\r\n", "", 2},
		{"benign other method", "PROPFIND / HTTP/1.1\r\nHost: allowed.test\r\nConnection: close\r\n\r\n", "", 1},
		{"benign bodies then a request", "POST / HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: 36\r\n\r\nGET / HTTP/1.1\r\nHost: other.test\r\n\r\n" +
			"POST / HTTP/1.1\r\nHost: allowed.test\r\nTransfer-Encoding: chunked\r\n\r\n24\r\nGET / HTTP/1.x\r\nHost: other.test\r\n\r\n\r\n0\r\nX-T: 1\r\n\r\n" +
			"GET / HTTP/1.1\r\nHost: allowed.test\r\nConnection: close\r\n\r\n", "", 3},
		{"keep-alive second request to another host", fmt.Sprintf(req+req, "allowed.test", "other.test"), "HTTP Host other.test on a connection resolved for allowed.test", 1},
		{"after a body, another host", "POST / HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: 3\r\n\r\nabc" + fmt.Sprintf(req, "other.test"), "HTTP Host other.test", 1},
		{"after a chunked body, another host", "POST / HTTP/1.1\r\nHost: allowed.test\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n" + fmt.Sprintf(req, "other.test"), "HTTP Host other.test", 1},
		{"leading CRLF", "\r\n" + fmt.Sprintf(req, "other.test"), "HTTP Host other.test", 0},
		{"other method", "PROPFIND / HTTP/1.1\r\nHost: other.test\r\n\r\n", "HTTP Host other.test", 0},
		{"lowercase method", "get / HTTP/1.1\r\nHost: other.test\r\n\r\n", "HTTP Host other.test", 0},
		{"h2c prior knowledge", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "HTTP/2 over cleartext", 0},
		{"h2c upgrade", "GET / HTTP/1.1\r\nHost: allowed.test\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA\r\n\r\n", "HTTP Upgrade", 0},
		{"no Host", "GET / HTTP/1.0\r\n\r\n", "HTTP request without a Host header", 0},
		{"HTTP/0.9", "GET /\r\n\r\n", "malformed HTTP request line", 0},
		{"bare LF", "GET / HTTP/1.1\nHost: other.test\n\n", "request line ended by a bare LF", 0},
		{"folded header", "GET / HTTP/1.1\r\nHost: allowed.test\r\nX: a\r\n Host: other.test\r\n\r\n", "folded", 0},
		{"space before colon", "GET / HTTP/1.1\r\nHost : other.test\r\nHost: allowed.test\r\n\r\n", "malformed HTTP header", 0},
		{"TE and CL", "POST / HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "both Transfer-Encoding and Content-Length", 0},
		{"absolute target", "GET http://other.test/ HTTP/1.1\r\n\r\n", "connect other.test:80 tcp (through the proxy allowed.test:", 0},
		// Request smuggling (RFC 9112 §6): the proxy and the server must see the same requests.
		// A chunked body holding what parses as a request: refused before that line leaves,
		// should the upstream frame the body otherwise (also split over chunks).
		{"chunked body holding a request", "POST / HTTP/1.1\r\nHost: allowed.test\r\nTransfer-Encoding: chunked\r\n\r\n" +
			"23\r\nGET / HTTP/1.1\r\nHost: evil.test\r\n\r\n\r\n0\r\n\r\n" + "GET / HTTP/1.1\r\nHost: allowed.test\r\nConnection: close\r\n\r\n", "chunked body carries what parses as a request line", 1},
		{"chunked body holding a request over two chunks", "POST / HTTP/1.1\r\nHost: allowed.test\r\nTransfer-Encoding: chunked\r\n\r\n" +
			"b\r\nGET / HTTP/\r\n18\r\n1.1\r\nHost: evil.test\r\n\r\n\r\n0\r\n\r\n", "chunked body carries what parses as a request line", 1},
		{"CL and TE", "POST / HTTP/1.1\r\nHost: allowed.test\r\nTransfer-Encoding: chunked\r\nContent-Length: 40\r\n\r\n0\r\n\r\n" + fmt.Sprintf(req, "evil.test"), "both Transfer-Encoding and Content-Length", 0},
		{"TE not ending in chunked", "POST / HTTP/1.1\r\nHost: allowed.test\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n" + fmt.Sprintf(req, "evil.test"), "Transfer-Encoding not ending in chunked", 0},
		{"TE gzip only", "POST / HTTP/1.1\r\nHost: allowed.test\r\nTransfer-Encoding: gzip\r\n\r\n" + fmt.Sprintf(req, "evil.test"), "Transfer-Encoding not ending in chunked", 0},
		{"TE xchunked", "POST / HTTP/1.1\r\nHost: allowed.test\r\nTransfer-Encoding: xchunked\r\n\r\n" + fmt.Sprintf(req, "evil.test"), "Transfer-Encoding not ending in chunked", 0},
		{"TE chunked twice", "POST / HTTP/1.1\r\nHost: allowed.test\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "chunked applied twice", 0},
		{"TE in HTTP/1.0", "POST / HTTP/1.0\r\nHost: allowed.test\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "Transfer-Encoding in an HTTP/1.0 request", 0},
		{"TE folded", "POST / HTTP/1.1\r\nHost: allowed.test\r\nTransfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n", "folded", 0},
		{"TE with underscore", "POST / HTTP/1.1\r\nHost: allowed.test\r\nTransfer_Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n", "Transfer_Encoding", 0},
		{"CL with underscore", "POST / HTTP/1.1\r\nHost: allowed.test\r\nContent_Length: 5\r\n\r\nhello", "Content_Length", 0},
		{"CL disagreeing", "POST / HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!", "Content-Length values disagree", 0},
		{"CL signed", "POST / HTTP/1.1\r\nHost: allowed.test\r\nContent-Length: +5\r\n\r\nhello", "malformed Content-Length", 0},
		{"bare LF in a header", "GET / HTTP/1.1\r\nHost: allowed.test\nHost: evil.test\r\n\r\n", "control character", 0},
		{"bare CR in a header", "GET / HTTP/1.1\r\nHost: allowed.test\rX: 1\r\n\r\n", "control character", 0},
		{"bare LF ending a chunk size", "POST / HTTP/1.1\r\nHost: allowed.test\r\nTransfer-Encoding: chunked\r\n\r\n3\nabc\r\n0\r\n\r\n" + fmt.Sprintf(req, "evil.test"), "chunk size line ended by a bare LF", 1},
		{"chunk size 0x", "POST / HTTP/1.1\r\nHost: allowed.test\r\nTransfer-Encoding: chunked\r\n\r\n0x3\r\nabc\r\n0\r\n\r\n" + fmt.Sprintf(req, "evil.test"), "malformed HTTP chunk size", 1},
		{"chunk size negative", "POST / HTTP/1.1\r\nHost: allowed.test\r\nTransfer-Encoding: chunked\r\n\r\n-3\r\nabc\r\n0\r\n\r\n" + fmt.Sprintf(req, "evil.test"), "malformed HTTP chunk size", 1},
		{"chunk size overflowing", "POST / HTTP/1.1\r\nHost: allowed.test\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000003\r\nabc\r\n0\r\n\r\n" + fmt.Sprintf(req, "evil.test"), "malformed HTTP chunk size", 1},
		{"chunk size with space", "POST / HTTP/1.1\r\nHost: allowed.test\r\nTransfer-Encoding: chunked\r\n\r\n3 \r\nabc\r\n0\r\n\r\n" + fmt.Sprintf(req, "evil.test"), "malformed HTTP chunk size", 1},
		{"chunk longer than its size", "POST / HTTP/1.1\r\nHost: allowed.test\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcGET / HTTP/1.1\r\nHost: evil.test\r\n\r\n0\r\n\r\n", "HTTP chunk not ended by CRLF", 1},
		{"not HTTP, TLS or SSH", "\x00\x01\x02hello\r\n", "neither a TLS ClientHello", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, _ := nameProxy(t, nil, P)
			before := len(u.saw())
			out := exchange(t, synth(p, P), c.raw)
			ds := denials(p)
			got := u.saw()[before:]
			if n := strings.Count(strings.ToLower(out), "upstream allowed.test"); n != c.answers || len(got) != c.answers || strings.Contains(out, "other.test") {
				t.Errorf("%d answers, upstream saw %q, want %d allowed.test\n%s", n, got, c.answers, out)
			}
			if c.denial == "" && len(ds) > 0 || c.denial != "" && !hasDenial(ds, c.denial) {
				t.Errorf("denials %q, want one with %q", ds, c.denial)
			}
		})
	}
}

// A ClientHello without SNI passes on a synthetic address only once the stub has answered
// that name in this run.
func TestProxyTLSWithoutSNI(t *testing.T) {
	u := newUpstream(t, true)
	P := u.port()
	p, dns := nameProxy(t, nil, P)
	get := func() error {
		c, err := tls.Dial("tcp", synth(p, P), &tls.Config{InsecureSkipVerify: true}) // an address: no SNI
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(20 * time.Second))
		fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: allowed.test\r\nConnection: close\r\n\r\n")
		b, err := io.ReadAll(c)
		if !strings.Contains(string(b), "upstream allowed.test") {
			return fmt.Errorf("answer %q: %v", b, err)
		}
		return nil
	}
	if err := get(); err == nil {
		t.Errorf("a ClientHello without SNI to an address the stub never answered passed")
	}
	query(t, dns, "allowed.test.", 9)
	if err := get(); err != nil {
		t.Errorf("a ClientHello without SNI after the stub answered the name: %v", err)
	}
	if ds := denials(p); len(ds) != 1 || !hasDenial(ds, "TLS ClientHello without SNI to an address the DNS stub did not answer") {
		t.Errorf("denials %q", ds)
	}
}

// query sends an A query to the stub and returns the answer.
func query(t *testing.T, dns, name string, id uint16) dnsmessage.Message {
	m, err := queryErr(dns, name, id)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func queryErr(dns, name string, id uint16) (dnsmessage.Message, error) {
	var m dnsmessage.Message
	c, err := net.Dial("udp", dns)
	if err != nil {
		return m, err
	}
	defer c.Close()
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: id})
	b.StartQuestions()
	b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName(name), Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET})
	msg, _ := b.Finish()
	c.Write(msg)
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	buf := make([]byte, 512)
	n, err := c.Read(buf)
	if err != nil {
		return m, fmt.Errorf("query %s: %w", name, err)
	}
	return m, m.Unpack(buf[:n])
}

// speakFirst is a server that sends a banner, then echoes.
func speakFirst(t *testing.T) uint16 {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.WriteString(c, "SSH-2.0-server\r\n")
				io.Copy(c, c)
			}()
		}
	}()
	return uint16(ln.Addr().(*net.TCPAddr).Port)
}

// An SSH banner or a silent client goes by the stub's name only when the server speaks
// first: in front of an HTTP server (which never does) nothing the client sent arrives.
func TestProxyServerFirst(t *testing.T) {
	old := serverFirstWait
	serverFirstWait = 300 * time.Millisecond
	defer func() { serverFirstWait = old }()
	u := newUpstream(t, false)
	S := speakFirst(t)
	p, _ := nameProxy(t, nil, u.port(), S)
	if out := exchange(t, synth(p, u.port()), "SSH-2.0-x\r\nGET / HTTP/1.1\r\nHost: other.test\r\n\r\n"); out != "" || len(u.saw()) != 0 {
		t.Errorf("an SSH banner carried a request to the HTTP upstream: %q, upstream saw %q", out, u.saw())
	}
	// Benign: a client with a banner, and a silent one, in front of a server that speaks first.
	c, err := net.Dial("tcp", synth(p, S))
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(20 * time.Second))
	io.WriteString(c, "SSH-2.0-client\r\n")
	r := bufio.NewReader(c)
	l1, _ := r.ReadString('\n')
	l2, _ := r.ReadString('\n')
	c.Close()
	if l1 != "SSH-2.0-server\r\n" || l2 != "SSH-2.0-client\r\n" {
		t.Errorf("ssh through the proxy: %q %q", l1, l2)
	}
	c, err = net.Dial("tcp", synth(p, S))
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(20 * time.Second))
	l1, _ = bufio.NewReader(c).ReadString('\n')
	c.Close()
	if l1 != "SSH-2.0-server\r\n" {
		t.Errorf("server-first through the proxy: %q", l1)
	}
	if ds := denials(p); len(ds) != 1 || !hasDenial(ds, "ssh: the server did not speak first") {
		t.Errorf("denials %q", ds)
	}
}

// The name is resolved at each connect: an address that changes between two connects of one
// run denies nothing, and each connection reaches the address of its time.
func TestProxyAddressChangesBetweenConnects(t *testing.T) {
	var ups []*upstream
	var port uint16
	for i, a := range []string{"127.0.0.1", "127.0.0.2"} {
		u := &upstream{}
		u.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "upstream %s at %s", r.Host, a)
		}))
		ln, err := net.Listen("tcp", net.JoinHostPort(a, strconv.Itoa(int(port))))
		if err != nil {
			t.Fatalf("listen on %s (all of 127/8 is local): %v", a, err)
		}
		u.Listener.Close()
		u.Listener = ln
		u.Start()
		t.Cleanup(u.Close)
		ups = append(ups, u)
		if i == 0 {
			port = u.port()
		}
	}
	var mu sync.Mutex
	calls := 0
	p, _ := nameProxy(t, func(p *Proxy) {
		p.lookup = func(context.Context, string) ([]netip.Addr, bool, error) {
			mu.Lock()
			defer mu.Unlock()
			calls++
			return []netip.Addr{netip.MustParseAddr(fmt.Sprintf("127.0.0.%d", calls))}, true, nil
		}
	}, port)
	for i := range 2 {
		out := exchange(t, synth(p, port), "GET / HTTP/1.1\r\nHost: allowed.test\r\nConnection: close\r\n\r\n")
		if want := fmt.Sprintf("upstream allowed.test at 127.0.0.%d", i+1); !strings.Contains(out, want) {
			t.Errorf("connect %d: %q, want %q", i+1, out, want)
		}
	}
	if ds := denials(p); len(ds) != 0 {
		t.Errorf("denials %q", ds)
	}
}

// A refused query's owner lookup runs off the stub's goroutine: while one is stuck, other
// queries are answered; the refusal names the binary when the lookup ends.
func TestStubOwnerLookupDoesNotBlock(t *testing.T) {
	release := make(chan struct{})
	p, dns := nameProxy(t, func(p *Proxy) {
		p.ownerOf = func(proto string, loc, rem netip.AddrPort) []who {
			if proto == "udp" {
				<-release
			}
			return []who{{Pid: 1, Exe: "/bin/asker"}}
		}
	}, 80)
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) }) // before the proxy's Close
	denied := make(chan dnsmessage.Message, 1)
	go func() { m, _ := queryErr(dns, "c2VjcmV0.evil.test.", 1); denied <- m }()
	time.Sleep(10 * time.Millisecond) // the refused query first, usually (the order is not what is checked)
	for range 3 {
		if m := query(t, dns, "allowed.test.", 2); m.RCode != dnsmessage.RCodeSuccess || len(m.Answers) != 1 {
			t.Fatalf("allowed query while a refusal's lookup runs: %+v", m)
		}
	}
	once.Do(func() { close(release) })
	if m := <-denied; m.RCode != dnsmessage.RCodeNameError {
		t.Errorf("refused query: %+v", m)
	}
	ds, _ := p.Close()
	if len(ds) != 1 || ds[0].Exe != "/bin/asker" || ds[0].Kind != report.KindNetwork || !strings.Contains(ds[0].What, "resolve c2vjcmv0.evil.test") {
		t.Fatalf("denials %+v", ds)
	}
	// A lookup has no port: the rule it suggests is the name for the stub, as data and text.
	if g, ok := ds[0].Suggested(); !ok || g.Section != policy.SectionResolve || g.Item != "c2vjcmv0.evil.test" || ds[0].Suggest != "network.resolve: + c2vjcmv0.evil.test" {
		t.Errorf("the refused lookup suggests %q (%+v), want network.resolve: + c2vjcmv0.evil.test", ds[0].Suggest, ds[0].Change)
	}
}

// Every holder of a connection's socket must be allowed a per-binary rule: the rule's very
// file passes, and its transport helpers under it; a child given the allowed binary's socket
// does not, nor anything else that runs under the binary (a hook, a process forked before its
// parent exec'd the binary), nor a copy of its bytes elsewhere, nor a helper's name outside
// the system directories.
func TestMayUse(t *testing.T) {
	files := map[string]fileID{
		"/usr/bin/git": {1, 10}, "/usr/local/bin/git": {1, 10}, // a hard link: the same file
		"/usr/lib/git-core/git":              {1, 16}, // a copy (Debian): git's exec path, a helper
		"/usr/lib/git-core/git-remote-https": {1, 11}, "/usr/bin/ssh": {1, 12},
		"/usr/bin/node": {1, 13}, "/bin/sh": {1, 14}, "/usr/bin/curl": {1, 15},
		"/tmp/git": {2, 20}, "/work/ssh": {2, 21},
	}
	at := func(p string) (fileID, bool) { f, ok := files[p]; return f, ok }
	proc := func(pid int, exe string, parents ...any) who {
		w := who{Pid: pid, Exe: exe, id: files[exe]}
		for i := 0; i < len(parents); i += 2 {
			w.ppids = append(w.ppids, parents[i].(int))
			w.Parents = append(w.Parents, parents[i+1].(string))
			w.pids = append(w.pids, files[parents[i+1].(string)])
		}
		return w
	}
	git := proc(10, "/usr/bin/git", 5, "/bin/sh")
	gitLink := proc(15, "/usr/local/bin/git", 10, "/usr/bin/git")
	helper := proc(11, "/usr/lib/git-core/git-remote-https", 10, "/usr/bin/git", 5, "/bin/sh")
	viaExecPath := proc(24, "/usr/lib/git-core/git-remote-https", 25, "/usr/lib/git-core/git", 10, "/usr/bin/git")
	hookViaExecPath := proc(26, "/usr/bin/curl", 25, "/usr/lib/git-core/git", 10, "/usr/bin/git")
	hook := proc(12, "/usr/bin/node", 10, "/usr/bin/git", 5, "/bin/sh")
	hookCurl := proc(16, "/usr/bin/curl", 17, "/bin/sh", 10, "/usr/bin/git")
	node := proc(5, "/usr/bin/node", 1, "/init")
	ssh := proc(14, "/usr/bin/ssh", 10, "/usr/bin/git")
	sshFork := proc(13, "/usr/bin/ssh", 14, "/usr/bin/ssh", 10, "/usr/bin/git")
	sshViaShell := proc(18, "/usr/bin/ssh", 19, "/bin/sh", 10, "/usr/bin/git")
	copied := proc(20, "/tmp/git", 10, "/usr/bin/git")
	fakeSSH := proc(21, "/work/ssh", 10, "/usr/bin/git")
	forkedBefore := proc(22, "/usr/bin/curl", 10, "/usr/bin/git") // its parent exec'd git after the fork
	gone := who{Pid: 23, Exe: "/usr/bin/git"}                     // no file identity: never passes
	for _, c := range []struct {
		name string
		hs   []who
		ok   bool
		bad  string
	}{
		{"the binary", []who{git}, true, ""},
		{"the binary by a hard link", []who{gitLink}, true, ""},
		{"a helper that connected", []who{helper}, true, ""},
		{"a helper started through git's exec path", []who{viaExecPath}, true, ""},
		{"a hook of git's exec path", []who{hookViaExecPath}, false, "/usr/bin/curl"},
		{"a forked copy of a helper", []who{ssh, sshFork}, true, ""},
		{"a helper through a shell", []who{sshViaShell}, false, "/usr/bin/ssh"},
		{"a hook", []who{hook}, false, "/usr/bin/node"},
		{"a hook's child", []who{hookCurl}, false, "/usr/bin/curl"},
		{"forked before its parent exec'd the binary", []who{forkedBefore}, false, "/usr/bin/curl"},
		{"a copy of the binary's bytes", []who{copied}, false, "/tmp/git"},
		{"a helper's name outside the system directories", []who{fakeSSH}, false, "/work/ssh"},
		{"a child given the binary's socket", []who{git, hook}, false, "/usr/bin/node"},
		// A helper passes alone, not with the socket inherited from the binary above it (the
		// check of the holders' ancestry, which the rows above pass without).
		{"a helper given the binary's socket", []who{git, helper}, false, "/usr/lib/git-core/git-remote-https"},
		{"an ancestor holding it too", []who{node, git}, false, "/usr/bin/node"},
		{"another process holding it too", []who{git, proc(20, "/usr/bin/node", 1, "/init")}, false, "/usr/bin/node"},
		{"a process whose file is unknown", []who{gone}, false, "/usr/bin/git"},
		{"nobody (gone)", nil, false, ""},
	} {
		b, ok := mayUse(c.hs, "/usr/bin/git", at)
		if ok != c.ok || b.Exe != c.bad {
			t.Errorf("%s: %v %q", c.name, ok, b.Exe)
		}
	}
	// A rule whose binary is not in the sandbox passes for nobody; a tool without helpers
	// (node) passes for its own file only.
	if _, ok := mayUse([]who{git}, "/opt/gone/git", at); ok {
		t.Error("a rule naming a missing binary passed")
	}
	if _, ok := mayUse([]who{proc(30, "/usr/bin/curl", 5, "/usr/bin/node")}, "/usr/bin/node", at); ok {
		t.Error("a child of node passed node's rule")
	}
}

// A rule's binary and what a process runs are compared as files: a hard link is the same
// file, a copy of the same bytes is not, and a process's exe is what its path names.
func TestFileIdentity(t *testing.T) {
	dir := t.TempDir()
	orig, link, cp := filepath.Join(dir, "tool"), filepath.Join(dir, "link"), filepath.Join(dir, "copy")
	if err := os.WriteFile(orig, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(orig, link); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cp, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	self := os.Getpid()
	a, ok1 := fileIn(self, orig)
	b, ok2 := fileIn(self, link)
	c, ok3 := fileIn(self, cp)
	if !ok1 || !ok2 || !ok3 || a != b || a == c {
		t.Errorf("tool %v %v, its hard link %v %v, its copy %v %v", a, ok1, b, ok2, c, ok3)
	}
	if _, ok := fileIn(self, filepath.Join(dir, "missing")); ok {
		t.Error("a missing file has an identity")
	}
	if _, ok := fileIn(self, dir); ok {
		t.Error("a directory passed for a binary")
	}
	exe, _ := os.Executable()
	if f, ok := fileIn(self, exe); !ok || exeID(self) != f || f == (fileID{}) {
		t.Errorf("this process runs %v, its executable's path names %v %v", exeID(self), f, ok)
	}
}

// A per-binary rule on a name checks the socket's holders as they were at accept and after the
// first bytes: a process that connected and wrote its request, then exec'd the rule's binary
// keeping the socket (so that the binary holds it once the bytes arrive), is refused and on
// the record; the binary holding it at both passes.
func TestPerBinaryCheckedAtAccept(t *testing.T) {
	files := map[string]fileID{"/usr/bin/tool": {1, 1}}
	payload := who{Pid: 7, Exe: "/tmp/payload", id: fileID{9, 9}}
	tool := who{Pid: 7, Exe: "/usr/bin/tool", id: fileID{1, 1}}
	rules := []Rule{{Host: "allowed.test", Port: 80, By: "/usr/bin/tool", Endpoint: "allowed.test:80"}}
	plan, err := NewPlan(rules)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		atAccept who
		ok       bool
	}{{"the tool from the start", tool, true}, {"connected, wrote, then exec'd the tool", payload, false}} {
		p := New(plan, Options{})
		p.fileAt = func(path string) (fileID, bool) { f, ok := files[path]; return f, ok }
		p.ownerOf = func(string, netip.AddrPort, netip.AddrPort) []who { return []who{tool} } // after the first bytes
		pc := &proxyConn{p: p, isName: true, name: "allowed.test", port: 80, target: "allowed.test:80", targetHost: "allowed.test",
			holders: func() []who { return []who{c.atAccept} }}
		_, ok := pc.checkBinaries(rules)
		ds := denials(p)
		if ok != c.ok || !ok && !hasDenial(ds, "connect allowed.test:80 tcp (by /tmp/payload: the rule names /usr/bin/tool;") || ok && len(ds) > 0 {
			t.Errorf("%s: passed %v, denials %q", c.name, ok, ds)
		}
	}
}

// A rule's binary is the file its path named when the proxy started, before the command ran:
// a command that replaces it where it may write does not make its own file the rule's (the
// path is not resolved again for each connection); a binary missing then is found once the
// run made it, and kept.
func TestRuleBinaryResolvedOnceARun(t *testing.T) {
	dir := t.TempDir()
	tool, later := filepath.Join(dir, "tool"), filepath.Join(dir, "later")
	if err := os.WriteFile(tool, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	plan, err := NewPlan([]Rule{{Host: "a.test", Port: 80, By: tool}, {Host: "b.test", Port: 80, By: later}})
	if err != nil {
		t.Fatal(err)
	}
	p := New(plan, Options{})
	p.root = os.Getpid()
	p.knownFiles()
	orig, ok := fileIn(p.root, tool)
	if !ok {
		t.Fatal("the tool has no identity")
	}
	// The command writes its payload and renames it over the rule's binary.
	if err := os.WriteFile(tool+".new", []byte("#!/bin/sh\necho payload\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tool+".new", tool); err != nil {
		t.Fatal(err)
	}
	payload, _ := fileIn(p.root, tool)
	if f, ok := p.fileAt(tool); !ok || f != orig || f == payload {
		t.Errorf("the rule's binary after the command replaced it: %v %v, want the original %v (the payload is %v)", f, ok, orig, payload)
	}
	if _, ok := p.fileAt(later); ok {
		t.Error("a missing binary has an identity")
	}
	if err := os.WriteFile(later, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	made, _ := fileIn(p.root, later)
	if f, ok := p.fileAt(later); !ok || f != made {
		t.Errorf("a binary the run made: %v %v, want %v", f, ok, made)
	}
}
