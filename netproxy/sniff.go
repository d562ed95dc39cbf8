package netproxy

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// What the first bytes of a connection are.
const (
	protoUnknown = "tcp"
	protoTLS     = "tls"
	protoHTTP    = "http"
	protoSSH     = "ssh"
	// The client said nothing for sniffWait: the server speaks first (SMTP, MySQL).
	protoServerFirst = "server-first"
)

// maxSniff bounds what the proxy reads before it decides: a TLS record or an HTTP header.
const maxSniff = 16 << 10

// maxMethod bounds an HTTP method (the longest registered ones have 17 characters).
const maxMethod = 32

var errSplitHello = errors.New("TLS ClientHello split over records or truncated")

// sniff classifies the client's first bytes and returns the host name they name ("" when
// none). need > 0 asks for that many bytes in total before it can tell (call again with
// more); an error means the bytes claim a protocol but are malformed or cannot be checked
// (refuse). protoUnknown: neither a TLS ClientHello, an HTTP/1 request nor an SSH banner.
func sniff(b []byte) (proto, host string, need int, err error) {
	if len(b) == 0 {
		return protoUnknown, "", 1, nil
	}
	if b[0] == 0x16 { // TLS handshake record
		if len(b) < 5 {
			return protoTLS, "", 5, nil
		}
		n := 5 + (int(b[3])<<8 | int(b[4]))
		if n > 5+maxSniff {
			return protoTLS, "", 0, errors.New("TLS record longer than 16 KiB")
		}
		if len(b) < n {
			return protoTLS, "", n, nil
		}
		host, err := clientHelloSNI(b[5:n], false)
		return protoTLS, host, 0, err
	}
	const ssh = "SSH-"
	if k := min(len(b), len(ssh)); string(b[:k]) == ssh[:k] {
		if k < len(ssh) {
			return protoSSH, "", len(ssh), nil
		}
		return protoSSH, "", 0, nil
	}
	// HTTP/1: servers skip empty lines before a request (RFC 9112 2.2), so must the check.
	rest := skipCRLF(b)
	if len(rest) == 0 || len(rest) == 1 && rest[0] == '\r' {
		if len(b) >= maxSniff {
			return protoHTTP, "", 0, errors.New("HTTP: only empty lines")
		}
		return protoHTTP, "", len(b) + 1, nil
	}
	sp := bytes.IndexByte(rest, ' ')
	if sp < 0 {
		if len(rest) <= maxMethod && isToken(rest) {
			return protoHTTP, "", len(b) + 1, nil // a method, perhaps
		}
		return protoUnknown, "", 0, nil
	}
	if sp == 0 || sp > maxMethod || !isToken(rest[:sp]) {
		return protoUnknown, "", 0, nil
	}
	// "TOKEN SP": an HTTP request line or something servers could take for one.
	end := bytes.Index(rest, []byte("\r\n\r\n"))
	if end < 0 {
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			if _, err := parseRequestLine(rest[:i]); err != nil { // refuse early what waits for nothing
				return protoHTTP, "", 0, err
			}
		}
		if len(b) >= maxSniff {
			return protoHTTP, "", 0, errors.New("HTTP request header longer than 16 KiB")
		}
		return protoHTTP, "", len(b) + 1, nil
	}
	req, err := parseRequest(rest[:end+4])
	if err != nil {
		return protoHTTP, "", 0, err
	}
	return protoHTTP, req.host, 0, nil
}

