package netproxy

import (
	"fmt"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
)

// A hosts-file name is answered in the address families the file gives it: AAAA (the IPv6
// twin of its synthetic address, which maps back to the name) when it has an IPv6 address, no
// A when it has no IPv4 one; every other name A only. curl -6 and getent ahostsv6 get an
// address for an IPv6 name, and nothing new is sorted for an IPv4 one.
func TestStubAnswersTheHostsFileFamilies(t *testing.T) {
	p, err := NewPlan([]Rule{{Host: "v4.test", Port: 80}, {Host: "v6.test", Port: 80}, {Host: "dual.test", Port: 80}, {Host: "dns.test", Port: 80}})
	if err != nil {
		t.Fatal(err)
	}
	p.HostsFamilies([]string{"V6.test", "dual.test", "localhost"}, []string{"v6.test", "localhost"})
	ask := func(name string, typ dnsmessage.Type) []netip.Addr {
		b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: 1})
		b.StartQuestions()
		b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName(name), Type: typ, Class: dnsmessage.ClassINET})
		msg, _ := b.Finish()
		resp, _, denied := p.answer(msg)
		var m dnsmessage.Message
		if err := m.Unpack(resp); err != nil || denied || m.RCode != dnsmessage.RCodeSuccess {
			t.Fatalf("%s %v: %v %v %+v", name, typ, err, denied, m)
		}
		var out []netip.Addr
		for _, a := range m.Answers {
			switch r := a.Body.(type) {
			case *dnsmessage.AResource:
				out = append(out, netip.AddrFrom4(r.A))
			case *dnsmessage.AAAAResource:
				out = append(out, netip.AddrFrom16(r.AAAA))
			}
		}
		return out
	}
	for _, c := range []struct {
		name    string
		a, aaaa bool
	}{
		{"v4.test.", true, false},
		{"v6.test.", false, true},
		{"dual.test.", true, true},
		{"dns.test.", true, false},
		{"localhost.", true, false},
	} {
		a, aaaa := ask(c.name, dnsmessage.TypeA), ask(c.name, dnsmessage.TypeAAAA)
		if (len(a) == 1) != c.a || (len(aaaa) == 1) != c.aaaa {
			t.Errorf("%s: A %v, AAAA %v; want A %v, AAAA %v", c.name, a, aaaa, c.a, c.aaaa)
			continue
		}
		if len(aaaa) == 1 {
			// The IPv6 twin leads back to the name, as the IPv4 address does.
			name := canonName(c.name)
			if got, ok := p.nameAt(aaaa[0]); !ok || got != name || !synthetic6.Contains(aaaa[0]) {
				t.Errorf("%s: AAAA %v names %q %v", c.name, aaaa[0], got, ok)
			}
			if v4, _ := p.Synthetic(name); synthetic6Of(v4) != aaaa[0] {
				t.Errorf("%s: AAAA %v is not the twin of %v", c.name, aaaa[0], v4)
			}
		}
	}
	if _, ok := p.nameAt(netip.MustParseAddr("fd00:5359:5350::a00:1")); ok {
		t.Error("an address of the IPv6 range no name has named one")
	}
}

// A UDP destination by name (a statsd named in /etc/hosts) is relayed from the name's
// synthetic address, where the stub sends the client, to the name resolved on the host, and
// the answers come back; no other datagram is relayed.
func TestUDPRelayByName(t *testing.T) {
	sink, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	port := uint16(sink.LocalAddr().(*net.UDPAddr).Port)
	plan, err := NewPlan(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := plan.AddResolveOnly([]string{"statsd.test"}); err != nil {
		t.Fatal(err)
	}
	plan.RelayUDPNames([]UDPName{{Name: "Statsd.Test", Port: port}})
	syn, _ := plan.Synthetic("statsd.test")
	if want := netip.AddrPortFrom(syn, port); len(plan.Inside.UDP) != 1 || plan.Inside.UDP[0] != want {
		t.Fatalf("relays %v, want %v", plan.Inside.UDP, want)
	}
	p, _ := startPlan(t, plan, Options{Resolve: map[string][]netip.Addr{"statsd.test": lo}}, nil)
	defer p.Close()
	c, err := net.Dial("udp", netip.AddrPortFrom(syn, port).String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second)) // a hang fails, not a timing assertion
	io.WriteString(c, "metric:1|c")
	buf := make([]byte, 64)
	sink.SetDeadline(time.Now().Add(20 * time.Second))
	n, from, err := sink.ReadFrom(buf)
	if err != nil || string(buf[:n]) != "metric:1|c" {
		t.Fatalf("the sink read %q, %v", buf[:n], err)
	}
	sink.WriteTo([]byte("ack"), from)
	if n, err := c.Read(buf); err != nil || string(buf[:n]) != "ack" {
		t.Fatalf("the answer: %q, %v", buf[:n], err)
	}
}

