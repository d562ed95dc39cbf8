package netproxy

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"strings"
	"sync"
	"time"

	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
)

// handshakeWait bounds each TLS handshake of a brokered connection.
const handshakeWait = 30 * time.Second

// prefixConn is a client connection whose first bytes (read by the sniffer) are read again.
type prefixConn struct {
	net.Conn
	buf []byte
}

func (c *prefixConn) Read(b []byte) (int, error) {
	if len(c.buf) > 0 {
		n := copy(b, c.buf)
		c.buf = c.buf[n:]
		return n, nil
	}
	return c.Conn.Read(b)
}

// rawBuf is what a brokered connection reads from a socket at once and writes to it at once:
// crypto/tls reads and writes about one record (16 KiB) a system call.
const rawBuf = 256 << 10

// rawConn is the socket under a brokered TLS connection: reads are served from a large buffer
// (one read(2) fetches every record the socket holds), and the records of one tlsBatch.Write
// go out in one write(2).
type rawConn struct {
	net.Conn
	r     *bufio.Reader
	mu    sync.Mutex
	batch bool
	wbuf  []byte
}

// rawReaders and rawWriters keep the large buffers between connections: allocating (and
// zeroing) them cost a brokered connection more than its upstream's certificate check.
var (
	rawReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, rawBuf) }}
	rawWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, rawBuf) }}
)

func newRawConn(c net.Conn) *rawConn {
	r := rawReaders.Get().(*bufio.Reader)
	r.Reset(c)
	return &rawConn{Conn: c, r: r}
}

func (c *rawConn) Read(b []byte) (int, error) {
	if c.r == nil {
		return 0, net.ErrClosed
	}
	return c.r.Read(b)
}

// release gives the read buffer back once nothing reads the connection any more.
func (c *rawConn) release() {
	if c == nil || c.r == nil {
		return
	}
	c.r.Reset(nil)
	rawReaders.Put(c.r)
	c.r = nil
}

func (c *rawConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.batch {
		c.wbuf = append(c.wbuf, b...)
		return len(b), nil
	}
	return c.Conn.Write(b)
}

func (c *rawConn) begin() {
	c.mu.Lock()
	c.batch = true
	c.mu.Unlock()
}

// flush writes what the batch held (also a record another goroutine wrote meanwhile: an alert).
func (c *rawConn) flush() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.batch = false
	if len(c.wbuf) == 0 {
		return nil
	}
	_, err := c.Conn.Write(c.wbuf)
	c.wbuf = c.wbuf[:0]
	return err
}

// tlsBatch is a TLS connection whose every Write reaches its socket in one write(2).
type tlsBatch struct {
	*tls.Conn
	raw *rawConn
}

