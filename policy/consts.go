package policy

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// Kinds of symbolic constants, as used by Symbol and ArgKind. Each kind is a name space: a
// symbol belongs to exactly one kind.
const (
	KindFamily      = "family"      // AF_*: socket address families
	KindSockType    = "socktype"    // SOCK_*: socket types and the SOCK_NONBLOCK/SOCK_CLOEXEC flags
	KindProtocol    = "protocol"    // IPPROTO_*
	KindClone       = "clone"       // CLONE_* flags of clone, clone3, unshare, setns
	KindPrctl       = "prctl"       // PR_* options of prctl
	KindPersonality = "personality" // PER_* personalities and their flag bits
	KindIoctl       = "ioctl"       // ioctl request numbers
	KindProt        = "prot"        // PROT_* of mmap and mprotect
	KindMmap        = "mmap"        // MAP_* flags of mmap
	KindSignal      = "signal"      // SIG*
	KindPtrace      = "ptrace"      // PTRACE_* requests (GETREGS/SETREGS: where the architecture has them)
	KindErrno       = "errno"       // E* error numbers (for ArgRule.Errno)
)

type constant struct {
	name  string
	value uint64
}

// constKind is one table. Flag kinds are bit sets: Symbol decomposes a value into names.
type constKind struct {
	name   string
	flags  bool
	consts []constant // canonical name first when two names share a value
}

