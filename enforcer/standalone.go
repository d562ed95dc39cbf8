package enforcer

import (
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/seccomp"
)

// StandaloneFilter compiles p's seccomp program for use without sysprof's supervisor (bwrap
// --seccomp, systemd, other runtimes): every USER_NOTIF answer becomes ERRNO(EPERM), since
// nothing would be listening, and opens for writing are not sent anywhere (a /proc/self write
// is the runtime's to allow). It returns struct sock_filter entries in host byte order. Only
// env.Arch is used: the program depends on nothing else of the host.
func StandaloneFilter(p *policy.Profile, env Env) ([]byte, error) {
	c, err := compileSeccomp(p, env.Arch, false, supervise{})
	if err != nil {
		return nil, err
	}
	return seccomp.Standalone(c.Filter), nil
}
