package policy

import (
	"slices"
	"strings"
)

// Normalize sorts every list and drops exact duplicates so that the same policy always
// serializes to the same bytes. It never removes an allowance.
func Normalize(p *Profile) {
	p.Syscalls.Architectures = sortedUnique(p.Syscalls.Architectures)
	slices.SortFunc(p.Syscalls.Allow, func(a, b Syscall) int { return strings.Compare(a.Name, b.Name) })
	p.Syscalls.Allow = slices.CompactFunc(p.Syscalls.Allow, func(a, b Syscall) bool { return a.Name == b.Name })
	slices.SortFunc(p.Syscalls.Args, func(a, b ArgRule) int {
		if c := strings.Compare(a.Syscall, b.Syscall); c != 0 {
			return c
		}
		return a.Arg - b.Arg
	})
	for i := range p.Syscalls.Args {
		p.Syscalls.Args[i].Values = sortedUnique(p.Syscalls.Args[i].Values)
		p.Syscalls.Args[i].Flags = sortedUnique(p.Syscalls.Args[i].Flags)
	}
	for _, l := range []*[]PathRule{&p.Filesystem.Read, &p.Filesystem.Write, &p.Filesystem.Exec, &p.Filesystem.Hidden} {
		slices.SortFunc(*l, func(a, b PathRule) int { return strings.Compare(a.Path, b.Path) })
		*l = slices.CompactFunc(*l, func(a, b PathRule) bool { return a.Path == b.Path })
	}
	for _, l := range []*[]Endpoint{&p.Network.Connect, &p.Network.Send, &p.Network.Bind} {
		slices.SortFunc(*l, func(a, b Endpoint) int {
			if c := strings.Compare(a.Endpoint, b.Endpoint); c != 0 {
				return c
			}
			return strings.Compare(a.Proto, b.Proto)
		})
		*l = slices.CompactFunc(*l, func(a, b Endpoint) bool { return a.Endpoint == b.Endpoint && a.Proto == b.Proto })
	}
	slices.SortFunc(p.Binaries, func(a, b Binary) int { return strings.Compare(a.Path, b.Path) })
	p.Binaries = slices.CompactFunc(p.Binaries, func(a, b Binary) bool { return a.Path == b.Path && a.SHA256 == b.SHA256 })
}

func sortedUnique(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}
