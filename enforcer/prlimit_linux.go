package enforcer

import (
	"os"
	"strconv"
	"strings"

	"github.com/sysprof/sysprof/seccomp"
)

// prlimitSelf reports a prlimit64 the filter sent only for seccomp.WhyPrlimitOther (or for
// the profile's own rule on the pid, which replaces that check: refine adds one) whose pid
// is the caller itself (its process or thread id as the caller sees them: the last NStgid and
// NSpid fields): that is the caller's own limits, as pid 0 is, and it goes on. The caller is
// blocked in the notification, so its ids cannot be reused meanwhile.
func (c *Compiled) prlimitSelf(n *seccompNotif) bool {
	if name, _ := SyscallName(n.Data.Arch, uint32(n.Data.Nr)); name != "prlimit64" || !c.onlyFails(n, seccomp.WhyPrlimitOther) && !c.onlyFails(n, seccomp.WhyProfileRule) {
		return false
	}
	pid := strconv.FormatUint(n.Data.Args[0]&0xffffffff, 10)
	data, err := os.ReadFile("/proc/" + strconv.Itoa(int(n.Pid)) + "/status")
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(data), "\n") {
		k, v, _ := strings.Cut(l, ":")
		if f := strings.Fields(v); (k == "NStgid" || k == "NSpid") && len(f) > 0 && f[len(f)-1] == pid {
			return true
		}
	}
	return false
}
