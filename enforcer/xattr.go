package enforcer

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/changeset"
)

// The kernel refuses some extended attributes inside the sandbox on its own (file
// capabilities: EPERM without CAP_SETFCAP; trusted.*: EPERM; an ACL naming a user the user
// namespace does not map: EINVAL), and no observer names those refusals: seccomp cannot read
// the name, the guard takes no EPERM or EINVAL. So every setxattr the profile allows goes to
// the supervisor (seccomp.WhyXattr), which answers these itself and records each (issue 23
// item 5: every blocked attempt is on the record); every other attribute goes on.

// xattrRefusal decides a setxattr of attribute name with value by a task whose user namespace
// maps the ids mapped says: the errno to answer and why (a denial's suggestion), or 0 to let
// the call go on (the kernel and the other layers decide it).
func xattrRefusal(name string, value []byte, mapped func(gid bool, id uint32) bool) (unix.Errno, string) {
	switch {
	case name == "security.capability":
		return unix.EPERM, "none: file capabilities are never set inside the sandbox (they would run a program with privileges on the host)"
	case strings.HasPrefix(name, "trusted."):
		return unix.EPERM, "none: trusted.* attributes are the kernel's and overlayfs's (a redirect or metacopy of a staged file), never set inside the sandbox"
	case strings.HasPrefix(name, "user.overlay."):
		return unix.EPERM, "none: user.overlay.* attributes are overlayfs's own (a redirect or metacopy of a staged file), never set inside the sandbox"
	case name == changeset.ACLAccess || name == changeset.ACLDefault:
		es, ok := changeset.ParseACL(value)
		if !ok {
			return unix.EINVAL, "none: not a POSIX ACL (the kernel answers EINVAL)"
		}
		uids, gids := changeset.NamedIDs(es)
		for _, u := range uids {
			if !mapped(false, u) {
				return unix.EINVAL, fmt.Sprintf("none: an ACL naming user %d, whom the sandbox does not map (a grant to another local user; the kernel answers EINVAL)", u)
			}
		}
		for _, g := range gids {
			if !mapped(true, g) {
				return unix.EINVAL, fmt.Sprintf("none: an ACL naming group %d, which the sandbox does not map (a grant to another local group; the kernel answers EINVAL)", g)
			}
		}
	}
	return 0, ""
}

// idMapped reports whether id lies in an inside range of a /proc/PID/uid_map or gid_map.
func idMapped(idMap string, id uint32) bool {
	for _, l := range strings.Split(idMap, "\n") {
		var in, out, n uint64
		if c, _ := fmt.Sscan(l, &in, &out, &n); c == 3 && uint64(id) >= in && uint64(id) < in+n {
			return true
		}
	}
	return false
}