// FirstName returns the host name a connection's first bytes name, "" when none: a TLS
// ClientHello's SNI or an HTTP/1 request's Host; a request in a forward proxy's form (an
// absolute target, CONNECT) names none: the connection is the proxy's, its target is
// ProxyTarget's. b may be cut short (learn captures the first KiB): a name within it is found.
func FirstName(b []byte) string {
	if len(b) > 5 && b[0] == 0x16 {
		host, _ := clientHelloSNI(b[5:min(len(b), 5+(int(b[3])<<8|int(b[4])))], true)
		return host
	}
	rest := skipCRLF(b)
	i := bytes.Index(rest, []byte("\r\n"))
	if i < 0 {
		return ""
	}
	req, err := parseRequestLine(rest[:i+1])
	if err != nil || req.proxied {
		return "" // a request to a forward proxy names its target, not the proxy (ProxyTarget)
	}
	// The header fields that arrived whole; the first Host wins (a request the proxy would
	// refuse for two is still a name this binary asked for).
	lines := strings.Split(string(rest[i+2:]), "\r\n")
	for _, l := range lines[:len(lines)-1] { // the last is cut short or empty
		k, v, ok := strings.Cut(l, ":")
		if l == "" || !ok {
			break
		}
		if strings.EqualFold(k, "host") {
			v = strings.Trim(v, " \t")
			if h, _, err := net.SplitHostPort(v); err == nil {
				v = h
			}
			return canonName(strings.Trim(v, "[]"))
		}
	}
	return req.host
}

// skipCRLF drops the empty lines (CRLF) b starts with.
func skipCRLF(b []byte) []byte {
	for len(b) >= 2 && b[0] == '\r' && b[1] == '\n' {
		b = b[2:]
	}
	return b
}

// isToken reports whether b is an HTTP token (RFC 9110 5.6.2).
func isToken(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// httpRequest is what the proxy needs of one HTTP/1 request header.
type httpRequest struct {
	method string
	host   string // canonical, without port
	// proxied: the target is absolute-form or CONNECT's (a request to a forward proxy, or an
	// absolute-form one to an origin); port is its port then. connect: a CONNECT tunnel.
	proxied, connect bool
	port             uint16
	length           int64 // Content-Length; -1: none
	chunked          bool
	header           []byte // the whole header as read (httpStream; valid during its check)
}

// parseRequestLine checks "METHOD SP TARGET SP HTTP/1.x" (line: up to its LF, the CR
// included; a line ended by a bare LF is refused: servers differ on those).
func parseRequestLine(line []byte) (httpRequest, error) {
	l := string(line)
	if !strings.HasSuffix(l, "\r") || strings.Contains(l, "\n") {
		return httpRequest{}, errors.New("HTTP request line ended by a bare LF")
	}
	l = strings.TrimSuffix(l, "\r")
	parts := strings.Split(l, " ")
	if len(parts) != 3 || !isToken([]byte(parts[0])) || parts[1] == "" || hasCTL(parts[1]) {
		return httpRequest{}, errors.New("malformed HTTP request line")
	}
	switch v := parts[2]; {
	case v == "HTTP/1.0" || v == "HTTP/1.1":
	case strings.HasPrefix(v, "HTTP/2"):
		return httpRequest{}, errors.New("HTTP/2 over cleartext (prior knowledge): its requests cannot be checked")
	default:
		return httpRequest{}, fmt.Errorf("HTTP version %q (the proxy checks HTTP/1.0 and HTTP/1.1)", v)
	}
	req := httpRequest{method: parts[0], length: -1}
	if req.method == "CONNECT" { // a tunnel through a forward proxy: host:port
		h, p, err := net.SplitHostPort(parts[1])
		port, perr := strconv.ParseUint(p, 10, 16)
		if err != nil || perr != nil || port == 0 || h == "" || strings.ContainsAny(h, "/@") {
			return httpRequest{}, errors.New("malformed HTTP CONNECT target")
		}
		req.host, req.port, req.proxied, req.connect = canonName(h), uint16(port), true, true
		return req, nil
	}
	switch t := parts[1]; {
	case strings.HasPrefix(t, "/"):
	case t == "*" && req.method == "OPTIONS":
	default:
		u, err := url.Parse(t)
		if err != nil || (!strings.EqualFold(u.Scheme, "http") && !strings.EqualFold(u.Scheme, "https")) || u.Host == "" {
			return httpRequest{}, errors.New("malformed HTTP request target")
		}
		// Absolute form: what a client sends a forward proxy (origin servers take it too).
		req.host, req.proxied, req.port = canonName(u.Hostname()), true, 80
		if strings.EqualFold(u.Scheme, "https") {
			req.port = 443
		}
		if u.Port() != "" {
			port, err := strconv.ParseUint(u.Port(), 10, 16)
			if err != nil || port == 0 {
				return httpRequest{}, errors.New("malformed HTTP request target port")
			}
			req.port = uint16(port)
		}
	}
	return req, nil
}

// ProxyTarget returns the destination a connection's first bytes ask a forward proxy for: an
// HTTP/1 request's absolute-form target or CONNECT's host:port, with its port (the scheme's by
// default). ok is false when they ask no proxy. b may be cut short (learn captures the first
// KiB): the request line must be whole.
func ProxyTarget(b []byte) (host string, port uint16, ok bool) {
	rest := skipCRLF(b)
	i := bytes.Index(rest, []byte("\r\n"))
	if i < 0 {
		return "", 0, false
	}
	req, err := parseRequestLine(rest[:i+1])
	if err != nil || !req.proxied {
		return "", 0, false
	}
	return strings.Trim(req.host, "[]"), req.port, true
}

func hasCTL(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' && c != '\t' || c == 0x7f {
			return true
		}
	}
	return false
}

