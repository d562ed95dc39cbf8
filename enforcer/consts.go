package enforcer

import "golang.org/x/sys/unix"

// The values the compile hardening checks. Argument values of profile rules are read by
// policy (policy.ParseArgRule) and printed by it (policy.FormatArg).

var namespaceFlags uint64 = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWTIME

const ipprotoMPTCP = 262 // IPPROTO_MPTCP: MPTCP sockets bypass Landlock's TCP port rules
