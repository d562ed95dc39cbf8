package netproxy

import (
	"fmt"
	"slices"
	"strings"
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
