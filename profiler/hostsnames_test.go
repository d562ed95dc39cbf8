package profiler

import (
	"context"
	"encoding/binary"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/sysprof/sysprof/trace"
	"golang.org/x/net/dns/dnsmessage"
)

// A connection to an address no DNS answer named, by a binary that read the hosts file, is
// named by the file's names for the address (every alias: the tool looked up one of them);
// a binary that did not read the file, or a loopback address, keeps the address.
func TestHostsFileNamesConnections(t *testing.T) {
	c := newCollector(0, time.Now())
	c.hostsPath = filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(c.hostsPath, []byte("127.0.0.1 localhost\n10.0.0.5 registry.internal registry\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.addFile(c.hostsPath, accessIDs[trace.AccessRead], 0, false, "/usr/bin/curl")
	for _, k := range []netKey{
		{exe: "/usr/bin/curl", op: trace.OpConnect, family: "inet", proto: "tcp", addr: "10.0.0.5", port: 5000, ok: true},
		{exe: "/usr/bin/curl", op: trace.OpConnect, family: "inet", proto: "tcp", addr: "127.0.0.1", port: 8080, ok: true},
		{exe: "/usr/bin/wget", op: trace.OpConnect, family: "inet", proto: "tcp", addr: "10.0.0.5", port: 5000, ok: true},
	} {
		c.nets[k] = &trace.NetworkAccess{Exe: k.exe, Op: k.op, Family: k.family, Proto: k.proto, Addr: k.addr, Port: k.port, OK: k.ok}
	}
	var tr trace.Trace
	c.fill(&tr)
	var got []string
	for _, n := range tr.Network {
		got = append(got, n.Exe+" "+n.Addr+" "+n.Host)
	}
	want := []string{"/usr/bin/curl 10.0.0.5 registry", "/usr/bin/curl 10.0.0.5 registry.internal", "/usr/bin/curl 127.0.0.1 ", "/usr/bin/wget 10.0.0.5 "}
	if !slices.Equal(got, want) {
		t.Errorf("network:\n%q\nwant\n%q", got, want)
	}
}

// A DNS query over TCP (use-vc, a retry after a truncated answer) names the connection to the
// address it resolved to, although only UDP answers are seen: learn asks the host's resolver
// for the name the query asked. The hosts file's name for the address does not win.
func TestTCPQueryNamesConnections(t *testing.T) {
	c := newCollector(0, time.Now())
	c.hostsPath = filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(c.hostsPath, []byte("10.0.0.5 registry.internal\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.addFile(c.hostsPath, accessIDs[trace.AccessRead], 0, false, "/usr/bin/curl")
	c.lookup = func(_ context.Context, name string) ([]netip.Addr, error) {
		if name != "www.dns.test" {
			return nil, fmt.Errorf("no such name %s", name)
		}
		return []netip.Addr{netip.MustParseAddr("10.0.0.5")}, nil
	}
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: 7, RecursionDesired: true})
	b.StartQuestions()
	b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName("www.dns.test."), Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET})
	msg, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	c.tcpQuery(append(binary.BigEndian.AppendUint16(nil, uint16(len(msg))), msg...))
	k := netKey{exe: "/usr/bin/curl", op: trace.OpConnect, family: "inet", proto: "tcp", addr: "10.0.0.5", port: 8080, ok: true}
	c.nets[k] = &trace.NetworkAccess{Exe: k.exe, Op: k.op, Family: k.family, Proto: k.proto, Addr: k.addr, Port: k.port, OK: k.ok}
	var tr trace.Trace
	c.fill(&tr)
	if len(tr.Network) != 1 || tr.Network[0].Host != "www.dns.test" {
		t.Errorf("network %+v, want one connection named www.dns.test", tr.Network)
	}
	if len(tr.DNS) != 1 || tr.DNS[0].Name != "www.dns.test" {
		t.Errorf("dns %+v", tr.DNS)
	}
}
