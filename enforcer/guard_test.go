package enforcer

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/sysprof/sysprof/bpf"
	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
)

func udpPort(t *testing.T) int {
	t.Helper()
	c, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.LocalAddr().(*net.UDPAddr).Port
}

func (o runOut) netDenial(endpoint string) *report.Denial {
	if o.rep == nil {
		return nil
	}
	for i := range o.rep.Denials {
		if d := &o.rep.Denials[i]; d.Kind == report.KindNetwork && d.Endpoint == endpoint {
			return d
		}
	}
	return nil
}

// netProfile lets the victim connect to allowed (tcp), send to udpAllowed and connect MPTCP to
// mptcpAllowed; names a host when host is not empty.
func netProfile(f *fsFixture, eps ...policy.Endpoint) *policy.Profile {
	p := f.profile
	p.Syscalls.Allow = append(p.Syscalls.Allow, policy.Syscall{Name: "sendto"})
	for _, e := range eps {
		switch e.Proto {
		case "udp":
			p.Network.Send = append(p.Network.Send, e)
		default:
			p.Network.Connect = append(p.Network.Connect, e)
		}
	}
	return p
}

// localhost:PORT names the loopback addresses: the command connects to them as it resolves
// localhost itself (/etc/hosts), through the proxy; another port is refused (Landlock).
func TestNetworkHostNameAsRoot(t *testing.T) {
	testutil.RequireRoot(t)
	f := newFSFixture(t)
	_, allowed := tcpListener(t)
	_, other := tcpListener(t)
	p := netProfile(f, policy.Endpoint{Endpoint: fmt.Sprintf("localhost:%d", allowed), Proto: "tcp"})
	o := f.run(t, p, false, fmt.Sprintf("connect=127.0.0.1:%d", allowed), fmt.Sprintf("connect=127.0.0.1:%d", other), "ok")
	if o.err != nil || o.code != 0 {
		t.Fatalf("run: %s", o)
	}
	if o.stdout != "connect: ok\nconnect: EACCES\nok\n" {
		t.Errorf("want localhost:%d allowed, the other port refused:\n%s", allowed, o)
	}
}

func TestNetworkBenignRunPrintsNothing(t *testing.T) {
	testutil.RequireRoot(t)
	f := newFSFixture(t)
	_, allowed := tcpListener(t)
	p := netProfile(f, policy.Endpoint{Endpoint: fmt.Sprintf("127.0.0.1:%d", allowed), Proto: "tcp"})
	o := f.run(t, p, false, fmt.Sprintf("connect=127.0.0.1:%d", allowed))
	if o.err != nil || o.code != 0 || o.stdout != "connect: ok\n" {
		t.Fatalf("run: %s", o)
	}
	var table bytes.Buffer
	if err := o.rep.WriteTable(&table); err != nil || table.Len() != 0 || len(o.rep.Denials) != 0 {
		t.Errorf("a run without denials printed:\n%s\n%s", table.String(), o)
	}
}

// Host names are resolved again while the command runs: a new address is allowed at once, one
// the name no longer resolves to stays allowed for the grace period, then goes.
func TestNetworkReResolution(t *testing.T) {
	testutil.RequireRoot(t)
	a1, a2 := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	answer := []netip.Addr{a1}
	savedLookup, savedGrace := lookupHost, addrGrace
	lookupHost = func(context.Context, string) ([]netip.Addr, error) { return answer, nil }
	defer func() { lookupHost, addrGrace = savedLookup, savedGrace }()

	c := &Compiled{Network: []NetRule{{Section: "connect", Proto: "tcp", Host: "registry.example", Port: 443, Endpoint: "registry.example:443"}}}
	g, err := newGuard(t.Context(), c, Env{}, false, true, false)
	if err != nil {
		t.Fatal(err)
	}
	defer g.close()
	allowed := func(a netip.Addr) bool {
		var v uint8
		k := bpf.GuardNetKey4{Prefixlen: keyFixedBits + 32, Run: runKey(g.cg.ID), Op: nopConnect, Proto: npTCP, Port: 443, Addr: a.As4()}
		return g.objs.maps["allow4"].Lookup(&k, &v) == nil
	}
	if !allowed(a1) || allowed(a2) {
		t.Fatalf("after the first resolution: %v %v", allowed(a1), allowed(a2))
	}
	answer = []netip.Addr{a2}
	g.resolveAll(t.Context())
	if !allowed(a1) || !allowed(a2) {
		t.Fatalf("the old address must stay for the grace period, the new one be added: %v %v", allowed(a1), allowed(a2))
	}
	addrGrace = 0
	g.mu.Lock()
	g.resolved["registry.example"][a1] = time.Now().Add(-time.Second)
	g.mu.Unlock()
	g.resolveAll(t.Context())
	if allowed(a1) || !allowed(a2) {
		t.Fatalf("after the grace period: %v %v", allowed(a1), allowed(a2))
	}
	g.mu.Lock()
	host := g.hostOf[a2]
	g.mu.Unlock()
	if host != "registry.example" {
		t.Errorf("reverse map: %q", host)
	}
}
