package guard

import (
	"context"
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/sysprof/sysprof/bpf"
	"github.com/sysprof/sysprof/internal/testutil"
)

// TestMain lets the test binary be the helper a guard's close starts (it re-executes
// /proc/self/exe).
func TestMain(m *testing.M) {
	if len(os.Args) >= 2 && os.Args[1] == HelperArg {
		os.Exit(Helper(os.Args[2:]))
	}
	os.Exit(m.Run())
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

	rules := []NetRule{{Section: "connect", Proto: "tcp", Host: "registry.example", Port: 443, Endpoint: "registry.example:443"}}
	g, err := newGuard(t.Context(), Config{Net: true, Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
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