// The values are Linux's generic ABI, identical on x86_64, i386, x32, aarch64 and arm for
// every constant listed here. They are plain data: nothing is read from the host.
var constKinds = []constKind{
	{name: KindFamily, consts: []constant{
		{"AF_UNSPEC", 0}, {"AF_UNIX", 1}, {"AF_LOCAL", 1}, {"AF_INET", 2}, {"AF_AX25", 3},
		{"AF_IPX", 4}, {"AF_APPLETALK", 5}, {"AF_NETROM", 6}, {"AF_BRIDGE", 7}, {"AF_ATMPVC", 8},
		{"AF_X25", 9}, {"AF_INET6", 10}, {"AF_ROSE", 11}, {"AF_DECnet", 12}, {"AF_NETBEUI", 13},
		{"AF_SECURITY", 14}, {"AF_KEY", 15}, {"AF_NETLINK", 16}, {"AF_ROUTE", 16}, {"AF_PACKET", 17},
		{"AF_ASH", 18}, {"AF_ECONET", 19}, {"AF_ATMSVC", 20}, {"AF_RDS", 21}, {"AF_SNA", 22},
		{"AF_IRDA", 23}, {"AF_PPPOX", 24}, {"AF_WANPIPE", 25}, {"AF_LLC", 26}, {"AF_IB", 27},
		{"AF_MPLS", 28}, {"AF_CAN", 29}, {"AF_TIPC", 30}, {"AF_BLUETOOTH", 31}, {"AF_IUCV", 32},
		{"AF_RXRPC", 33}, {"AF_ISDN", 34}, {"AF_PHONET", 35}, {"AF_IEEE802154", 36}, {"AF_CAIF", 37},
		{"AF_ALG", 38}, {"AF_NFC", 39}, {"AF_VSOCK", 40}, {"AF_KCM", 41}, {"AF_QIPCRTR", 42},
		{"AF_SMC", 43}, {"AF_XDP", 44}, {"AF_MCTP", 45},
	}},
	{name: KindSockType, consts: []constant{
		{"SOCK_STREAM", 1}, {"SOCK_DGRAM", 2}, {"SOCK_RAW", 3}, {"SOCK_RDM", 4},
		{"SOCK_SEQPACKET", 5}, {"SOCK_DCCP", 6}, {"SOCK_PACKET", 10},
		{"SOCK_NONBLOCK", 0x800}, {"SOCK_CLOEXEC", 0x80000},
	}},
	{name: KindProtocol, consts: []constant{
		{"IPPROTO_IP", 0}, {"IPPROTO_ICMP", 1}, {"IPPROTO_IGMP", 2}, {"IPPROTO_IPIP", 4},
		{"IPPROTO_TCP", 6}, {"IPPROTO_EGP", 8}, {"IPPROTO_PUP", 12}, {"IPPROTO_UDP", 17},
		{"IPPROTO_IDP", 22}, {"IPPROTO_TP", 29}, {"IPPROTO_DCCP", 33}, {"IPPROTO_IPV6", 41},
		{"IPPROTO_RSVP", 46}, {"IPPROTO_GRE", 47}, {"IPPROTO_ESP", 50}, {"IPPROTO_AH", 51},
		{"IPPROTO_ICMPV6", 58}, {"IPPROTO_MTP", 92}, {"IPPROTO_BEETPH", 94}, {"IPPROTO_ENCAP", 98},
		{"IPPROTO_PIM", 103}, {"IPPROTO_COMP", 108}, {"IPPROTO_L2TP", 115}, {"IPPROTO_SCTP", 132},
		{"IPPROTO_UDPLITE", 136}, {"IPPROTO_MPLS", 137}, {"IPPROTO_ETHERNET", 143},
		{"IPPROTO_RAW", 255}, {"IPPROTO_MPTCP", 262},
	}},
	{name: KindClone, flags: true, consts: []constant{
		{"CLONE_NEWTIME", 0x80}, {"CLONE_VM", 0x100}, {"CLONE_FS", 0x200}, {"CLONE_FILES", 0x400},
		{"CLONE_SIGHAND", 0x800}, {"CLONE_PIDFD", 0x1000}, {"CLONE_PTRACE", 0x2000},
		{"CLONE_VFORK", 0x4000}, {"CLONE_PARENT", 0x8000}, {"CLONE_THREAD", 0x10000},
		{"CLONE_NEWNS", 0x20000}, {"CLONE_SYSVSEM", 0x40000}, {"CLONE_SETTLS", 0x80000},
		{"CLONE_PARENT_SETTID", 0x100000}, {"CLONE_CHILD_CLEARTID", 0x200000},
		{"CLONE_DETACHED", 0x400000}, {"CLONE_UNTRACED", 0x800000},
		{"CLONE_CHILD_SETTID", 0x1000000}, {"CLONE_NEWCGROUP", 0x2000000},
		{"CLONE_NEWUTS", 0x4000000}, {"CLONE_NEWIPC", 0x8000000}, {"CLONE_NEWUSER", 0x10000000},
		{"CLONE_NEWPID", 0x20000000}, {"CLONE_NEWNET", 0x40000000}, {"CLONE_IO", 0x80000000},
		{"CLONE_CLEAR_SIGHAND", 0x100000000}, {"CLONE_INTO_CGROUP", 0x200000000},
	}},
	{name: KindPrctl, consts: []constant{
		{"PR_SET_PDEATHSIG", 1}, {"PR_GET_PDEATHSIG", 2}, {"PR_GET_DUMPABLE", 3},
		{"PR_SET_DUMPABLE", 4}, {"PR_GET_UNALIGN", 5}, {"PR_SET_UNALIGN", 6},
		{"PR_GET_KEEPCAPS", 7}, {"PR_SET_KEEPCAPS", 8}, {"PR_GET_FPEMU", 9}, {"PR_SET_FPEMU", 10},
		{"PR_GET_FPEXC", 11}, {"PR_SET_FPEXC", 12}, {"PR_GET_TIMING", 13}, {"PR_SET_TIMING", 14},
		{"PR_SET_NAME", 15}, {"PR_GET_NAME", 16}, {"PR_GET_ENDIAN", 19}, {"PR_SET_ENDIAN", 20},
		{"PR_GET_SECCOMP", 21}, {"PR_SET_SECCOMP", 22}, {"PR_CAPBSET_READ", 23},
		{"PR_CAPBSET_DROP", 24}, {"PR_GET_TSC", 25}, {"PR_SET_TSC", 26},
		{"PR_GET_SECUREBITS", 27}, {"PR_SET_SECUREBITS", 28}, {"PR_SET_TIMERSLACK", 29},
		{"PR_GET_TIMERSLACK", 30}, {"PR_TASK_PERF_EVENTS_DISABLE", 31},
		{"PR_TASK_PERF_EVENTS_ENABLE", 32}, {"PR_MCE_KILL", 33}, {"PR_MCE_KILL_GET", 34},
		{"PR_SET_MM", 35}, {"PR_SET_CHILD_SUBREAPER", 36}, {"PR_GET_CHILD_SUBREAPER", 37},
		{"PR_SET_NO_NEW_PRIVS", 38}, {"PR_GET_NO_NEW_PRIVS", 39}, {"PR_GET_TID_ADDRESS", 40},
		{"PR_SET_THP_DISABLE", 41}, {"PR_GET_THP_DISABLE", 42}, {"PR_CAP_AMBIENT", 47},
		{"PR_SVE_SET_VL", 50}, {"PR_SVE_GET_VL", 51}, {"PR_GET_SPECULATION_CTRL", 52},
		{"PR_SET_SPECULATION_CTRL", 53}, {"PR_PAC_RESET_KEYS", 54},
		{"PR_SET_TAGGED_ADDR_CTRL", 55}, {"PR_GET_TAGGED_ADDR_CTRL", 56},
		{"PR_SET_IO_FLUSHER", 57}, {"PR_GET_IO_FLUSHER", 58},
		{"PR_SET_SYSCALL_USER_DISPATCH", 59}, {"PR_SCHED_CORE", 62}, {"PR_SET_MDWE", 65},
		{"PR_GET_MDWE", 66}, {"PR_SET_VMA", 0x53564d41}, {"PR_GET_AUXV", 0x41555856},
		{"PR_SET_PTRACER", 0x59616d61},
	}},
	{name: KindPersonality, flags: true, consts: []constant{
		// Personalities live in the low byte (PER_MASK); the rest are flag bits.
		{"PER_LINUX", 0}, {"PER_SVR4", 0x1}, {"PER_SVR3", 0x2}, {"PER_OSR5", 0x3},
		{"PER_WYSEV386", 0x4}, {"PER_ISCR4", 0x5}, {"PER_BSD", 0x6}, {"PER_XENIX", 0x7},
		{"PER_LINUX32", 0x8}, {"PER_IRIX32", 0x9}, {"PER_IRIXN32", 0xa}, {"PER_IRIX64", 0xb},
		{"PER_RISCOS", 0xc}, {"PER_SOLARIS", 0xd}, {"PER_UW7", 0xe}, {"PER_OSF4", 0xf},
		{"PER_HPUX", 0x10},
		{"UNAME26", 0x20000}, {"ADDR_NO_RANDOMIZE", 0x40000}, {"FDPIC_FUNCPTRS", 0x80000},
		{"MMAP_PAGE_ZERO", 0x100000}, {"ADDR_COMPAT_LAYOUT", 0x200000},
		{"READ_IMPLIES_EXEC", 0x400000}, {"ADDR_LIMIT_32BIT", 0x800000},
		{"SHORT_INODE", 0x1000000}, {"WHOLE_SECONDS", 0x2000000},
		{"STICKY_TIMEOUTS", 0x4000000}, {"ADDR_LIMIT_3GB", 0x8000000},
	}},
	{name: KindIoctl, consts: []constant{
		{"TCGETS", 0x5401}, {"TCSETS", 0x5402}, {"TCSETSW", 0x5403}, {"TCSETSF", 0x5404},
		{"TCGETA", 0x5405}, {"TCSETA", 0x5406}, {"TCSETAW", 0x5407}, {"TCSETAF", 0x5408},
		{"TCSBRK", 0x5409}, {"TCXONC", 0x540A}, {"TCFLSH", 0x540B}, {"TIOCEXCL", 0x540C},
		{"TIOCNXCL", 0x540D}, {"TIOCSCTTY", 0x540E}, {"TIOCGPGRP", 0x540F},
		{"TIOCSPGRP", 0x5410}, {"TIOCOUTQ", 0x5411}, {"TIOCSTI", 0x5412},
		{"TIOCGWINSZ", 0x5413}, {"TIOCSWINSZ", 0x5414}, {"TIOCMGET", 0x5415},
		{"FIONREAD", 0x541B}, {"TIOCLINUX", 0x541C}, {"TIOCCONS", 0x541D},
		{"FIONBIO", 0x5421}, {"TIOCNOTTY", 0x5422}, {"TIOCGSID", 0x5429},
		{"TCGETS2", 0x802C542A}, {"TCSETS2", 0x402C542B}, {"TIOCGPTN", 0x80045430},
		{"TIOCSPTLCK", 0x40045431}, {"TIOCGPTPEER", 0x5441}, {"FIONCLEX", 0x5450},
		{"FIOCLEX", 0x5451}, {"FIOASYNC", 0x5452}, {"FIOQSIZE", 0x5460},
		{"FICLONE", 0x40049409}, {"FS_IOC_GETFLAGS", 0x80086601},
		{"FS_IOC_SETFLAGS", 0x40086602},
	}},
	{name: KindProt, flags: true, consts: []constant{
		{"PROT_NONE", 0}, {"PROT_READ", 0x1}, {"PROT_WRITE", 0x2}, {"PROT_EXEC", 0x4},
		{"PROT_SEM", 0x8}, {"PROT_GROWSDOWN", 0x01000000}, {"PROT_GROWSUP", 0x02000000},
	}},
	{name: KindMmap, flags: true, consts: []constant{
		{"MAP_SHARED", 0x1}, {"MAP_PRIVATE", 0x2}, {"MAP_SHARED_VALIDATE", 0x3},
		{"MAP_FIXED", 0x10}, {"MAP_ANONYMOUS", 0x20}, {"MAP_GROWSDOWN", 0x100},
		{"MAP_DENYWRITE", 0x800}, {"MAP_EXECUTABLE", 0x1000}, {"MAP_LOCKED", 0x2000},
		{"MAP_NORESERVE", 0x4000}, {"MAP_POPULATE", 0x8000}, {"MAP_NONBLOCK", 0x10000},
		{"MAP_STACK", 0x20000}, {"MAP_HUGETLB", 0x40000}, {"MAP_SYNC", 0x80000},
		{"MAP_FIXED_NOREPLACE", 0x100000},
	}},
	{name: KindSignal, consts: []constant{
		{"SIGHUP", 1}, {"SIGINT", 2}, {"SIGQUIT", 3}, {"SIGILL", 4}, {"SIGTRAP", 5},
		{"SIGABRT", 6}, {"SIGBUS", 7}, {"SIGFPE", 8}, {"SIGKILL", 9}, {"SIGUSR1", 10},
		{"SIGSEGV", 11}, {"SIGUSR2", 12}, {"SIGPIPE", 13}, {"SIGALRM", 14}, {"SIGTERM", 15},
		{"SIGSTKFLT", 16}, {"SIGCHLD", 17}, {"SIGCONT", 18}, {"SIGSTOP", 19}, {"SIGTSTP", 20},
		{"SIGTTIN", 21}, {"SIGTTOU", 22}, {"SIGURG", 23}, {"SIGXCPU", 24}, {"SIGXFSZ", 25},
		{"SIGVTALRM", 26}, {"SIGPROF", 27}, {"SIGWINCH", 28}, {"SIGIO", 29}, {"SIGPWR", 30},
		{"SIGSYS", 31},
	}},
	{name: KindPtrace, consts: []constant{
		{"PTRACE_TRACEME", 0}, {"PTRACE_PEEKTEXT", 1}, {"PTRACE_PEEKDATA", 2}, {"PTRACE_PEEKUSR", 3},
		{"PTRACE_POKETEXT", 4}, {"PTRACE_POKEDATA", 5}, {"PTRACE_POKEUSR", 6}, {"PTRACE_CONT", 7},
		{"PTRACE_KILL", 8}, {"PTRACE_SINGLESTEP", 9}, {"PTRACE_GETREGS", 12}, {"PTRACE_SETREGS", 13},
		{"PTRACE_ATTACH", 16}, {"PTRACE_DETACH", 17},
		{"PTRACE_SYSCALL", 24}, {"PTRACE_SETOPTIONS", 0x4200}, {"PTRACE_GETEVENTMSG", 0x4201},
		{"PTRACE_GETSIGINFO", 0x4202}, {"PTRACE_SETSIGINFO", 0x4203}, {"PTRACE_GETREGSET", 0x4204},
		{"PTRACE_SETREGSET", 0x4205}, {"PTRACE_SEIZE", 0x4206}, {"PTRACE_INTERRUPT", 0x4207},
		{"PTRACE_LISTEN", 0x4208},
	}},
	{name: KindErrno, consts: []constant{
		{"EPERM", 1}, {"ENOENT", 2}, {"ESRCH", 3}, {"EINTR", 4}, {"EIO", 5}, {"ENXIO", 6},
		{"E2BIG", 7}, {"ENOEXEC", 8}, {"EBADF", 9}, {"ECHILD", 10}, {"EAGAIN", 11},
		{"ENOMEM", 12}, {"EACCES", 13}, {"EFAULT", 14}, {"EBUSY", 16}, {"EEXIST", 17},
		{"EXDEV", 18}, {"ENODEV", 19}, {"ENOTDIR", 20}, {"EISDIR", 21}, {"EINVAL", 22},
		{"ENFILE", 23}, {"EMFILE", 24}, {"ENOTTY", 25}, {"ETXTBSY", 26}, {"EFBIG", 27},
		{"ENOSPC", 28}, {"ESPIPE", 29}, {"EROFS", 30}, {"EMLINK", 31}, {"EPIPE", 32},
		{"ENOSYS", 38}, {"ENOTSOCK", 88}, {"EPROTOTYPE", 91}, {"ENOPROTOOPT", 92},
		{"EPROTONOSUPPORT", 93}, {"ESOCKTNOSUPPORT", 94}, {"EOPNOTSUPP", 95}, {"ENOTSUP", 95},
		{"EPFNOSUPPORT", 96}, {"EAFNOSUPPORT", 97}, {"EADDRINUSE", 98},
		{"EADDRNOTAVAIL", 99}, {"ENETDOWN", 100}, {"ENETUNREACH", 101},
		{"ECONNREFUSED", 111}, {"EHOSTUNREACH", 113},
	}},
}

