package netproxy

import (
	"crypto/tls"
	"net"
	"net/netip"
	"os"
	"strconv"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
	"golang.org/x/sys/unix"
)

// clientHello returns the first bytes crypto/tls sends for server name sni.
func clientHello(t *testing.T, sni string) []byte {
	a, b := net.Pipe()
	go func() {
		c := tls.Client(a, &tls.Config{ServerName: sni, InsecureSkipVerify: true})
		_ = c.Handshake()
	}()
	buf := make([]byte, 64<<10)
	n, err := b.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	b.Close()
	return buf[:n]
}

func TestSniff(t *testing.T) {
	hello := clientHello(t, "Allowed.Test")
	for _, c := range []struct {
		name      string
		in        []byte
		proto     string
		host      string
		needMore  bool
		wantError bool
	}{
		{"tls sni", hello, protoTLS, "allowed.test", false, false},
		{"tls partial", hello[:20], protoTLS, "", true, false},
		{"tls no sni", clientHello(t, "")[:], protoTLS, "", false, false},
		{"http host", []byte("GET / HTTP/1.1\r\nHost: Other.Test:8080\r\n\r\n"), protoHTTP, "other.test", false, false},
		{"http partial", []byte("GET / HTTP/1.1\r\nHo"), protoHTTP, "", true, false},
		{"http absolute target disagrees", []byte("GET http://a.test/ HTTP/1.1\r\nHost: b.test\r\n\r\n"), protoHTTP, "", false, true},
		{"http two hosts", []byte("GET / HTTP/1.1\r\nHost: a.test\r\nhost: b.test\r\n\r\n"), protoHTTP, "", false, true},
		{"http connect", []byte("CONNECT b.test:443 HTTP/1.1\r\nHost: b.test\r\n\r\n"), protoHTTP, "b.test", false, false},
		{"http connect without a port", []byte("CONNECT b.test HTTP/1.1\r\nHost: b.test\r\n\r\n"), protoHTTP, "", false, true},
		{"ssh", []byte("SSH-2.0-OpenSSH_9.2\r\n"), protoSSH, "", false, false},
		{"ssh partial", []byte("SS"), protoSSH, "", true, false},
		{"http leading CRLF", []byte("\r\n\r\nGET / HTTP/1.1\r\nHost: other.test\r\n\r\n"), protoHTTP, "other.test", false, false},
		{"http only CRLF so far", []byte("\r\n\r"), protoHTTP, "", true, false},
		{"http any method", []byte("PROPFIND /x HTTP/1.1\r\nHost: other.test\r\n\r\n"), protoHTTP, "other.test", false, false},
		{"http method partial", []byte("PROPF"), protoHTTP, "", true, false},
		{"http no host", []byte("GET / HTTP/1.0\r\n\r\n"), protoHTTP, "", false, true},
		{"http/2 preface", []byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), protoHTTP, "", false, true},
		{"http/2 preface, line only", []byte("PRI * HTTP/2.0\r\n"), protoHTTP, "", false, true},
		{"http bare LF line", []byte("GET / HTTP/1.1\nHost: a.test\n"), protoHTTP, "", false, true},
		{"http upgrade", []byte("GET / HTTP/1.1\r\nHost: a.test\r\nUpgrade: websocket\r\n\r\n"), protoHTTP, "", false, true},
		{"http te and cl", []byte("POST / HTTP/1.1\r\nHost: a.test\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n"), protoHTTP, "", false, true},
		{"http cl disagree", []byte("POST / HTTP/1.1\r\nHost: a.test\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"), protoHTTP, "", false, true},
		{"http cl sign", []byte("POST / HTTP/1.1\r\nHost: a.test\r\nContent-Length: +1\r\n\r\n"), protoHTTP, "", false, true},
		{"binary", []byte{0, 1, 2, 3}, protoUnknown, "", false, false},
		{"bare LF first", []byte("\nGET / HTTP/1.1\r\nHost: a.test\r\n\r\n"), protoUnknown, "", false, false},
		{"not a client hello", []byte{0x16, 3, 1, 0, 4, 2, 0, 0, 0}, protoTLS, "", false, true},
		{"hello longer than its record", []byte{0x16, 3, 1, 0, 4, 1, 0, 1, 0}, protoTLS, "", false, true},
	} {
		proto, host, need, err := sniff(c.in)
		if proto != c.proto || host != c.host || (need > 0) != c.needMore || (err != nil) != c.wantError {
			t.Errorf("%s: proto %q host %q need %d err %v", c.name, proto, host, need, err)
		}
	}
}

