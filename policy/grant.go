package policy

import (
	"fmt"
	"strconv"
	"strings"
)

// Grant is one addition to a profile: the smallest change that allows a denied operation. A
// denial carries one (report.Denial.Change), refine applies it, and GrantRisk rates it. It
// prints itself as the denial's suggestion ("syscalls.allow: + ptrace", "syscalls.args: socket
// arg 0: + AF_NETLINK", "network.connect: + host:443 tcp"); ParseGrant reads that back.
type Grant struct {
	// Section is the profile section, one of the Section* names.
	Section string `json:"section"`
	// Item is what is added: a syscall name, an architecture, a path, an endpoint, or for
	// SectionArgs the argument value as a rule writes it (FormatArg).
	Item string `json:"item"`
	// Proto of an endpoint (tcp, udp, mptcp; empty for unix sockets).
	Proto string `json:"proto,omitempty"`
	// Syscall and Arg name the argument a SectionArgs grant lets Item through.
	Syscall string `json:"syscall,omitempty"`
	Arg     int    `json:"arg,omitempty"`
	// Unhide lists hidden rules the change removes: hidden paths win over any read, write or
	// exec rule, so allowing a hidden path means un-hiding it.
	Unhide []string `json:"unhide,omitempty"`
}

// ArgGrant is the grant that lets value v through syscall's argument arg, v written as a rule
// would write it.
func ArgGrant(syscall string, arg int, v uint64) Grant {
	return Grant{Section: SectionArgs, Syscall: syscall, Arg: arg, Item: FormatArg(syscall, arg, v)}
}

func (g Grant) String() string {
	var s string
	switch {
	case g.Section == "":
		return "(no change)"
	case IsLimitSection(g.Section):
		return fmt.Sprintf("%s: %s", g.Section, g.Item) // raised to Item
	case g.Section == SectionArgs:
		s = fmt.Sprintf("%s: %s arg %d: + %s", g.Section, g.Syscall, g.Arg, g.Item)
	case g.Proto != "":
		s = fmt.Sprintf("%s: + %s %s", g.Section, g.Item, g.Proto)
	default:
		s = fmt.Sprintf("%s: + %s", g.Section, g.Item)
	}
	for _, h := range g.Unhide {
		s += fmt.Sprintf(", %s: - %s", SectionHidden, h)
	}
	return s
}

// ParseGrant reads a grant as String writes it. It checks the form only (a known section, an
// argument index, a non-empty item), not that the item is valid in a profile.
func ParseGrant(s string) (Grant, error) {
	var g Grant
	head, rest, _ := strings.Cut(s, ", "+SectionHidden+": - ")
	if rest != "" {
		g.Unhide = strings.Split(rest, ", "+SectionHidden+": - ")
	}
	section, body, ok := strings.Cut(head, ": ")
	if !ok {
		return Grant{}, fmt.Errorf("%q is not a profile change (SECTION: + ITEM)", s)
	}
	g.Section = section
	switch section {
	case SectionArgs:
		target, item, ok := strings.Cut(body, ": + ")
		name, arg, ok2 := strings.Cut(target, " arg ")
		n, err := strconv.Atoi(arg)
		if !ok || !ok2 || err != nil || n < 0 || n > 5 || name == "" || strings.ContainsAny(name, " :") {
			return Grant{}, fmt.Errorf("%q is not an argument change (%s: SYSCALL arg N: + VALUE)", s, SectionArgs)
		}
		g.Syscall, g.Arg, g.Item = name, n, item
	case SectionSyscalls, SectionArchitectures, SectionRead, SectionWrite, SectionExec, SectionList, SectionHidden,
		SectionConnect, SectionSend, SectionBind, SectionResolve:
		item, ok := strings.CutPrefix(body, "+ ")
		if !ok {
			return Grant{}, fmt.Errorf("%q is not an addition (%s: + ITEM)", s, section)
		}
		g.Item = item
		if section == SectionConnect || section == SectionSend || section == SectionBind {
			if ep, proto, ok := strings.Cut(item, " "); ok {
				if proto == "" || strings.ContainsAny(proto, " \t\n") {
					return Grant{}, fmt.Errorf("%q: want ENDPOINT [PROTO] after +", s)
				}
				g.Item, g.Proto = ep, proto
			}
		}
	case SectionLimitPids, SectionLimitMemory, SectionLimitTmp, SectionLimitWrite, SectionLimitFiles:
		return limitGrant(section, body)
	default:
		return Grant{}, fmt.Errorf("%q: section %q takes no additions", s, section)
	}
	if g.Item == "" || strings.ContainsAny(g.Item, " \t\n") {
		return Grant{}, fmt.Errorf("%q: want one item after +", s)
	}
	return g, nil
}

// GrantRisk rates adding g to profile base: the one rating `sysprof diff` gives the change,
// the enforcer the denial that suggests it, and refine the proposal. It dispatches to the risk
// of the item's kind: SyscallRisk, ArchitectureRisk, ArgValueRisk, PathRisk, EndpointRisk.
// base is not modified; nil is the empty profile.
func GrantRisk(base *Profile, g Grant) (Risk, string) {
	if base == nil {
		base = &Profile{}
	}
	switch g.Section {
	case SectionSyscalls:
		return SyscallRisk(g.Item)
	case SectionArchitectures:
		return ArchitectureRisk(g.Item)
	case SectionArgs:
		v, err := ParseValue(g.Item)
		if err != nil {
			return RiskHigh, "argument value does not parse: " + err.Error()
		}
		return ArgValueRisk(g.Syscall, g.Arg, v)
	case SectionRead:
		return PathRisk("read", g.Item, base)
	case SectionWrite:
		return PathRisk("write", g.Item, base)
	case SectionExec:
		return PathRisk("exec", g.Item, base)
	case SectionList:
		return PathRisk("list", g.Item, base)
	case SectionLimitPids, SectionLimitMemory, SectionLimitTmp, SectionLimitWrite, SectionLimitFiles:
		return RiskLow, "the run may use more before the limit stops it"
	case SectionConnect, SectionSend, SectionBind:
		return EndpointRisk(g.Section, Endpoint{Endpoint: g.Item, Proto: g.Proto}, Networked(base.Network))
	case SectionResolve:
		return RiskLow, "a name the DNS stub answers with a local address: no query leaves, no connection to it is allowed"
	}
	return RiskNone, ""
}
