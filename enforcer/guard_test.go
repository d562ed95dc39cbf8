package enforcer

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
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

func TestNetworkHooksAsRoot(t *testing.T) {
	testutil.RequireRoot(t)
	f := newFSFixture(t)
	_, allowed := tcpListener(t)
	_, other := tcpListener(t)
	_, mptcpOther := tcpListener(t)
	udpAllowed, udpOther := udpPort(t), udpPort(t)
	p := netProfile(f,
		policy.Endpoint{Endpoint: fmt.Sprintf("127.0.0.1:%d", allowed), Proto: "tcp"},
		policy.Endpoint{Endpoint: fmt.Sprintf("127.0.0.1:%d", udpAllowed), Proto: "udp"},
		policy.Endpoint{Endpoint: fmt.Sprintf("127.0.0.1:%d", allowed+1), Proto: "mptcp"})
	o := f.run(t, p, false,
		fmt.Sprintf("connect=127.0.0.1:%d", other), fmt.Sprintf("connect=127.0.0.1:%d", allowed),
		fmt.Sprintf("udp=127.0.0.1:%d", udpOther), fmt.Sprintf("udp=127.0.0.1:%d", udpAllowed),
		fmt.Sprintf("mptcp-connect=127.0.0.1:%d", mptcpOther), fmt.Sprintf("connect6=%d", other), "ok")
	if o.err != nil || o.code != 0 {
		t.Fatalf("run: %s", o)
	}
	want := "connect: EPERM\nconnect: ok\nudp: EPERM\nudp: ok\nmptcp-connect: EPERM\nconnect6: EPERM\nok\n"
	if o.stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s\n%s", o.stdout, want, o)
	}
	for _, c := range []struct{ ep, proto, syscall, suggest string }{
		{fmt.Sprintf("127.0.0.1:%d", other), "tcp", "connect", fmt.Sprintf("network.connect: + 127.0.0.1:%d tcp", other)},
		{fmt.Sprintf("127.0.0.1:%d", udpOther), "udp", "sendto", fmt.Sprintf("network.send: + 127.0.0.1:%d udp", udpOther)},
		{fmt.Sprintf("[::1]:%d", other), "tcp", "connect", fmt.Sprintf("network.connect: + [::1]:%d tcp", other)},
	} {
		d := o.netDenial(c.ep)
		if d == nil {
			t.Errorf("no network denial for %s:\n%s", c.ep, o)
			continue
		}
		if d.Proto != c.proto || d.Syscall != c.syscall || d.Suggest != c.suggest || !strings.HasSuffix(d.Exe, "/escape") || d.Allowed || d.First.IsZero() {
			t.Errorf("denial %+v, want proto %s syscall %s suggest %q by the victim", *d, c.proto, c.syscall, c.suggest)
		}
	}
	// The hooks see an MPTCP connect on its TCP subflow.
	if d := o.netDenial(fmt.Sprintf("127.0.0.1:%d", mptcpOther)); d == nil || d.Proto != "tcp" {
		t.Errorf("no denial for the MPTCP connect: %+v\n%s", d, o)
	}
	for _, l := range o.rep.Layers {
		if l.State != report.LayerApplied {
			t.Errorf("layer %s is %s: %s", l.Name, l.State, l.Detail)
		}
	}
	if strings.Contains(o.stdout, "sysprof") {
		t.Errorf("sysprof's output in the command's stdout:\n%s", o.stdout)
	}
}

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
	if o.stdout != "connect: ok\nconnect: EPERM\nok\n" {
		t.Errorf("want localhost:%d resolved and allowed, the other port refused:\n%s", allowed, o)
	}
	d := o.netDenial(fmt.Sprintf("127.0.0.1:%d", other))
	if d == nil || d.Host != "localhost" || d.Suggest != fmt.Sprintf("network.connect: + localhost:%d tcp", other) {
		t.Errorf("want the denial named by host: %+v\n%s", d, o)
	}
	if !strings.Contains(strings.Join(o.rep.Notes, "\n"), "DNS") {
		t.Errorf("the DNS allowance is not noted: %v", o.rep.Notes)
	}
}

func TestNetworkAuditAsRoot(t *testing.T) {
	testutil.RequireRoot(t)
	f := newFSFixture(t)
	_, allowed := tcpListener(t)
	_, other := tcpListener(t)
	p := netProfile(f, policy.Endpoint{Endpoint: fmt.Sprintf("127.0.0.1:%d", allowed), Proto: "tcp"})
	var stdout, stderr bytes.Buffer
	rep, code, err := Run(t.Context(), Options{Profile: p, Command: []string{f.victim, fmt.Sprintf("connect=127.0.0.1:%d", other)},
		Dir: f.work, Vars: f.vars, Audit: true, Stdout: &stdout, Stderr: &stderr})
	o := runOut{rep, code, err, stdout.String(), stderr.String()}
	if err != nil || code != 0 || o.stdout != "connect: ok\n" {
		t.Fatalf("audit did not let the connect through: %s", o)
	}
	d := o.netDenial(fmt.Sprintf("127.0.0.1:%d", other))
	if d == nil || !d.Allowed {
		t.Errorf("audit did not report the connect as allowed: %+v\n%s", d, o)
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

// A network section with unix endpoints only: as root the hooks still refuse every inet call,
// and report it (Landlock would refuse TCP without a record).
func TestNetworkUnixOnlyProfileReportsInet(t *testing.T) {
	testutil.RequireRoot(t)
	f := newFSFixture(t)
	_, port := tcpListener(t)
	p := netProfile(f, policy.Endpoint{Endpoint: "unix:@sysprof-test-none"})
	o := f.run(t, p, false, fmt.Sprintf("connect=127.0.0.1:%d", port))
	if o.err != nil || o.code != 0 || o.stdout != "connect: EPERM\n" {
		t.Fatalf("run: %s", o)
	}
	if d := o.netDenial(fmt.Sprintf("127.0.0.1:%d", port)); d == nil {
		t.Errorf("the refused connect is not reported:\n%s", o)
	}
}