// parseRequest parses one HTTP/1 request header (request line to the empty line, CRLF
// included) strictly: whatever a server could read differently from the proxy (bare LF,
// folded or malformed fields, two Hosts, disagreeing lengths, Transfer-Encoding with
// Content-Length) is refused. A request must name its host (Host or an absolute target),
// and one that would switch protocols (Upgrade) is refused: what follows is not HTTP/1.
func parseRequest(h []byte) (httpRequest, error) {
	lines := strings.Split(strings.TrimSuffix(string(h), "\r\n\r\n"), "\r\n")
	req, err := parseRequestLine([]byte(lines[0] + "\r"))
	if err != nil {
		return req, err
	}
	target := req.host
	host, te := "", ""
	for _, l := range lines[1:] {
		if hasCTL(l) {
			return req, errors.New("HTTP header with a control character (bare CR or LF)")
		}
		k, v, ok := strings.Cut(l, ":")
		if !ok || !isToken([]byte(k)) {
			return req, errors.New("malformed HTTP header (or a folded line)")
		}
		v = strings.Trim(v, " \t")
		if lk := strings.ToLower(k); strings.Contains(lk, "_") {
			// Servers behind CGI-style gateways read _ as - (HTTP_TRANSFER_ENCODING).
			switch strings.ReplaceAll(lk, "_", "-") {
			case "host", "content-length", "transfer-encoding", "upgrade":
				return req, fmt.Errorf("HTTP header %s: a server may read it as %s", k, strings.ReplaceAll(k, "_", "-"))
			}
		}
		switch strings.ToLower(k) {
		case "host":
			if host != "" {
				return req, errors.New("two Host headers")
			}
			if v == "" {
				return req, errors.New("empty Host header")
			}
			host = v
		case "content-length":
			for _, s := range strings.Split(v, ",") {
				s = strings.Trim(s, " \t")
				n, err := strconv.ParseInt(s, 10, 64)
				if err != nil || strings.Trim(s, "0123456789") != "" {
					return req, errors.New("malformed Content-Length")
				}
				if req.length >= 0 && req.length != n {
					return req, errors.New("Content-Length values disagree")
				}
				req.length = n
			}
		case "transfer-encoding":
			if te != "" {
				te += ","
			}
			te += v
		case "upgrade":
			return req, fmt.Errorf("HTTP Upgrade to %q: what follows is not HTTP/1 and cannot be checked", v)
		}
	}
	if te != "" {
		codings := strings.Split(te, ",")
		last := strings.ToLower(strings.Trim(codings[len(codings)-1], " \t"))
		switch {
		case strings.HasSuffix(lines[0], "HTTP/1.0"):
			return req, errors.New("Transfer-Encoding in an HTTP/1.0 request")
		case req.length >= 0:
			return req, errors.New("both Transfer-Encoding and Content-Length")
		case last != "chunked":
			return req, errors.New("Transfer-Encoding not ending in chunked")
		}
		for _, c := range codings[:len(codings)-1] {
			if strings.EqualFold(strings.Trim(c, " \t"), "chunked") {
				return req, errors.New("chunked applied twice")
			}
		}
		req.chunked = true
	}
	if host != "" {
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		} else if strings.Contains(host, ":") && !strings.HasPrefix(host, "[") {
			return req, errors.New("malformed Host header")
		}
		host = canonName(strings.Trim(host, "[]"))
		if host == "" {
			return req, errors.New("empty Host header")
		}
	}
	if target != "" && host != "" && target != host {
		return req, errors.New("request target and Host header disagree")
	}
	if host == "" {
		host = target
	}
	if host == "" {
		return req, errors.New("HTTP request without a Host header")
	}
	req.host = host
	return req, nil
}