func (c *tlsBatch) Write(b []byte) (int, error) {
	c.raw.begin()
	n, err := c.Conn.Write(b)
	if ferr := c.raw.flush(); err == nil && ferr != nil {
		return 0, ferr
	}
	return n, err
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

// scanReader passes a stream through while looking for needle across read boundaries: it
// holds back len(needle)-1 bytes until it knows they do not start it, and fails with found
// (nothing of the match passed) when it appears.
type scanReader struct {
	r      io.Reader
	needle []byte
	fold   bool // also in another case (a stand-in)
	found  error
	// tripped: found was returned (net/http wraps a body's read error without Unwrap).
	tripped bool
	buf     []byte // read, not yet returned
	eof     error
}

func (s *scanReader) Read(p []byte) (int, error) {
	keep := len(s.needle) - 1
	for {
		if s.eof == nil && len(s.buf) < keep+len(p) {
			if cap(s.buf)-len(s.buf) < 32<<10 {
				nb := make([]byte, len(s.buf), len(s.buf)+64<<10)
				copy(nb, s.buf)
				s.buf = nb
			}
			n, err := s.r.Read(s.buf[len(s.buf):cap(s.buf)])
			s.buf = s.buf[:len(s.buf)+n]
			if err != nil {
				s.eof = err
			}
			if s.hit() {
				s.tripped = true
				return 0, s.found
			}
			if n == 0 && err == nil {
				continue
			}
		}
		avail := len(s.buf)
		if s.eof == nil {
			avail -= keep
		}
		if avail <= 0 {
			if s.eof != nil {
				return 0, s.eof
			}
			continue
		}
		n := copy(p, s.buf[:avail])
		s.buf = s.buf[:copy(s.buf, s.buf[n:])]
		return n, nil
	}
}

func (s *scanReader) hit() bool {
	if bytes.Contains(s.buf, s.needle) {
		return true
	}
	return s.fold && bytes.Contains(bytes.ToLower(s.buf), bytes.ToLower(s.needle))
}

type scanBody struct {
	io.Reader
	io.Closer
}

// broker carries a connection to a name with a credentials rule (cred): TLS is terminated
// with the run CA's certificate for the name (plain HTTP is read as is), every request is
// read whole, checked, its credential header's stand-in swapped for the real value, and sent
// over the proxy's own connection to the upstream, which is verified against the host's trust.
// Only HTTP/1.1 is carried.
func (pc *proxyConn) broker(cred *Credential, buf []byte, proto string, w who, rules []Rule) {
	b := pc.p.opts.Broker
	if proto != protoTLS && proto != protoHTTP {
		pc.refuse(proto+" on a name with a credentials rule: the broker carries HTTP/1.1 (over TLS or not) only", policy.RiskNone)
		return
	}
	// The upstream is dialled and its handshake made while the client's runs: a connection
	// pays for the slower of the two, not both.
	ups := make(chan upstreamConn, 1)
	go func() { ups <- pc.brokerUpstream(proto, rules) }()
	var client net.Conn = &prefixConn{Conn: pc.c, buf: buf}
	var clientErr error
	if proto == protoTLS {
		rc := newRawConn(client)
		defer rc.release()
		tc := tls.Server(rc, &tls.Config{
			// Full 16 KiB records from the start: the answers are read whole, not streamed
			// to a browser that would render the first bytes early.
			DynamicRecordSizingDisabled: true,
			GetCertificate:              func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return b.leaf(pc.brokerName()) },
			NextProtos:                  []string{"http/1.1"},
			MinVersion:                  tls.VersionTLS12,
			// Inside the machine a post-quantum key share buys nothing and costs the most.
			CurvePreferences: []tls.CurveID{tls.X25519, tls.CurveP256},
		})
		_ = pc.c.SetDeadline(time.Now().Add(handshakeWait))
		clientErr = tc.Handshake()
		_ = pc.c.SetDeadline(time.Time{})
		client = &tlsBatch{tc, rc}
	}
	if clientErr != nil {
		pc.c.Close()
	}
	u := <-ups
	if u.raw != nil {
		defer pc.p.track(u.raw, false)
		defer u.raw.Close()
		defer u.rc.release()
	}
	switch {
	case clientErr != nil:
		pc.refuse("TLS to a brokered name: the client's handshake with the run CA failed ("+clientErr.Error()+"): does the tool trust the sandbox's CA bundle? HTTP/2-only clients are not carried", policy.RiskNone)
	case u.why != "":
		pc.refuse(u.why, u.risk)
	case u.up != nil:
		pc.brokerHTTP(client, u.up, cred, w)
	}
}

// upstreamConn is a brokered connection's upstream side: up to speak to (raw, the TCP
// connection under it, to close), or why it was refused ("" and no up: it is unreachable).
type upstreamConn struct {
	up   net.Conn
	raw  *net.TCPConn
	rc   *rawConn // its buffers, when TLS
	why  string
	risk policy.Risk
}

// brokerUpstream dials the upstream of a brokered connection and, for TLS, makes the
// handshake: verified against the host's trust, HTTP/1.1 only, no client certificate.
func (pc *proxyConn) brokerUpstream(proto string, rules []Rule) upstreamConn {
	raw, err := pc.p.dial(pc.name, pc.isName, pc.dst, rules)
	if err != nil {
		var fe forbiddenError
		if errors.As(err, &fe) {
			return upstreamConn{why: fe.Error(), risk: report.RiskCritical}
		}
		return upstreamConn{}
	}
	if !pc.p.track(raw, true) {
		raw.Close()
		return upstreamConn{}
	}
	u := upstreamConn{up: raw, raw: raw}
	if proto != protoTLS {
		return u
	}
	askedCert := false
	rc := newRawConn(raw)
	u.rc = rc
	uc := tls.Client(rc, &tls.Config{ServerName: pc.brokerName(), RootCAs: pc.p.opts.Broker.Roots, NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12,
		ClientSessionCache: pc.p.opts.Broker.sessions,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			askedCert = true
			return &tls.Certificate{}, nil
		}})
	_ = raw.SetDeadline(time.Now().Add(handshakeWait))
	err = uc.Handshake()
	if err == nil && uc.ConnectionState().NegotiatedProtocol != "" && uc.ConnectionState().NegotiatedProtocol != "http/1.1" {
		err = errors.New("the upstream chose " + uc.ConnectionState().NegotiatedProtocol)
	}
	if err == nil && askedCert {
		// TLS 1.3: the server judges the empty certificate after the client's handshake is
		// done; nothing is sent to a server that asked for one.
		err = errClientCert
	}
	if err != nil {
		u.up, u.why, u.risk = nil, "the upstream's TLS failed ("+err.Error()+"): it is verified against the host's trust store (SSL_CERT_FILE honoured); an HTTP/2-only upstream is not carried", policy.RiskNone
		if askedCert {
			u.why = errClientCert.Error()
		}
		return u
	}
	_ = raw.SetDeadline(time.Time{})
	u.up = &tlsBatch{uc, rc}
	return u
}

