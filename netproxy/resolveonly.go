package netproxy

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"
)

// AddResolveOnly gives the stub names to answer that no rule connects to (a profile's
// network.resolve: looked up in the learn run, never connected to). Each gets a synthetic
// address after the rules' names (sorted, so the same profile gives the same addresses); a
// connection to it finds no rule for the name and is refused like any other.
func (p *Plan) AddResolveOnly(names []string) error {
	var add []string
	for _, n := range names {
		n = canonName(n)
		if _, ok := p.Names[n]; !ok && n != "" {
			add = append(add, n)
		}
	}
	slices.Sort(add)
	add = slices.Compact(add)
	if len(p.Names)+len(add) > 65000 {
		return fmt.Errorf("egress: %d names: more than the synthetic range holds", len(p.Names)+len(add))
	}
	a := syntheticBase
	for _, addr := range p.Names {
		if addr.Compare(a) >= 0 {
			a = addr.Next()
		}
	}
	for _, n := range add {
		p.Names[n] = a
		p.byAddr[a] = n
		a = a.Next()
	}
	return nil
}

// HostsFamilies says which address families the host's hosts file gives names: the stub answers
// AAAA for those with an IPv6 address (has6) and no A for those without an IPv4 one (no4), as
// the file would; every other name gets A only. localhost is never one.
func (p *Plan) HostsFamilies(has6, no4 []string) {
	p.HostsNames(nil)
	if p.has6 == nil {
		p.has6, p.no4 = map[string]bool{}, map[string]bool{}
	}
	for set, names := range map[*map[string]bool][]string{&p.has6: has6, &p.no4: no4} {
		for _, n := range names {
			if n = canonName(n); n != "localhost" && !strings.HasSuffix(n, ".localhost") {
				(*set)[n] = true
			}
		}
	}
}

// HostsNames marks names as the hosts file's: their families are HostsFamilies', never the
// DNS's (HostHas6 is not asked).
func (p *Plan) HostsNames(names []string) {
	if p.hosts == nil {
		p.hosts = map[string]bool{}
	}
	for _, n := range names {
		p.hosts[canonName(n)] = true
	}
}

// answers6 says whether the stub answers name's AAAA: a hosts-file name when the file gives
// it an IPv6 address, a name of the DNS when the host gets a reachable IPv6 address for it
// (asked once), so that a dual-stack client gets inside the families it gets on the host.
func (p *Plan) answers6(name string) bool {
	if p.has6[name] {
		return true
	}
	if p.hosts[name] || p.no4[name] || p.HostHas6 == nil || name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return false
	}
	// Once a name, also when queries for it are answered at once (serveDNS): the second waits
	// for the first's answer.
	v, _ := p.has6DNS.LoadOrStore(name, &has6Answer{})
	a := v.(*has6Answer)
	a.once.Do(func() { a.yes = p.HostHas6(name) })
	return a.yes
}

// has6Answer is HostHas6's answer for one name, asked once.
type has6Answer struct {
	once sync.Once
	yes  bool
}

// HostResolves6 is Plan.HostHas6 on this host: the host has a global IPv6 address (as glibc's
// AI_ADDRCONFIG asks) and its resolver gives name one (within a second).
func HostResolves6(name string) bool {
	if !hostHasGlobal6() {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip6", name)
	return err == nil && slices.ContainsFunc(addrs, func(a netip.Addr) bool { return a.Is6() && !a.Is4In6() })
}

// hostHasGlobal6: an IPv6 address of an interface that is neither loopback nor link-local.
func hostHasGlobal6() bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if pfx, err := netip.ParsePrefix(a.String()); err == nil {
			if ip := pfx.Addr(); ip.Is6() && !ip.Is4In6() && ip.IsGlobalUnicast() {
				return true
			}
		}
	}
	return false
}
