package enforcer

import (
	"fmt"
	"math/bits"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/policy"
)

// argSymbols are the symbolic argument values a profile may use (ArgRule.Values, Flags, Mask)
// and that the supervisor uses to decode denied calls. The numbers are the x86 ones (x86_64 and
// i386 agree on all of these).
type argSymbols struct {
	families, sockTypes, sockFlags, protocols, clone, ioctl, ptrace map[string]uint64
	// all is every name above, for parsing profile values.
	all map[string]uint64
}

// argTables are built on first use: a run whose profile has no argument rule and no denial
// never reads them (nor does the init stage).
var argTables = sync.OnceValue(func() *argSymbols {
	t := &argSymbols{
		families: map[string]uint64{
			"AF_UNSPEC": unix.AF_UNSPEC, "AF_UNIX": unix.AF_UNIX, "AF_LOCAL": unix.AF_UNIX, "AF_INET": unix.AF_INET,
			"AF_INET6": unix.AF_INET6, "AF_NETLINK": unix.AF_NETLINK, "AF_PACKET": unix.AF_PACKET,
			"AF_BLUETOOTH": unix.AF_BLUETOOTH, "AF_ALG": unix.AF_ALG, "AF_VSOCK": unix.AF_VSOCK,
			"AF_KEY": unix.AF_KEY, "AF_XDP": unix.AF_XDP, "AF_CAN": unix.AF_CAN, "AF_TIPC": unix.AF_TIPC,
			"AF_RDS": unix.AF_RDS, "AF_APPLETALK": unix.AF_APPLETALK, "AF_X25": unix.AF_X25,
			"AF_AX25": unix.AF_AX25, "AF_IPX": unix.AF_IPX, "AF_NFC": unix.AF_NFC, "AF_SMC": unix.AF_SMC,
		},
		sockTypes: map[string]uint64{
			"SOCK_STREAM": unix.SOCK_STREAM, "SOCK_DGRAM": unix.SOCK_DGRAM, "SOCK_RAW": unix.SOCK_RAW,
			"SOCK_RDM": unix.SOCK_RDM, "SOCK_SEQPACKET": unix.SOCK_SEQPACKET, "SOCK_PACKET": unix.SOCK_PACKET,
		},
		sockFlags: map[string]uint64{"SOCK_CLOEXEC": unix.SOCK_CLOEXEC, "SOCK_NONBLOCK": unix.SOCK_NONBLOCK},
		protocols: map[string]uint64{
			"IPPROTO_IP": unix.IPPROTO_IP, "IPPROTO_ICMP": unix.IPPROTO_ICMP, "IPPROTO_TCP": unix.IPPROTO_TCP,
			"IPPROTO_UDP": unix.IPPROTO_UDP, "IPPROTO_IPV6": unix.IPPROTO_IPV6, "IPPROTO_ICMPV6": unix.IPPROTO_ICMPV6,
			"IPPROTO_SCTP": unix.IPPROTO_SCTP, "IPPROTO_UDPLITE": unix.IPPROTO_UDPLITE, "IPPROTO_RAW": unix.IPPROTO_RAW,
			"IPPROTO_MPTCP": ipprotoMPTCP,
		},
		clone: map[string]uint64{
			"CLONE_VM": unix.CLONE_VM, "CLONE_FS": unix.CLONE_FS, "CLONE_FILES": unix.CLONE_FILES,
			"CLONE_SIGHAND": unix.CLONE_SIGHAND, "CLONE_PIDFD": unix.CLONE_PIDFD, "CLONE_PTRACE": unix.CLONE_PTRACE,
			"CLONE_VFORK": unix.CLONE_VFORK, "CLONE_PARENT": unix.CLONE_PARENT, "CLONE_THREAD": unix.CLONE_THREAD,
			"CLONE_NEWNS": unix.CLONE_NEWNS, "CLONE_SYSVSEM": unix.CLONE_SYSVSEM, "CLONE_SETTLS": unix.CLONE_SETTLS,
			"CLONE_PARENT_SETTID": unix.CLONE_PARENT_SETTID, "CLONE_CHILD_CLEARTID": unix.CLONE_CHILD_CLEARTID,
			"CLONE_DETACHED": unix.CLONE_DETACHED, "CLONE_UNTRACED": unix.CLONE_UNTRACED,
			"CLONE_CHILD_SETTID": unix.CLONE_CHILD_SETTID, "CLONE_NEWCGROUP": unix.CLONE_NEWCGROUP,
			"CLONE_NEWUTS": unix.CLONE_NEWUTS, "CLONE_NEWIPC": unix.CLONE_NEWIPC, "CLONE_NEWUSER": unix.CLONE_NEWUSER,
			"CLONE_NEWPID": unix.CLONE_NEWPID, "CLONE_NEWNET": unix.CLONE_NEWNET, "CLONE_IO": unix.CLONE_IO,
			"CLONE_NEWTIME": unix.CLONE_NEWTIME,
		},
		ioctl: map[string]uint64{
			"TIOCSTI": unix.TIOCSTI, "TIOCLINUX": unix.TIOCLINUX, "TCGETS": unix.TCGETS, "TCSETS": unix.TCSETS,
			"TIOCGWINSZ": unix.TIOCGWINSZ, "TIOCSWINSZ": unix.TIOCSWINSZ, "TIOCGPGRP": unix.TIOCGPGRP,
			"TIOCSPGRP": unix.TIOCSPGRP, "FIONREAD": 0x541b, "FIONBIO": 0x5421, "FIOCLEX": 0x5451,
			"FIONCLEX": 0x5450, "TIOCSCTTY": unix.TIOCSCTTY, "TIOCNOTTY": unix.TIOCNOTTY,
		},
		ptrace: map[string]uint64{
			"PTRACE_TRACEME": unix.PTRACE_TRACEME, "PTRACE_PEEKTEXT": unix.PTRACE_PEEKTEXT, "PTRACE_PEEKDATA": unix.PTRACE_PEEKDATA,
			"PTRACE_POKETEXT": unix.PTRACE_POKETEXT, "PTRACE_POKEDATA": unix.PTRACE_POKEDATA, "PTRACE_CONT": unix.PTRACE_CONT,
			"PTRACE_KILL": unix.PTRACE_KILL, "PTRACE_ATTACH": unix.PTRACE_ATTACH, "PTRACE_DETACH": unix.PTRACE_DETACH,
			"PTRACE_SEIZE": unix.PTRACE_SEIZE, "PTRACE_INTERRUPT": unix.PTRACE_INTERRUPT, "PTRACE_GETREGS": unix.PTRACE_GETREGS,
			"PTRACE_SYSCALL": unix.PTRACE_SYSCALL,
		},
	}
	t.all = map[string]uint64{}
	for _, m := range []map[string]uint64{t.families, t.sockTypes, t.sockFlags, t.protocols, t.clone, t.ioctl, t.ptrace} {
		for k, v := range m {
			t.all[k] = v
		}
	}
	return t
})