// brokerHTTP carries the requests of one brokered connection.
func (pc *proxyConn) brokerHTTP(client, up net.Conn, cred *Credential, w who) {
	b := pc.p.opts.Broker
	cr := bufio.NewReaderSize(client, 32<<10)
	ur := bufio.NewReaderSize(up, 64<<10)
	cw := &countWriter{w: client}
	uw := &countWriter{w: up}
	cbw := rawWriters.Get().(*bufio.Writer)
	cbw.Reset(cw)
	defer func() { cbw.Reset(nil); rawWriters.Put(cbw) }()
	ubw := bufio.NewWriterSize(uw, 64<<10)
	header := textproto.CanonicalMIMEHeaderKey(cred.Header)
	for {
		// The splice path's strict reading first (RFC 9112: TE with CL, folded lines, bare
		// LF refused), so that a brokered name is held to the same framing.
		strict, serr := strictHead(cr)
		if serr != nil {
			if r, ok := serr.(refusal); ok {
				pc.refuse(r.msg+" (to a brokered name)", policy.RiskNone)
			}
			return
		}
		req, err := http.ReadRequest(cr)
		if err != nil {
			if err != io.EOF && !errors.Is(err, net.ErrClosed) && !errors.Is(err, io.ErrUnexpectedEOF) {
				pc.refuse("malformed HTTP/1 request to a brokered name ("+err.Error()+")", policy.RiskNone)
			}
			return
		}
		host := req.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		switch {
		case !pc.brokerHost(canonName(strings.Trim(host, "[]"))):
			pc.mismatch(protoHTTP, canonName(host))
			return
		case len(req.Trailer) > 0:
			pc.refuse("HTTP trailer fields on a request to a brokered name: not carried (they follow the body, past the checks)", policy.RiskNone)
			return
		case req.ProtoMajor != 1:
			pc.refuse("HTTP/"+req.Proto+" to a brokered name: the broker rewrites HTTP/1.x only", policy.RiskNone)
			return
		case req.Header.Get("Upgrade") != "" || req.Method == "CONNECT":
			pc.refuse("HTTP Upgrade or CONNECT to a brokered name: the broker rewrites HTTP/1.1 requests only", policy.RiskNone)
			return
		}
		if si := b.requestStandIn(req, cred); si != nil {
			pc.standInRefused(*si)
			return
		}
		swapped, sentForm := false, ""
		for i, v := range req.Header[header] {
			if nv, ok := cred.swap(v); ok {
				if !swapped && !anyBy(cred.By) {
					if bad, ok := pc.mayUseNow(cred.By); !ok {
						pc.refuseBy(fmt.Sprintf("%s is brokered to %s only", cred.Name, cred.By), report.RiskCritical, bad)
						return
					}
				}
				req.Header[header][i] = nv
				swapped = true
				if cred.Basic {
					// Basic presents base64(user:real): an echo carries that form.
					_, enc, _ := strings.Cut(nv, " ")
					sentForm = strings.TrimSpace(enc)
				}
			}
		}
		// Answers are scanned for the real value as sent: ask for them uncompressed (a gzip
		// body would carry an echo the scan cannot see).
		req.Header.Set("Accept-Encoding", "identity")
		if _, ok := req.Header["User-Agent"]; !ok {
			req.Header["User-Agent"] = []string{""} // Request.Write adds Go's otherwise
		}
		var bodyScan *scanReader
		var lineScan *requestLineScan
		if req.Body != nil && req.Body != http.NoBody {
			bodyScan = &scanReader{r: req.Body, needle: []byte(cred.StandIn), fold: true, found: errStandIn{cred, "the request body"}}
			var body io.Reader = bodyScan
			if strict.chunked {
				lineScan = &requestLineScan{r: bodyScan}
				body = lineScan
			}
			req.Body = scanBody{body, req.Body}
		}
		out0 := uw.n
		err = req.Write(ubw)
		if err == nil {
			err = ubw.Flush()
		}
		if err != nil {
			if bodyScan != nil && bodyScan.tripped {
				pc.standInRefused(bodyScan.found.(errStandIn))
			} else if lineScan != nil && lineScan.tripped {
				pc.refuse(errSmuggled.Error()+" (to a brokered name)", policy.RiskNone)
			}
			return
		}
		start := time.Now()
		resp, err := http.ReadResponse(ur, req)
		for err == nil && resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != 101 {
			if err = resp.Write(cbw); err == nil {
				err = cbw.Flush()
			}
			if err == nil {
				resp, err = http.ReadResponse(ur, req)
			}
		}
		if err != nil {
			return // the upstream went away: the client sees the connection close
		}
		if resp.StatusCode == 101 {
			pc.refuse("HTTP 101 from a brokered name: protocol switches are not carried", policy.RiskNone)
			return
		}
		// No answer may carry the real value into the sandbox (an echo endpoint, or one that
		// gives back what an earlier request sent), with or without the credential this time.
		echoScan := &scanReader{r: resp.Body, needle: []byte(cred.Real), found: errRealEchoed}
		var body io.Reader = echoScan
		var formScan *scanReader
		if sentForm != "" {
			formScan = &scanReader{r: echoScan, needle: []byte(sentForm), found: errRealEchoed}
			body = formScan
		}
		resp.Body = scanBody{body, resp.Body}
		for _, vs := range resp.Header {
			for _, v := range vs {
				if strings.Contains(v, cred.Real) || (sentForm != "" && strings.Contains(v, sentForm)) {
					err = errRealEchoed
				}
			}
		}
		in0 := cw.n
		if err == nil {
			if err = resp.Write(cbw); err == nil {
				err = cbw.Flush()
			}
		}
		if swapped {
			who := w
			if who.Exe == "" {
				who = first(pc.holders())
			}
			exe := who.Exe
			if exe == "" {
				exe = "?"
			}
			b.logUse(CredentialUse{Time: start.UTC(), Credential: cred.Name, Binary: exe, Method: req.Method, Host: pc.target,
				Path: req.URL.Path, Status: resp.StatusCode, BytesOut: uw.n - out0, BytesIn: cw.n - in0, Note: upstreamRefusal(resp)})
		}
		if errors.Is(err, errRealEchoed) || echoScan.tripped || (formScan != nil && formScan.tripped) {
			pc.refuseCritical(fmt.Sprintf("%s answered with the real value of %s (an echo): not passed into the sandbox", pc.brokerName(), cred.Name), report.RiskCritical)
			return
		}
		if err != nil || resp.Close || req.Close {
			return
		}
	}
}

