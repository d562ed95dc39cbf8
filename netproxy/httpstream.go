package netproxy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
)

// refusal is a reason to refuse a connection part-way (a denial), as opposed to an I/O error.
type refusal struct {
	msg  string
	host string // the host the request named, when that is the reason
	// via: the host:port a request through a forward proxy asked for, when no rule allows it.
	via string
	// critical: a stand-in of a brokered credential (an exfiltration attempt).
	critical bool
}

func (r refusal) Error() string { return r.msg }

// maxChunkLine bounds a chunk-size line (with extensions) or a trailer line.
const maxChunkLine = 4 << 10

// httpStream carries a plain-HTTP/1 connection's client side upstream request by request,
// each request's header checked before it is forwarded: a kept-alive connection cannot send
// a second request to another host. Bodies are forwarded by their framing (Content-Length
// by splice, chunked parsed), so the next request's header is found where the server finds it.
type httpStream struct {
	c, up *net.TCPConn
	buf   []byte // read from the client, not yet forwarded
	out   int64  // bytes forwarded upstream
}

// fill reads more client bytes; io.EOF when the client has closed.
func (s *httpStream) fill() error {
	if len(s.buf) == cap(s.buf) {
		s.buf = append(s.buf, make([]byte, 4096)...)[:len(s.buf)]
	}
	n, err := s.c.Read(s.buf[len(s.buf):cap(s.buf)])
	s.buf = s.buf[:len(s.buf)+n]
	if n > 0 {
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

// forward sends the first n buffered bytes upstream.
func (s *httpStream) forward(n int) error {
	if n == 0 {
		return nil
	}
	k, err := s.up.Write(s.buf[:n])
	s.out += int64(k)
	s.buf = s.buf[:copy(s.buf, s.buf[n:])]
	return err
}

// copyBody forwards n body bytes: the buffered ones, then the rest by splice.
func (s *httpStream) copyBody(n int64) error {
	k := int(min(n, int64(len(s.buf))))
	if err := s.forward(k); err != nil {
		return err
	}
	if n -= int64(k); n == 0 {
		return nil
	}
	m, err := io.CopyN(s.up, s.c, n)
	s.out += m
	return err
}

// errTunnel ends run after a CONNECT request was forwarded: the client's bytes that follow go
// through the tunnel.
var errTunnel = errors.New("HTTP CONNECT: a tunnel")

var errSmuggled = errors.New("HTTP chunked body carries what parses as a request line (request smuggling)")

// requestLineEnd ends a line a server would read as a request line (RFC 9112 §3).
var requestLineEnd = regexp.MustCompile(` HTTP/[0-9]\.[0-9]\r?\n`)

// copyChunk forwards n bytes of chunk data through the buffer, each read checked before it is
// forwarded: data holding a line that ends as a request line does (a second request smuggled in
// a body, for an upstream that frames the body otherwise) is refused. tail carries the last
// bytes of the data between reads and chunks.
func (s *httpStream) copyChunk(n int64, tail *[]byte) error {
	for n > 0 {
		if len(s.buf) == 0 {
			if err := s.fill(); err != nil {
				return err
			}
		}
		k := int(min(n, int64(len(s.buf))))
		seen := append(*tail, s.buf[:k]...)
		if requestLineEnd.Match(seen) {
			return refusal{msg: errSmuggled.Error()}
		}
		*tail = append((*tail)[:0], seen[max(0, len(seen)-16):]...)
		if err := s.forward(k); err != nil {
			return err
		}
		n -= int64(k)
	}
	return nil
}

// line returns the length of the next CRLF-ended line in the buffer (CRLF included), reading
// as needed; a line longer than max or ended by a bare LF is a refusal.
func (s *httpStream) line(max int, what string) (int, error) {
	for {
		if i := bytes.IndexByte(s.buf, '\n'); i >= 0 {
			if i == 0 || s.buf[i-1] != '\r' {
				return 0, refusal{msg: what + " ended by a bare LF"}
			}
			return i + 1, nil
		}
		if len(s.buf) > max {
			return 0, refusal{msg: what + " too long"}
		}
		if err := s.fill(); err != nil {
			return 0, err
		}
	}
}

// run checks and forwards requests until the client closes its side (nil) or a request
// fails check (a refusal) or the connection breaks (another error).
func (s *httpStream) run(check func(httpRequest) error) error {
	for {
		// Empty lines between requests are skipped by servers: skip them too.
		for {
			s.buf = s.buf[:copy(s.buf, skipCRLF(s.buf))]
			if len(s.buf) > 0 && !(len(s.buf) == 1 && s.buf[0] == '\r') {
				break
			}
			if err := s.fill(); err != nil {
				if err == io.EOF && len(s.buf) == 0 {
					return nil
				}
				return err
			}
		}
		end := -1
		for {
			if end = bytes.Index(s.buf, []byte("\r\n\r\n")); end >= 0 {
				break
			}
			if i := bytes.IndexByte(s.buf, '\n'); i >= 0 {
				if _, err := parseRequestLine(s.buf[:i]); err != nil {
					return refusal{msg: err.Error()}
				}
			}
			if len(s.buf) >= maxSniff {
				return refusal{msg: "HTTP request header longer than 16 KiB"}
			}
			if err := s.fill(); err != nil {
				return err
			}
		}
		req, err := parseRequest(s.buf[:end+4])
		if err != nil {
			return refusal{msg: err.Error()}
		}
		req.header = s.buf[:end+4]
		if err := check(req); err != nil {
			return err
		}
		if err := s.forward(end + 4); err != nil {
			return err
		}
		if req.connect {
			return errTunnel // what follows is the tunnel's, not HTTP to this server
		}
		switch {
		case req.chunked:
			if err := s.chunked(); err != nil {
				return err
			}
		case req.length > 0:
			if err := s.copyBody(req.length); err != nil {
				return err
			}
		}
	}
}

// chunked forwards a chunked body: chunks, the last chunk, its trailer fields.
func (s *httpStream) chunked() error {
	var tail []byte // the end of the chunk data so far (a request line split over reads)
	for {
		n, err := s.line(maxChunkLine, "HTTP chunk size line")
		if err != nil {
			return err
		}
		l := string(s.buf[:n-2])
		sz, ext, _ := strings.Cut(l, ";")
		size, perr := strconv.ParseUint(sz, 16, 63)
		if perr != nil || sz == "" || strings.Trim(sz, "0123456789abcdefABCDEF") != "" || hasCTL(ext) {
			return refusal{msg: fmt.Sprintf("malformed HTTP chunk size %q", l)}
		}
		if err := s.forward(n); err != nil {
			return err
		}
		if size == 0 {
			break
		}
		if err := s.copyChunk(int64(size), &tail); err != nil {
			return err
		}
		for len(s.buf) < 2 {
			if err := s.fill(); err != nil {
				return err
			}
		}
		if s.buf[0] != '\r' || s.buf[1] != '\n' {
			return refusal{msg: "HTTP chunk not ended by CRLF"}
		}
		if err := s.forward(2); err != nil {
			return err
		}
	}
	for total := 0; ; {
		n, err := s.line(maxChunkLine, "HTTP trailer field")
		if err != nil {
			return err
		}
		if total += n; total > maxSniff {
			return refusal{msg: "HTTP trailer section longer than 16 KiB"}
		}
		if l := s.buf[:n-2]; len(l) > 0 && (hasCTL(string(l)) || bytes.IndexByte(l, ':') <= 0) {
			return refusal{msg: "malformed HTTP trailer field"}
		}
		empty := n == 2
		if err := s.forward(n); err != nil {
			return err
		}
		if empty {
			return nil
		}
	}
}