// clientHelloSNI returns the server_name of a TLS ClientHello (the record's payload), "" when
// it has none. partial: b may be cut short (then a name wholly within it is still found).
func clientHelloSNI(b []byte, partial bool) (string, error) {
	r := reader{b: b}
	if t, _ := r.u8(); t != 1 {
		return "", errors.New("TLS handshake is not a ClientHello")
	}
	n, ok := r.u24()
	if !ok || n > len(r.b) && !partial {
		return "", errSplitHello
	}
	r.b = r.b[:min(n, len(r.b))]
	if !r.skip(2+32) || !r.skipVec8() || !r.skipVec16() || !r.skipVec8() {
		return "", errors.New("malformed ClientHello")
	}
	if len(r.b) == 0 {
		return "", nil // no extensions
	}
	var ext []byte
	if partial {
		n, _ := r.u16()
		ext = r.b[:min(n, len(r.b))]
	} else if ext, ok = r.vec16(); !ok {
		return "", errors.New("malformed ClientHello extensions")
	}
	e := reader{b: ext}
	for len(e.b) > 0 {
		typ, ok1 := e.u16()
		data, ok2 := e.vec16()
		if !ok1 || !ok2 {
			return "", errors.New("malformed ClientHello extension")
		}
		if typ != 0 {
			continue
		}
		s := reader{b: data}
		list, ok := s.vec16()
		if !ok {
			return "", errors.New("malformed server_name extension")
		}
		l := reader{b: list}
		for len(l.b) > 0 {
			nt, ok1 := l.u8()
			name, ok2 := l.vec16()
			if !ok1 || !ok2 {
				return "", errors.New("malformed server_name entry")
			}
			if nt == 0 {
				if len(name) == 0 || bytes.IndexByte(name, 0) >= 0 {
					return "", errors.New("malformed server_name")
				}
				return canonName(string(name)), nil
			}
		}
		return "", nil
	}
	return "", nil
}

type reader struct{ b []byte }

func (r *reader) u8() (int, bool) {
	if len(r.b) < 1 {
		return 0, false
	}
	v := int(r.b[0])
	r.b = r.b[1:]
	return v, true
}

func (r *reader) u16() (int, bool) {
	if len(r.b) < 2 {
		return 0, false
	}
	v := int(r.b[0])<<8 | int(r.b[1])
	r.b = r.b[2:]
	return v, true
}

func (r *reader) u24() (int, bool) {
	if len(r.b) < 3 {
		return 0, false
	}
	v := int(r.b[0])<<16 | int(r.b[1])<<8 | int(r.b[2])
	r.b = r.b[3:]
	return v, true
}

func (r *reader) skip(n int) bool {
	if len(r.b) < n {
		return false
	}
	r.b = r.b[n:]
	return true
}

func (r *reader) skipVec8() bool {
	n, ok := r.u8()
	return ok && r.skip(n)
}

func (r *reader) skipVec16() bool {
	_, ok := r.vec16()
	return ok
}

func (r *reader) vec16() ([]byte, bool) {
	n, ok := r.u16()
	if !ok || len(r.b) < n {
		return nil, false
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v, true
}
