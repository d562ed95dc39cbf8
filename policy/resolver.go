package policy

import (
	"slices"
	"strings"
)

// ResolverCalls are the calls a libc or language resolver makes to ask sysprof's DNS stub
// (UDP, IPv4, one query per datagram: the stub's resolv.conf says single-request): a tool that
// learned its names from /etc/hosts (or asked a resolver over IPv6 only, or through a socket
// type the learn never saw) made none of them, yet under enforce every name the profile
// allows resolves through the stub. glibc reads the answer's size with ioctl FIONREAD and
// gives up on a server whose socket refuses IP_RECVERR (setsockopt); Go and c-ares check the
// socket's address with getsockname.
var ResolverCalls = []string{"socket", "connect", "sendto", "recvfrom", "poll", "ppoll", "getsockname", "ioctl", "setsockopt"}

// resolverArgs are the argument values of ResolverCalls the stub's queries take, by syscall and
// argument: a values rule of p on them is widened to hold these.
var resolverArgs = []ArgRule{
	{Syscall: "socket", Arg: 0, Name: "domain", Values: []string{"AF_INET"}},
	{Syscall: "socket", Arg: 1, Name: "type", Mask: "0xf", Values: []string{"SOCK_DGRAM"}},
	{Syscall: "socket", Arg: 2, Name: "protocol", Values: []string{"0"}},
	{Syscall: "ioctl", Arg: 1, Name: "request", Mask: "0xffffffff", Values: []string{"FIONREAD"}},
	// glibc's __res_enable_icmp: IP_RECVERR (SOL_IP 0, 11) or IPV6_RECVERR (SOL_IPV6 41, 25).
	{Syscall: "setsockopt", Arg: 1, Name: "level", Values: []string{"0", "41"}},
	{Syscall: "setsockopt", Arg: 2, Name: "optname", Values: []string{"11", "25"}},
}

// UsesResolver reports whether p's run resolves names through the stub: it connects or sends
// to a name (not an address, a range or localhost, which the sandbox's hosts file answers) or
// keeps resolve-only names.
func UsesResolver(p *Profile) bool {
	if len(p.Network.Resolve) > 0 {
		return true
	}
	for _, set := range [][]Endpoint{p.Network.Connect, p.Network.Send} {
		for _, e := range set {
			if strings.HasPrefix(e.Endpoint, "unix:") {
				continue
			}
			if a, err := ParseEndpoint(e.Endpoint); err == nil && a.Host != "" && a.Host != "localhost" {
				return true
			}
		}
	}
	return false
}

// CloseResolver returns the ResolverCalls p lacks and p's argument rules with what the stub's
// queries need added to rules (p's, as the caller closed them so far; a values rule only: flags and deny lists already decide by bits), for a
// profile that UsesResolver; nil and rules unchanged otherwise. Whatever source the host
// resolved a name from when p was learned, under enforce the name resolves through the stub,
// and that must not be a denial. enforce (the seccomp compiler) applies it to every profile,
// --exact included: the stub is enforce's doing, not the tool's behaviour.
func CloseResolver(p *Profile, rules []ArgRule, allowed func(string) bool) (add []string, out []ArgRule) {
	if !UsesResolver(p) {
		return nil, rules
	}
	for _, n := range ResolverCalls {
		if !allowed(n) {
			add = append(add, n)
		}
	}
	return add, widenArgRules(rules, add, resolverArgs)
}

// widenArgRules returns rules with the values of extra added: a call of add (newly allowed)
// without a rule of its own takes only extra's values, not any value; a values rule on the same
// argument (not flags or a deny list, which decide by bits) is widened to hold them.
func widenArgRules(rules []ArgRule, add []string, extra []ArgRule) []ArgRule {
	had := rules
	rules = slices.Clone(rules)
	for _, ra := range extra {
		if slices.Contains(add, ra.Syscall) && !slices.ContainsFunc(had, func(r ArgRule) bool { return r.Syscall == ra.Syscall }) {
			rules = append(rules, ra)
			continue
		}
		for i, r := range rules {
			if r.Syscall != ra.Syscall || r.Arg != ra.Arg || len(r.Values) == 0 || len(r.Flags) > 0 || len(r.Deny) > 0 {
				continue
			}
			vals := slices.Clone(r.Values)
			for _, v := range ra.Values {
				if !slices.ContainsFunc(vals, func(have string) bool { return sameValue(have, v) }) {
					vals = append(vals, v)
				}
			}
			rules[i].Values = vals
		}
	}
	return rules
}