// symbolIndex maps constant names to their values and kinds.
type symbolIndex struct {
	value map[string]uint64
	kind  map[string]string
}

// symbols is built on first use, not at start: every sysprof process (the enforce init stage
// too) would pay for it, and most never read a constant.
var symbols = sync.OnceValue(func() symbolIndex {
	x := symbolIndex{value: map[string]uint64{}, kind: map[string]string{}}
	for _, k := range constKinds {
		for _, c := range k.consts {
			if _, dup := x.value[c.name]; dup {
				panic("BUG: policy: constant " + c.name + " defined twice")
			}
			x.value[c.name] = c.value
			x.kind[c.name] = k.name
		}
	}
	return x
})

// kindByName returns the table of a kind, nil when there is none.
func kindByName(name string) *constKind {
	for i := range constKinds {
		if constKinds[i].name == name {
			return &constKinds[i]
		}
	}
	return nil
}

// Kinds lists the kinds of symbolic constants Symbol understands.
func Kinds() []string {
	out := make([]string, len(constKinds))
	for i, k := range constKinds {
		out[i] = k.name
	}
	return out
}

// SymbolKind returns the kind a symbolic constant belongs to ("family" for AF_INET), or "" when
// the name is unknown.
func SymbolKind(name string) string { return symbols().kind[name] }