var namespaceFlags uint64 = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWTIME

const ipprotoMPTCP = 262 // IPPROTO_MPTCP: MPTCP sockets bypass Landlock's TCP port rules

// parseValue parses a profile argument value: a number (0x10, 16, 020), a symbol (AF_INET), or
// several of them joined with | (SOCK_STREAM|SOCK_CLOEXEC). The profile's own parser decides
// first, so that the enforcer and `sysprof diff` read a value the same way; the enforcer's
// tables only add symbols it does not know.
func parseValue(s string) (uint64, error) {
	if v, err := policy.ParseValue(s); err == nil {
		return v, nil
	}
	var out uint64
	for _, part := range strings.Split(s, "|") {
		part = strings.TrimSpace(part)
		if part == "" {
			return 0, fmt.Errorf("empty value in %q", s)
		}
		if v, ok := argTables().all[part]; ok {
			out |= v
			continue
		}
		if strings.HasPrefix(part, "-") {
			v, err := strconv.ParseInt(part, 0, 64)
			if err != nil {
				return 0, fmt.Errorf("value %q: %w", part, err)
			}
			out |= uint64(v)
			continue
		}
		v, err := strconv.ParseUint(part, 0, 64)
		if err != nil {
			return 0, fmt.Errorf("unknown value %q (not a number or a known symbol)", part)
		}
		out |= v
	}
	return out, nil
}

// parseErrno parses an errno name (ENOSYS) or number.
func parseErrno(s string) (syscall.Errno, error) {
	if n, err := strconv.ParseUint(s, 0, 16); err == nil && n > 0 && n < 4096 {
		return syscall.Errno(n), nil
	}
	for e := syscall.Errno(1); e < 4096; e++ {
		if unix.ErrnoName(e) == s {
			return e, nil
		}
		if e > 200 {
			break
		}
	}
	return 0, fmt.Errorf("unknown errno %q", s)
}

// nameOf returns the symbol for v in table, or hex.
func nameOf(table map[string]uint64, v uint64) string {
	var names []string
	for k, x := range table {
		if x == v {
			names = append(names, k)
		}
	}
	if len(names) == 0 {
		return "0x" + strconv.FormatUint(v, 16)
	}
	sort.Strings(names)
	return names[0]
}

// flagNames renders v as SYMBOL|SYMBOL|0xrest using single-bit symbols of table.
func flagNames(table map[string]uint64, v uint64) string {
	if v == 0 {
		return "0"
	}
	var parts []string
	rest := v
	for rest != 0 {
		bit := uint64(1) << bits.TrailingZeros64(rest)
		rest &^= bit
		name := ""
		for k, x := range table {
			if x == bit && (name == "" || k < name) {
				name = k
			}
		}
		if name == "" {
			name = "0x" + strconv.FormatUint(bit, 16)
		}
		parts = append(parts, name)
	}
	return strings.Join(parts, "|")
}