var errRealEchoed = errors.New("the real credential in a response")

// strictHead checks the next request's header in r (not consumed) as the splice path does:
// a refusal when it does not parse strictly, io.EOF when the client is done.
func strictHead(r *bufio.Reader) (httpRequest, error) {
	if _, err := r.Peek(1); err != nil {
		return httpRequest{}, err
	}
	for {
		b, _ := r.Peek(r.Buffered())
		if i := bytes.Index(b, []byte("\r\n\r\n")); i >= 0 {
			req, err := parseRequest(b[:i+4])
			if err != nil {
				return req, refusal{msg: err.Error()}
			}
			return req, nil
		}
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			if _, err := parseRequestLine(b[:i]); err != nil {
				return httpRequest{}, refusal{msg: err.Error()}
			}
		}
		if len(b) >= maxSniff {
			return httpRequest{}, refusal{msg: "HTTP request header longer than 16 KiB"}
		}
		if _, err := r.Peek(len(b) + 1); err != nil {
			return httpRequest{}, err
		}
	}
}

// requestLineScan fails a chunked body (decoded) holding a line that ends as a request line
// does, as httpStream's copyChunk does on the splice path.
type requestLineScan struct {
	r       io.Reader
	tail    []byte
	tripped bool
}

func (s *requestLineScan) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	seen := append(s.tail, p[:n]...)
	if requestLineEnd.Match(seen) {
		s.tripped = true
		return 0, errSmuggled
	}
	s.tail = append(s.tail[:0], seen[max(0, len(seen)-16):]...)
	return n, err
}