// ParseValue turns an argument value as written in a profile into a number. It accepts a
// symbolic constant (AF_INET, CLONE_NEWUSER, TIOCSTI), decimal (16), hexadecimal (0x5412),
// octal (0o755), a negative decimal (-1, read as the 64-bit two's complement the kernel sees),
// and an OR of those (SOCK_STREAM|SOCK_CLOEXEC).
func ParseValue(s string) (uint64, error) {
	if s == "" {
		return 0, fmt.Errorf("empty value")
	}
	if strings.Contains(s, "|") {
		var v uint64
		for part := range strings.SplitSeq(s, "|") {
			p, err := ParseValue(strings.TrimSpace(part))
			if err != nil {
				return 0, err
			}
			v |= p
		}
		return v, nil
	}
	if v, ok := symbols().value[s]; ok {
		return v, nil
	}
	if c := s[0]; c == '-' || c >= '0' && c <= '9' {
		if c == '-' {
			n, err := strconv.ParseInt(s, 0, 64)
			if err != nil {
				return 0, fmt.Errorf("%q is not a number", s)
			}
			return uint64(n), nil
		}
		n, err := strconv.ParseUint(s, 0, 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not a number", s)
		}
		return n, nil
	}
	return 0, fmt.Errorf("%q is not a known constant (see policy.Kinds) or a number", s)
}

