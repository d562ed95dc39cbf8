package enforcer

import (
	"fmt"

	"github.com/sysprof/sysprof/policy"
)

// compileArgRule compiles one profile rule. errnoOnly reports a rule with Errno and no
// Values, Flags or Deny: it answers every call of the syscall with the errno (chk.fail).
func compileArgRule(r policy.ArgRule) (chk argCheck, errnoOnly bool, err error) {
	where := fmt.Sprintf("syscalls.args: %s arg %d", r.Syscall, r.Arg)
	if r.Arg < 0 || r.Arg > 5 {
		return argCheck{}, false, fmt.Errorf("%s: argument index must be 0..5", where)
	}
	c := argCheck{arg: r.Arg, width32: isInt32Arg(r.Syscall, r.Arg), mask: ^uint64(0), fail: retNotify, why: "profile rule"}
	if r.Mask != "" {
		m, err := parseValue(r.Mask)
		if err != nil {
			return c, false, fmt.Errorf("%s: mask: %w", where, err)
		}
		c.mask = m
	}
	for _, v := range r.Values {
		x, err := parseValue(v)
		if err != nil {
			return c, false, fmt.Errorf("%s: values: %w", where, err)
		}
		c.values = append(c.values, x)
		c.hasValues = true
	}
	for _, f := range r.Flags {
		x, err := parseValue(f)
		if err != nil {
			return c, false, fmt.Errorf("%s: flags: %w", where, err)
		}
		c.allowedBits |= x
		c.hasAllowedBits = true
	}
	for _, d := range r.Deny {
		x, err := parseValue(d)
		if err != nil {
			return c, false, fmt.Errorf("%s: deny: %w", where, err)
		}
		c.denyValues = append(c.denyValues, x)
	}
	if r.Errno != "" {
		e, err := parseErrno(r.Errno)
		if err != nil {
			return c, false, fmt.Errorf("%s: errno: %w", where, err)
		}
		c.fail = retErrno(e)
	}
	errnoOnly = r.Errno != "" && len(r.Values)+len(r.Flags)+len(r.Deny) == 0
	return c, errnoOnly, nil
}