// upstreamRefusal says plainly what a 401 or 403 to a brokered request means.
func upstreamRefusal(resp *http.Response) string {
	why := resp.Header.Get("WWW-Authenticate")
	if e := resp.Header.Get("Npm-Notice"); e != "" {
		why = strings.TrimSpace(why + " " + e)
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		s := "the upstream rejected the credential (401): wrong, expired or revoked"
		if strings.Contains(strings.ToLower(why), "expired") {
			s = "the upstream says the credential expired (401)"
		}
		if why != "" {
			s += ": " + why
		}
		return s
	case http.StatusForbidden:
		s := "the upstream accepted the credential but refused the request (403): it lacks the scope or permission"
		if why != "" {
			s += ": " + why
		}
		return s
	}
	return ""
}

// requestStandIn finds a stand-in where it must not be in req's header: any credential's in
// the target or a header field other than cred's own credential header, another credential's
// anywhere (also inside a Basic value).
func (b *Broker) requestStandIn(req *http.Request, cred *Credential) *errStandIn {
	if c := b.standInIn([]byte(req.RequestURI)); c != nil {
		return &errStandIn{c, "the request target"}
	}
	if c := b.standInIn([]byte(req.Host)); c != nil {
		return &errStandIn{c, "the Host header"}
	}
	own := ""
	if cred != nil {
		own = textproto.CanonicalMIMEHeaderKey(cred.Header)
	}
	for k, vs := range req.Header {
		for _, v := range vs {
			if c := b.standInIn(decodedBasic(v)); c != nil && !(k == own && c == cred) {
				return &errStandIn{c, "the " + k + " header"}
			}
		}
	}
	return nil
}

// decodedBasic returns v, with a Basic value's decoded user:password appended.
func decodedBasic(v string) []byte {
	out := []byte(v)
	if s, enc, ok := strings.Cut(v, " "); ok && strings.EqualFold(s, "Basic") {
		if raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(enc)); err == nil {
			out = append(append(out, ' '), raw...)
		}
	}
	return out
}

// standInRefused reports a stand-in seen where it must not go: an exfiltration attempt.
func (pc *proxyConn) standInRefused(e errStandIn) {
	pc.refuseCritical(fmt.Sprintf("tried to send the stand-in of %s to %s (in %s): refused, an exfiltration attempt", e.c.Name, pc.brokerName(), e.where), report.RiskCritical)
}

// decodedBasicAll returns a raw header with every Basic value's decoded user:password
// appended, so that a stand-in inside one is seen.
func decodedBasicAll(h []byte) []byte {
	out := h
	for l := range bytes.SplitSeq(h, []byte("\r\n")) {
		_, v, ok := bytes.Cut(l, []byte(":"))
		if !ok {
			continue
		}
		if d := decodedBasic(strings.TrimSpace(string(v))); len(d) > len(bytes.TrimSpace(v)) {
			out = append(append(out[:len(out):len(out)], '\n'), d...)
		}
	}
	return out
}

// brokerName is what a brokered connection goes to: its name, or the address dialled under an
// address rule (a registry on loopback).
func (pc *proxyConn) brokerName() string {
	if pc.isName {
		return pc.name
	}
	return pc.dst.Addr().String()
}

// brokerHost reports whether a request's Host is the connection's: its name, or for an
// address its address (localhost for a loopback one).
func (pc *proxyConn) brokerHost(h string) bool {
	return h == pc.brokerName() || !pc.isName && h == "localhost" && pc.dst.Addr().IsLoopback()
}

// sniffBrokered reads the first bytes of a connection under an address rule with a
// credentials rule (which address rules otherwise are not): ok is false when it was refused
// or the client went away.
func (pc *proxyConn) sniffBrokered() ([]byte, string, string, bool) {
	buf, proto, host, err := sniffConn(pc.c)
	if err != nil {
		var rf refusal
		if errors.As(err, &rf) {
			pc.refuse(rf.msg, policy.RiskNone)
		}
		return nil, proto, "", false
	}
	return buf, proto, host, true
}

// refuseCritical reports an exfiltration attempt: critical, and with no profile change that
// would allow it (allowing the destination would not make it right).
func (pc *proxyConn) refuseCritical(why string, risk report.Risk) {
	d := report.Denial{Syscall: "connect", What: fmt.Sprintf("connect %s tcp (%s)", pc.target, why), Endpoint: pc.target, Proto: "tcp",
		Host: pc.targetHost, Risk: risk}
	pc.p.deny(d, first(pc.holders()))
}
