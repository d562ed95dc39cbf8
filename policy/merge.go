package policy

import (
	"cmp"
	"slices"
	"strings"
)

// SameCommand reports whether two profiles describe the same command: the same argv when both
// record one, else the same name. Merge does not check it; refusing to merge profiles of
// different commands (unless forced) is the caller's choice.
func SameCommand(a, b *Profile) bool {
	if len(a.Metadata.Command) > 0 && len(b.Metadata.Command) > 0 {
		return slices.Equal(a.Metadata.Command, b.Metadata.Command)
	}
	return a.Metadata.Name == b.Metadata.Name
}

// Merge returns the union of two profiles, as if one profile had been learned from all their
// runs. Neither input is modified. It never drops anything either side allowed:
//
//   - syscalls, architectures, paths, endpoints and binaries are unioned; provenance is kept:
//     Seen counts add up (seen in 2 of dst's runs and 1 of src's is seen 3) and By keeps the
//     first non-empty binary, dst's first; metadata.runs is the sum;
//   - binaries with the same path but different sha256 are both kept;
//   - argument rules for the same syscall and argument are unioned into one rule: their Values
//     and Flags are unioned, and a side without a restriction (no rule for an argument of a
//     syscall it allows, or an empty Values or Flags list) makes the merged rule unrestricted
//     there too; differing masks are intersected (the values are re-masked);
//   - hidden paths are unioned too: a hidden path is a subtraction and wins over any read rule,
//     so Merge can hide a path one side read (never the other way round);
//   - privateTmp stays on only if both had it; incomplete is sticky (either side) and the
//     reasons are unioned;
//   - name and command are dst's when set; created is the earliest, updated the latest,
//     sysprofVersion and kernel the newest non-empty (src's).
func Merge(dst, src *Profile) *Profile {
	if dst == nil {
		return normalized(Clone(src))
	}
	if src == nil {
		return normalized(Clone(dst))
	}
	out := &Profile{APIVersion: dst.APIVersion, Kind: dst.Kind, HostRoot: dst.HostRoot || src.HostRoot}
	if out.APIVersion == "" {
		out.APIVersion = src.APIVersion
	}
	if out.Kind == "" {
		out.Kind = src.Kind
	}

	dm, sm := dst.Metadata, src.Metadata
	out.Metadata = Metadata{
		Name:              firstNonEmpty(dm.Name, sm.Name),
		Command:           slices.Clone(dm.Command),
		SysprofVersion:    firstNonEmpty(sm.SysprofVersion, dm.SysprofVersion),
		Kernel:            firstNonEmpty(sm.Kernel, dm.Kernel),
		LearnedOn:         sortedUnique(append(slices.Clone(dm.LearnedOn), sm.LearnedOn...)),
		Created:           minTime(dm.Created, sm.Created),
		Updated:           maxTime(dm.Updated, sm.Updated),
		Runs:              dm.Runs + sm.Runs,
		Incomplete:        dm.Incomplete || sm.Incomplete,
		IncompleteReasons: sortedUnique(append(slices.Clone(dm.IncompleteReasons), sm.IncompleteReasons...)),
		// Exact only when every run was: a profile with families closed stays so.
		Exact: dm.Exact && sm.Exact,
	}
	if len(out.Metadata.Command) == 0 {
		out.Metadata.Command = slices.Clone(sm.Command)
	}
	if len(out.Metadata.IncompleteReasons) == 0 {
		out.Metadata.IncompleteReasons = nil
	}

	out.Syscalls.Architectures = sortedUnique(append(slices.Clone(dst.Syscalls.Architectures), src.Syscalls.Architectures...))
	out.Syscalls.Allow = mergeKeyed(dst.Syscalls.Allow, src.Syscalls.Allow,
		func(s Syscall) string { return s.Name },
		func(a *Syscall, b Syscall) {
			a.Provenance = addProvenance(a.Provenance, b.Provenance)
			a.Base = a.Base || b.Base
			if b.Family == "" {
				a.Family = "" // learned in one run: no longer only a family member
			}
		})
	out.Syscalls.Args = mergeArgs(dst, src)

	pathMerge := func(a, b []PathRule) []PathRule {
		return mergeKeyed(a, b, func(r PathRule) string { return r.Path }, func(x *PathRule, y PathRule) {
			x.Provenance = addProvenance(x.Provenance, y.Provenance)
			x.Note = firstNonEmpty(x.Note, y.Note)
			x.Pending = x.Pending || y.Pending // a merge accepts nothing (Accept does)
		})
	}
	out.Filesystem = Filesystem{
		Read:       pathMerge(dst.Filesystem.Read, src.Filesystem.Read),
		Write:      pathMerge(dst.Filesystem.Write, src.Filesystem.Write),
		Exec:       pathMerge(dst.Filesystem.Exec, src.Filesystem.Exec),
		List:       pathMerge(dst.Filesystem.List, src.Filesystem.List),
		Hidden:     pathMerge(dst.Filesystem.Hidden, src.Filesystem.Hidden),
		PrivateTmp: dst.Filesystem.PrivateTmp && src.Filesystem.PrivateTmp,
	}

	epMerge := func(a, b []Endpoint) []Endpoint {
		return mergeKeyed(a, b, func(e Endpoint) string { return e.Proto + " " + e.Endpoint }, func(x *Endpoint, y Endpoint) {
			by := ReachedBy(x.By, y.By)
			x.Provenance = addProvenance(x.Provenance, y.Provenance)
			x.By = by
		})
	}
	out.Network = Network{
		Connect: epMerge(dst.Network.Connect, src.Network.Connect),
		Send:    epMerge(dst.Network.Send, src.Network.Send),
		Bind:    epMerge(dst.Network.Bind, src.Network.Bind),
		Resolve: epMerge(dst.Network.Resolve, src.Network.Resolve),
	}
	out.Limits = mergeLimits(dst.Limits, src.Limits)
	out.Env.Pass = sortedUnique(append(slices.Clone(dst.Env.Pass), src.Env.Pass...))
	out.Credentials = mergeCredentials(dst.Credentials, src.Credentials)
	out.Binaries = mergeKeyed(dst.Binaries, src.Binaries,
		func(b Binary) string { return b.Path + "\x00" + b.SHA256 },
		func(x *Binary, y Binary) { x.Provenance = addProvenance(x.Provenance, y.Provenance) })
	return normalized(out)
}

