package enforcer

import (
	"syscall"

	"github.com/sysprof/sysprof/policy"
)

// compileArgRule compiles one profile rule, read by policy.ParseArgRule. errnoOnly reports a
// rule with Errno and no Values, Flags or Deny: it answers every call of the syscall with the
// errno (chk.fail).
func compileArgRule(r policy.ArgRule) (chk argCheck, errnoOnly bool, err error) {
	s, err := policy.ParseArgRule(r)
	if err != nil {
		return argCheck{}, false, err
	}
	c := argCheck{arg: s.Arg, width32: isInt32Arg(s.Syscall, s.Arg), mask: s.Mask, fail: retNotify, why: "profile rule",
		values: s.Values, hasValues: s.Values != nil, allowedBits: s.Flags, hasAllowedBits: s.HasFlags, denyValues: s.Deny}
	if s.Errno != 0 {
		c.fail = retErrno(syscall.Errno(s.Errno))
	}
	return c, s.ErrnoOnly(), nil
}
