package netproxy

import (
	"bytes"
	"errors"
	"net"
	"net/url"
	"strings"
)

// What the first bytes of a connection are.
const (
	protoUnknown = "tcp"
	protoTLS     = "tls"
	protoHTTP    = "http"
)

// maxSniff bounds what the proxy reads before it decides: a TLS record or an HTTP header.
const maxSniff = 16 << 10

var errSplitHello = errors.New("TLS ClientHello split over records or truncated")

// sniff classifies the client's first bytes and returns the host name they name ("" when
// none). need > 0 asks for that many bytes in total before it can tell (call again with
// more); an error means the bytes claim a protocol but are malformed (refuse).
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
		host, err := clientHelloSNI(b[5:n])
		return protoTLS, host, 0, err
	}
	if looksHTTP(b) {
		end := bytes.Index(b, []byte("\r\n\r\n"))
		if end < 0 {
			if len(b) >= maxSniff {
				return protoHTTP, "", 0, errors.New("HTTP request header longer than 16 KiB")
			}
			return protoHTTP, "", len(b) + 1, nil
		}
		host, err := httpHost(b[:end+2])
		return protoHTTP, host, 0, err
	}
	return protoUnknown, "", 0, nil
}

var httpMethods = []string{"GET ", "POST ", "PUT ", "HEAD ", "DELETE ", "OPTIONS ", "PATCH ", "CONNECT ", "TRACE "}

// looksHTTP reports whether b starts like an HTTP/1 request (or could, being short).
func looksHTTP(b []byte) bool {
	for _, m := range httpMethods {
		k := min(len(b), len(m))
		if string(b[:k]) == m[:k] {
			return true
		}
	}
	return false
}

// httpHost returns the host an HTTP/1 request header names: its Host header, which must agree
// with an absolute request target. CONNECT (a forward-proxy request) is refused: this proxy
// is transparent, the client dialled its destination already.
func httpHost(h []byte) (string, error) {
	lines := strings.Split(string(h), "\r\n")
	req := strings.Fields(lines[0])
	if len(req) != 3 || !strings.HasPrefix(req[2], "HTTP/1.") {
		return "", errors.New("malformed HTTP request line")
	}
	if req[0] == "CONNECT" {
		return "", errors.New("HTTP CONNECT (not a forward proxy)")
	}
	var target string
	if strings.Contains(req[1], "://") {
		u, err := url.Parse(req[1])
		if err != nil {
			return "", errors.New("malformed HTTP request target")
		}
		target = canonName(u.Hostname())
	}
	host := ""
	for _, l := range lines[1:] {
		k, v, ok := strings.Cut(l, ":")
		if ok && strings.EqualFold(strings.TrimSpace(k), "host") {
			if host != "" {
				return "", errors.New("two Host headers")
			}
			host = strings.TrimSpace(v)
			if host == "" {
				return "", errors.New("empty Host header")
			}
		}
	}
	if host != "" {
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		host = canonName(strings.Trim(host, "[]"))
	}
	if target != "" && host != "" && target != host {
		return "", errors.New("request target and Host header disagree")
	}
	if host == "" {
		host = target
	}
	return host, nil
}

// clientHelloSNI returns the server_name of a TLS ClientHello (the record's payload), "" when
// it has none.
func clientHelloSNI(b []byte) (string, error) {
	r := reader{b: b}
	if t, _ := r.u8(); t != 1 {
		return "", errors.New("TLS handshake is not a ClientHello")
	}
	n, ok := r.u24()
	if !ok || n > len(r.b) {
		return "", errSplitHello
	}
	r.b = r.b[:n]
	if !r.skip(2+32) || !r.skipVec8() || !r.skipVec16() || !r.skipVec8() {
		return "", errors.New("malformed ClientHello")
	}
	if len(r.b) == 0 {
		return "", nil // no extensions
	}
	ext, ok := r.vec16()
	if !ok {
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
