package seccomp

import (
	"syscall"

	"github.com/sysprof/sysprof/policy"
)

// compileArgRule compiles one profile rule, read by policy.ParseArgRule. errnoOnly reports a
// rule with Errno and no Values, Flags or Deny: it answers every call of the syscall with the
// errno (chk.Fail).
func compileArgRule(r policy.ArgRule) (chk Check, errnoOnly bool, err error) {
	s, err := policy.ParseArgRule(r)
	if err != nil {
		return Check{}, false, err
	}
	c := Check{Arg: s.Arg, Width32: isInt32Arg(s.Syscall, s.Arg), Mask: s.Mask, Fail: RetNotify, Why: WhyProfileRule,
		Values: s.Values, HasValues: s.Values != nil, AllowedBits: s.Flags, HasAllowedBits: s.HasFlags, DenyValues: s.Deny}
	if s.Errno != 0 {
		c.Fail = RetErrno(syscall.Errno(s.Errno))
	}
	return c, s.ErrnoOnly(), nil
}