// Symbol gives the name of v in kind: "AF_INET" for (family, 2). Flag kinds (clone, prot,
// mmap, personality, and the flag bits of socket types) are decomposed:
// "CLONE_VM|CLONE_FS|0x11", "SOCK_STREAM|SOCK_CLOEXEC". A value with no name, or an
// unknown kind, comes back as hex (0x2a).
func Symbol(kind string, v uint64) string {
	k := kindByName(kind)
	if k == nil {
		return hexValue(v)
	}
	for _, c := range k.consts {
		if c.value == v {
			return c.name
		}
	}
	if kind == KindSockType && v&^0xf != 0 {
		// A type in the low bits, SOCK_NONBLOCK and SOCK_CLOEXEC above.
		names := []string{Symbol(KindSockType, v&0xf)}
		rest := v &^ 0xf
		for _, f := range []constant{{"SOCK_NONBLOCK", 0x800}, {"SOCK_CLOEXEC", 0x80000}} {
			if rest&f.value != 0 {
				names = append(names, f.name)
				rest &^= f.value
			}
		}
		if rest != 0 {
			names = append(names, hexValue(rest))
		}
		return strings.Join(names, "|")
	}
	if !k.flags {
		return hexValue(v)
	}
	var names []string
	rest := v
	if kind == KindPersonality {
		// The low byte is one personality, not bits.
		for _, c := range k.consts {
			if low := v & 0xff; low != 0 && c.value == low {
				names = append(names, c.name)
				rest &^= 0xff
				break
			}
		}
	}
	for _, c := range k.consts {
		if c.value == 0 || c.value&(c.value-1) != 0 { // single bits only
			continue
		}
		if rest&c.value != 0 {
			names = append(names, c.name)
			rest &^= c.value
		}
	}
	if rest != 0 || len(names) == 0 {
		names = append(names, hexValue(rest))
	}
	return strings.Join(names, "|")
}