// A name of the DNS is answered AAAA (its synthetic address's IPv6 twin) when the host gets a
// reachable IPv6 address for it, as a dual-stack client gets on the host; asked once a run,
// never for a hosts-file name or localhost, and A only without HostHas6.
func TestStubAnswersTheHostsDNSFamilies(t *testing.T) {
	p, err := NewPlan([]Rule{{Host: "dual.test", Port: 443}, {Host: "v4.test", Port: 443}, {Host: "file.test", Port: 443}})
	if err != nil {
		t.Fatal(err)
	}
	aaaa := func(name string) int {
		b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: 1})
		b.StartQuestions()
		b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName(name), Type: dnsmessage.TypeAAAA, Class: dnsmessage.ClassINET})
		msg, _ := b.Finish()
		resp, _, _ := p.answer(msg)
		var m dnsmessage.Message
		if err := m.Unpack(resp); err != nil {
			t.Fatal(err)
		}
		return len(m.Answers)
	}
	if n := aaaa("dual.test."); n != 0 {
		t.Errorf("without HostHas6: %d AAAA answers, want none", n)
	}
	asked := map[string]int{}
	p.HostsNames([]string{"file.test"})
	p.HostHas6 = func(name string) bool { asked[name]++; return name != "v4.test" }
	for range 2 {
		if n := aaaa("dual.test."); n != 1 {
			t.Errorf("dual.test: %d AAAA answers, want 1", n)
		}
		if n := aaaa("v4.test."); n != 0 {
			t.Errorf("v4.test: %d AAAA answers, want none", n)
		}
		if n := aaaa("file.test."); n != 0 {
			t.Errorf("file.test (the hosts file's, without an IPv6 address there): %d AAAA answers", n)
		}
		if n := aaaa("localhost."); n != 0 {
			t.Errorf("localhost: %d AAAA answers", n)
		}
	}
	if asked["dual.test"] != 1 || asked["v4.test"] != 1 || asked["file.test"] != 0 || asked["localhost"] != 0 {
		t.Errorf("the host was asked %v: want each name of the DNS once, no other", asked)
	}
}

// A slow answer holds up no other query (issue 24): while the host's resolver is still asked
// whether slow.test has an IPv6 address (Plan.HostHas6, up to a second), an A query for
// fast.test is answered. HostHas6 blocks until the fast answer has arrived, so a stub that
// answers one query at a time never answers it (the query times out).
func TestStubSlowNameDelaysNoOther(t *testing.T) {
	release := make(chan struct{})
	asked := make(chan string, 4)
	_, dns := startProxy(t, []Rule{{Host: "slow.test", Port: 443}, {Host: "fast.test", Port: 443}}, Options{}, func(p *Proxy) {
		p.plan.HostHas6 = func(name string) bool {
			asked <- name
			<-release
			return true
		}
	})
	slow := make(chan error, 1)
	go func() {
		c, err := net.Dial("udp", dns)
		if err != nil {
			slow <- err
			return
		}
		defer c.Close()
		b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: 7})
		b.StartQuestions()
		b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName("slow.test."), Type: dnsmessage.TypeAAAA, Class: dnsmessage.ClassINET})
		msg, _ := b.Finish()
		c.Write(msg)
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		buf := make([]byte, 512)
		n, err := c.Read(buf)
		var m dnsmessage.Message
		if err == nil {
			err = m.Unpack(buf[:n])
		}
		if err == nil && len(m.Answers) != 1 {
			err = fmt.Errorf("slow.test: %d AAAA answers, want 1", len(m.Answers))
		}
		slow <- err
	}()
	if n := <-asked; n != "slow.test" {
		t.Fatalf("the host was asked about %q first", n)
	}
	// slow.test's answer waits for release: fast.test must be answered meanwhile.
	m, err := queryErr(dns, "fast.test.", 8)
	close(release)
	if err != nil {
		t.Fatalf("fast.test unanswered while slow.test's lookup was under way: %v", err)
	}
	if len(m.Answers) != 1 || m.Header.RCode != dnsmessage.RCodeSuccess {
		t.Errorf("fast.test: %v", m)
	}
	if err := <-slow; err != nil {
		t.Error(err)
	}
}
