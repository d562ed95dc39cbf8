package policy

import (
	"slices"
	"strings"

	"github.com/sysprof/sysprof/paths"
)

// Normalize sorts every list and drops exact duplicates so that the same policy always
// serializes to the same bytes, with paths in today's vocabulary (paths.Canonical). It never removes an allowance. Sorting is stable, so when a
// list holds two entries for one key (two rules for one path) the first one written is kept,
// whatever order the rest of the list was in; argument rules for the same syscall and argument
// are ordered by their content.
func Normalize(p *Profile) {
	p.Syscalls.Architectures = sortedUnique(p.Syscalls.Architectures)
	slices.SortStableFunc(p.Syscalls.Allow, func(a, b Syscall) int { return strings.Compare(a.Name, b.Name) })
	p.Syscalls.Allow = slices.CompactFunc(p.Syscalls.Allow, func(a, b Syscall) bool { return a.Name == b.Name })
	for i := range p.Syscalls.Args {
		p.Syscalls.Args[i].Values = sortedUnique(p.Syscalls.Args[i].Values)
		p.Syscalls.Args[i].Flags = sortedUnique(p.Syscalls.Args[i].Flags)
		p.Syscalls.Args[i].Deny = sortedUnique(p.Syscalls.Args[i].Deny)
	}
	slices.SortStableFunc(p.Syscalls.Args, func(a, b ArgRule) int {
		if c := strings.Compare(a.Syscall, b.Syscall); c != 0 {
			return c
		}
		if a.Arg != b.Arg {
			return a.Arg - b.Arg
		}
		return compareArgRule(a, b)
	})
	// Identical rules ANDed are one rule.
	p.Syscalls.Args = slices.CompactFunc(p.Syscalls.Args, func(a, b ArgRule) bool {
		return a.Syscall == b.Syscall && a.Arg == b.Arg && compareArgRule(a, b) == 0
	})
	p.Env.Pass = sortedUnique(p.Env.Pass)
	normalizeCredentials(p.Credentials)
	for _, l := range []*[]PathRule{&p.Filesystem.Read, &p.Filesystem.Write, &p.Filesystem.Exec, &p.Filesystem.List, &p.Filesystem.Hidden} {
		for i := range *l {
			(*l)[i].Path = paths.Canonical((*l)[i].Path) // an older learn's spelling
		}
		slices.SortStableFunc(*l, func(a, b PathRule) int { return strings.Compare(a.Path, b.Path) })
		*l = slices.CompactFunc(*l, func(a, b PathRule) bool { return a.Path == b.Path })
	}
	for _, l := range []*[]Endpoint{&p.Network.Connect, &p.Network.Send, &p.Network.Bind, &p.Network.Resolve} {
		slices.SortStableFunc(*l, func(a, b Endpoint) int {
			if c := strings.Compare(a.Endpoint, b.Endpoint); c != 0 {
				return c
			}
			return strings.Compare(a.Proto, b.Proto)
		})
		*l = slices.CompactFunc(*l, func(a, b Endpoint) bool { return a.Endpoint == b.Endpoint && a.Proto == b.Proto })
	}
	slices.SortStableFunc(p.Binaries, func(a, b Binary) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return strings.Compare(a.SHA256, b.SHA256)
	})
	p.Binaries = slices.CompactFunc(p.Binaries, func(a, b Binary) bool { return a.Path == b.Path && a.SHA256 == b.SHA256 })
}

func sortedUnique(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}

func compareArgRule(a, b ArgRule) int {
	for _, p := range [][2]string{
		{a.Name, b.Name}, {a.Mask, b.Mask},
		{strings.Join(a.Values, ","), strings.Join(b.Values, ",")},
		{strings.Join(a.Flags, ","), strings.Join(b.Flags, ",")},
		{a.Errno, b.Errno}, {a.By, b.By},
	} {
		if c := strings.Compare(p[0], p[1]); c != 0 {
			return c
		}
	}
	return a.Seen - b.Seen
}
