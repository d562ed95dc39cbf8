package seccomp

import (
	"fmt"
	"slices"

	"github.com/sysprof/sysprof/policy"
)

// LiftRule returns the profile rule on syscall's argument arg, for a profile that has none
// there, that lets value v through as well as everything the filter's own check on that
// argument (hardening: prlimit64's pid 0, clone's namespace flags, PROT_EXEC, set-id modes,
// TIOCSTI) lets through: the rule replaces that check (explicitlyAllows), so it must not
// narrow what passed it. guarded is false when no filter check guards the argument (any value
// passes already: nothing to add); ok is false when a rule cannot say it exactly
// (memfd_create's flags, opens for writing: the supervisor's work, which a rule would skip;
// several checks on one argument).
func LiftRule(syscall string, arg int, v uint64) (r policy.ArgRule, guarded, ok bool) {
	var hs []Check
	for _, h := range hardening(&policy.Profile{}, true, false, false)[syscall] {
		if h.Arg == arg {
			hs = append(hs, h)
		}
	}
	if len(hs) == 0 {
		return policy.ArgRule{}, false, false
	}
	h := hs[0]
	if len(hs) > 1 || h.Why == WhyMemfd || h.Why == WhyOpenWrites {
		return policy.ArgRule{}, true, false
	}
	full := ^uint64(0)
	if h.Width32 {
		full = 0xffffffff
	}
	mask := h.Mask & full
	hex := func(n uint64) string { return fmt.Sprintf("%#x", n) }
	r = policy.ArgRule{Syscall: syscall, Arg: arg}
	if mask != full {
		r.Mask = hex(mask)
	}
	v &= mask
	switch {
	case h.HasValues:
		for _, x := range append(slices.Clone(h.Values), v) {
			if s := hex(x & mask); !slices.Contains(r.Values, s) {
				r.Values = append(r.Values, s)
			}
		}
	case h.DenyBits != 0:
		r.Flags = []string{hex(mask &^ (h.DenyBits &^ v))}
	case len(h.DenyValues) > 0:
		for _, x := range h.DenyValues {
			if x&mask != v {
				r.Deny = append(r.Deny, hex(x&mask))
			}
		}
		if len(r.Deny) == 0 {
			r.Flags = []string{hex(mask)} // every value
		}
	default:
		return policy.ArgRule{}, true, false
	}
	return r, true, true
}