// FirstName finds the name in first bytes cut short, as learn captures them.
func TestFirstName(t *testing.T) {
	hello := clientHello(t, "Tls.Test")
	for _, c := range []struct {
		name string
		in   []byte
		want string
	}{
		{"hello", hello, "tls.test"},
		{"hello cut after its SNI", hello[:len(hello)*3/4], "tls.test"},
		{"hello cut before its SNI", hello[:60], ""},
		{"hello without SNI", clientHello(t, ""), ""},
		{"http", []byte("GET / HTTP/1.1\r\nUser-Agent: x\r\nHost: Plain.Test:8080\r\nAccept: */*\r\n\r\n"), "plain.test"},
		{"http cut after Host", []byte("\r\nPUT /x HTTP/1.1\r\nHost: plain.test\r\nContent-Le"), "plain.test"},
		{"http absolute target: a forward proxy's, its target is ProxyTarget's", []byte("GET http://abs.test/ HTTP/1.1\r\nHost: abs.test\r\n"), ""},
		{"http CONNECT", []byte("CONNECT abs.test:443 HTTP/1.1\r\nHost: abs.test:443\r\n"), ""},
		{"http cut in Host", []byte("GET / HTTP/1.1\r\nHost: plai"), ""},
		{"ssh", []byte("SSH-2.0-x\r\n"), ""},
	} {
		if got := FirstName(c.in); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestPlanSyntheticAndDNS(t *testing.T) {
	rules := []Rule{{Host: "b.test", Port: 443}, {Host: "A.test.", Port: 443}, {Host: "a.test", Port: 80}, {Prefix: netip.MustParsePrefix("10.0.0.0/8"), Port: 22}}
	p, err := NewPlan(rules)
	if err != nil {
		t.Fatal(err)
	}
	if a, _ := p.Synthetic("a.test"); a != netip.MustParseAddr("127.77.0.1") {
		t.Errorf("a.test: %v", a)
	}
	if b, _ := p.Synthetic("B.TEST."); b != netip.MustParseAddr("127.77.0.2") {
		t.Errorf("b.test: %v", b)
	}
	if got := p.Inside.Ports; len(got) != 3 || got[0] != 22 || got[1] != 80 || got[2] != 443 {
		t.Errorf("ports %v", got)
	}
	query := func(name string, typ dnsmessage.Type) dnsmessage.Message {
		b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: 7, RecursionDesired: true})
		b.StartQuestions()
		b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName(name), Type: typ, Class: dnsmessage.ClassINET})
		msg, _ := b.Finish()
		resp, _, _ := p.answer(msg)
		var m dnsmessage.Message
		if err := m.Unpack(resp); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return m
	}
	m := query("a.test.", dnsmessage.TypeA)
	if m.RCode != dnsmessage.RCodeSuccess || len(m.Answers) != 1 || m.Answers[0].Body.(*dnsmessage.AResource).A != [4]byte{127, 77, 0, 1} || m.ID != 7 {
		t.Errorf("a.test A: %+v", m)
	}
	if m := query("a.test.", dnsmessage.TypeAAAA); m.RCode != dnsmessage.RCodeSuccess || len(m.Answers) != 0 {
		t.Errorf("a.test AAAA: %+v", m)
	}
	if m := query("c2VjcmV0.evil.test.", dnsmessage.TypeA); m.RCode != dnsmessage.RCodeNameError || len(m.Answers) != 0 {
		t.Errorf("other name: %+v", m)
	}
	if _, name, denied := p.answer(mustQuery("x.a.test.")); !denied || name != "x.a.test" {
		t.Errorf("a subdomain of an allowed name must be refused: %q %v", name, denied)
	}
	// localhost and the names under it are loopback (RFC 6761), even as resolve-only names.
	if err := p.AddResolveOnly([]string{"app.localhost"}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"localhost.", "app.localhost.", "x.y.localhost."} {
		if m := query(n, dnsmessage.TypeA); m.RCode != dnsmessage.RCodeSuccess || len(m.Answers) != 1 || m.Answers[0].Body.(*dnsmessage.AResource).A != [4]byte{127, 0, 0, 1} {
			t.Errorf("%s A: %+v", n, m)
		}
	}
	if m := query("localhost.evil.test.", dnsmessage.TypeA); m.RCode != dnsmessage.RCodeNameError {
		t.Errorf("localhost.evil.test: %+v", m)
	}
}