func normalized(p *Profile) *Profile {
	Normalize(p)
	return p
}

// mergeKeyed unions two lists by key; join folds an item of b into the equal-keyed item of
// the result. Duplicates within one list are folded the same way.
func mergeKeyed[T any](a, b []T, key func(T) string, join func(*T, T)) []T {
	var out []T
	idx := map[string]int{}
	for _, l := range [][]T{a, b} {
		for _, x := range l {
			k := key(x)
			if i, ok := idx[k]; ok {
				join(&out[i], x)
				continue
			}
			idx[k] = len(out)
			out = append(out, x)
		}
	}
	return out
}

// AnyBinary is the by: of a network rule that passes for every binary (as an empty by: does).
const AnyBinary = "any"

// ReachedBy is who may reach an endpoint that binaries a and b reached: two different binaries
// make it every binary's (enforce passes a per-binary rule to that binary's own file and its
// transport helpers only, so keeping one would deny the other on the next run); an empty by
// (every binary) stays every binary's.
func ReachedBy(a, b string) string {
	switch {
	case a == "" || b == "":
		return ""
	case a != b:
		return AnyBinary
	}
	return a
}

func addProvenance(a, b Provenance) Provenance {
	return Provenance{By: firstNonEmpty(a.By, b.By), Seen: a.Seen + b.Seen}
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// minTime and maxTime compare RFC 3339 UTC strings, which sort like the times they name.
func minTime(a, b string) string {
	if a == "" || b != "" && b < a {
		return b
	}
	return a
}

func maxTime(a, b string) string {
	if b > a {
		return b
	}
	return a
}

type argKey struct {
	syscall string
	arg     int
}

// mergeArgs unions the argument rules of two profiles. See Merge.
func mergeArgs(dst, src *Profile) []ArgRule {
	d, s := foldArgs(dst), foldArgs(src)
	dAllows, sAllows := allowSet(dst), allowSet(src)
	keys := map[argKey]bool{}
	for k := range d {
		keys[k] = true
	}
	for k := range s {
		keys[k] = true
	}
	var out []ArgRule
	for k := range keys {
		rd, rs := d[k], s[k]
		// A side that allows the syscall without a rule for this argument lets any value
		// through: so does the union. On a hardened argument (execBit: prot, memfd flags) no rule
		// lets any value but PROT_EXEC through: the union is the other side's rule if that
		// allows no PROT_EXEC value (no rule), else every value (the exec-memory rule).
		if rd == nil && dAllows[k.syscall] || rs == nil && sAllows[k.syscall] {
			// A pid argument without a rule lets pid 0 through (SelfOnlyArgs): the union is
			// the other side's rule when that lets 0 through too.
			if other := cmp.Or(rd, rs); selfOnly(k.syscall, k.arg) && other != nil && slices.ContainsFunc(other.Values, func(v string) bool {
				n, err := ParseValue(v)
				return err == nil && n == 0
			}) {
				out = append(out, *other)
				continue
			}
			if bit, lets, ok := execBit(k.syscall, k.arg); ok {
				other := rd
				if other == nil {
					other = rs
				}
				if other != nil && allowsExecBit(*other, bit) {
					lets.Name, lets.Provenance = other.Name, other.Provenance
					out = append(out, lets)
				}
			}
			continue
		}
		switch {
		case rd != nil && rs != nil:
			out = append(out, unionArgRule(*rd, *rs))
		case rd != nil:
			out = append(out, *rd)
		default:
			out = append(out, *rs)
		}
	}
	return out
}

// allowsExecBit reports whether r lets some value with bit (PROT_EXEC, MFD_EXEC) through.
func allowsExecBit(r ArgRule, bit uint64) bool {
	if len(r.Values) == 0 && len(r.Flags) == 0 {
		return true
	}
	for v := range argValueSet(r.Values) {
		if v&bit != 0 {
			return true
		}
	}
	for v := range argValueSet(r.Flags) {
		if v&bit != 0 {
			return true
		}
	}
	return false
}

// foldArgs folds a profile's rules for the same syscall and argument into one. Within one
// profile such rules are ANDed; their union is wider, so folding never drops an allowance.
func foldArgs(p *Profile) map[argKey]*ArgRule {
	own := map[argKey]*ArgRule{}
	for _, r := range p.Syscalls.Args {
		k := argKey{r.Syscall, r.Arg}
		if o := own[k]; o != nil {
			*o = unionArgRule(*o, r)
			continue
		}
		c := r
		c.Values, c.Flags, c.Deny = slices.Clone(r.Values), slices.Clone(r.Flags), slices.Clone(r.Deny)
		own[k] = &c
	}
	return own
}

func allowSet(p *Profile) map[string]bool {
	m := map[string]bool{}
	for _, s := range p.Syscalls.Allow {
		m[s.Name] = true
	}
	return m
}

// unionArgRule returns a rule that allows every call either rule allows.
func unionArgRule(a, b ArgRule) ArgRule {
	out := a
	out.Name = firstNonEmpty(a.Name, b.Name)
	out.Errno = firstNonEmpty(a.Errno, b.Errno)
	out.Provenance = addProvenance(a.Provenance, b.Provenance)
	va, vb := a.Values, b.Values
	if a.Mask != b.Mask {
		// A call allowed by a has (v & ma) in Va; under m = ma & mb, (v & m) is in
		// {x & m : x in Va}. The same holds for b, so the re-masked union allows both.
		ma, mb := maskValue(a.Mask), maskValue(b.Mask)
		m := ma & mb
		out.Mask = hexValue(m)
		if m == ^uint64(0) {
			out.Mask = ""
		}
		va, vb = remask(a.Values, m), remask(b.Values, m)
	}
	// Empty Values or Flags means "no restriction": the union of anything with that is too.
	if len(va) == 0 || len(vb) == 0 {
		out.Values = nil
	} else {
		out.Values = sortedUnique(append(slices.Clone(va), vb...))
	}
	if len(a.Flags) == 0 || len(b.Flags) == 0 {
		out.Flags = nil
	} else {
		out.Flags = sortedUnique(append(slices.Clone(a.Flags), b.Flags...))
	}
	// A value stays denied only if both sides deny it (under the same mask): anything either
	// side lets through passes the union.
	out.Deny = nil
	if a.Mask == b.Mask {
		for _, v := range a.Deny {
			if slices.Contains(b.Deny, v) {
				out.Deny = append(out.Deny, v)
			}
		}
	}
	return out
}

func maskValue(s string) uint64 {
	if s == "" {
		return ^uint64(0)
	}
	v, err := ParseValue(s)
	if err != nil {
		return ^uint64(0) // an invalid mask was rejected at load; be wide, never narrow
	}
	return v
}

func remask(vals []string, m uint64) []string {
	out := make([]string, 0, len(vals))
	for _, s := range vals {
		v, err := ParseValue(s)
		if err != nil {
			out = append(out, s)
			continue
		}
		if v&m == v {
			out = append(out, s) // unchanged: keep the symbolic spelling
		} else {
			out = append(out, hexValue(v&m))
		}
	}
	return out
}

// argValueSet is used by Diff: the numeric values of a list, with their spellings.
func argValueSet(vals []string) map[uint64]string {
	m := map[uint64]string{}
	for _, s := range vals {
		if v, err := ParseValue(s); err == nil {
			if _, ok := m[v]; !ok || strings.HasPrefix(m[v], "0x") {
				m[v] = s
			}
		}
	}
	return m
}
