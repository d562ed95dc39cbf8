package netproxy

import (
	"fmt"
	"slices"
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