func mustQuery(name string) []byte {
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: 1})
	b.StartQuestions()
	b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName(name), Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET})
	msg, _ := b.Finish()
	return msg
}

func TestForbidden(t *testing.T) {
	for _, c := range []struct {
		name     string
		addr     string
		override bool
		want     bool
	}{
		{"a.test", "169.254.169.254", false, true},
		{"a.test", "169.254.169.254", true, true},
		{"metadata.google.internal", "169.254.169.254", false, false},
		{"a.test", "fd00:ec2::254", false, true},
		{"a.test", "127.0.0.1", false, true},
		{"a.test", "127.0.0.1", true, false},
		{"a.test", "10.1.2.3", false, false},
		{"a.test", "0.0.0.0", true, true},
	} {
		if got := forbiddenForName(c.name, netip.MustParseAddr(c.addr), c.override) != ""; got != c.want {
			t.Errorf("%s -> %s (override %v): forbidden %v", c.name, c.addr, c.override, got)
		}
	}
	for _, c := range []struct {
		rule, addr string
		want       bool
	}{
		{"0.0.0.0/0", "169.254.169.254", true},
		{"169.254.169.254/32", "169.254.169.254", false},
		{"169.0.0.0/8", "169.254.1.1", true},
		{"10.0.0.0/8", "10.1.1.1", false},
		// The host's own loopback: the proxy dials from the host, so a wide rule must not reach it.
		{"0.0.0.0/0", "127.0.0.1", true},
		{"::/0", "::1", true},
		{"127.0.0.0/8", "127.0.0.1", false},
		{"127.0.0.1/32", "127.0.0.1", false},
	} {
		if got := forbiddenForPrefix(netip.MustParsePrefix(c.rule), netip.MustParseAddr(c.addr)) != ""; got != c.want {
			t.Errorf("rule %s addr %s: forbidden %v", c.rule, c.addr, got)
		}
	}
}

func TestParseProcAddr(t *testing.T) {
	for in, want := range map[string]string{
		"0100007F:1F90":                         "127.0.0.1:8080",
		"0000000000000000FFFF00000100007F:0050": "127.0.0.1:80",
		"00000000000000000000000001000000:0016": "[::1]:22",
	} {
		got, ok := parseProcAddr(in)
		if !ok || got.String() != want {
			t.Errorf("%s: %v %v, want %s", in, got, ok, want)
		}
	}
}

// sock_diag finds a connection's socket by its addresses, the same inode /proc lists.
func TestDiagInode(t *testing.T) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		t.Fatal(err)
	}
	d := &diag{f: os.NewFile(uintptr(fd), "diag")}
	defer d.f.Close()
	for _, network := range []string{"tcp4", "tcp6"} {
		addr := "127.0.0.1:0"
		if network == "tcp6" {
			addr = "[::1]:0"
		}
		ln, err := net.Listen(network, addr)
		if err != nil {
			t.Fatal(err)
		}
		c, err := net.Dial(network, ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		src, dst := addrPort(c.LocalAddr()), addrPort(c.RemoteAddr())
		ino, ok := d.inode(unix.IPPROTO_TCP, src, dst)
		want := findInode("/proc/self/net/tcp", src, dst)
		if want == "" {
			want = findInode("/proc/self/net/tcp6", src, dst)
		}
		if !ok || strconv.FormatUint(uint64(ino), 10) != want {
			t.Errorf("%s: sock_diag inode %d %v, /proc says %s", network, ino, ok, want)
		}
		c.Close()
		ln.Close()
	}
}
