package enforcer

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
)

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
	allowed := testutil.LoopbackTCP(t)
	other := testutil.LoopbackTCP(t)
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
	withoutSecretEnv(t)
	f := newFSFixture(t)
	allowed := testutil.LoopbackTCP(t)
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
