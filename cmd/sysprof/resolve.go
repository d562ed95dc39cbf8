package main

import (
	"fmt"
	"net/netip"
	"strings"
)

// parseResolve parses --resolve NAME=ADDR[,ADDR...] values.
func parseResolve(vals []string) (map[string][]netip.Addr, error) {
	if len(vals) == 0 {
		return nil, nil
	}
	out := map[string][]netip.Addr{}
	for _, v := range vals {
		name, addrs, ok := strings.Cut(v, "=")
		name = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(name)), ".")
		if !ok || name == "" || addrs == "" {
			return nil, fmt.Errorf("--resolve %q: want NAME=ADDR[,ADDR...]", v)
		}
		for _, s := range strings.Split(addrs, ",") {
			a, err := netip.ParseAddr(strings.Trim(strings.TrimSpace(s), "[]"))
			if err != nil {
				return nil, fmt.Errorf("--resolve %q: %w", v, err)
			}
			out[name] = append(out[name], a.Unmap())
		}
	}
	return out, nil
}