func hexValue(v uint64) string { return "0x" + strconv.FormatUint(v, 16) }

// ArgKind says which kind of constant argument arg of syscall takes ("family" for socket's
// argument 0), or "" when sysprof has no table for it.
func ArgKind(syscall string, arg int) string {
	switch syscall {
	case "socket", "socketpair":
		return [...]string{KindFamily, KindSockType, KindProtocol, "", "", ""}[clampArg(arg)]
	case "clone", "unshare":
		// clone's flags are argument 0 on every supported architecture.
		if arg == 0 {
			return KindClone
		}
	case "setns":
		if arg == 1 {
			return KindClone
		}
	case "prctl":
		if arg == 0 {
			return KindPrctl
		}
	case "personality":
		if arg == 0 {
			return KindPersonality
		}
	case "ioctl":
		if arg == 1 {
			return KindIoctl
		}
	case "mmap", "mmap2":
		switch arg {
		case 2:
			return KindProt
		case 3:
			return KindMmap
		}
	case "mprotect", "pkey_mprotect":
		if arg == 2 {
			return KindProt
		}
	case "kill", "tkill":
		if arg == 1 {
			return KindSignal
		}
	case "tgkill":
		if arg == 2 {
			return KindSignal
		}
	case "ptrace":
		if arg == 0 {
			return KindPtrace
		}
	}
	return ""
}

func clampArg(arg int) int {
	if arg < 0 || arg > 5 {
		return 5
	}
	return arg
}
