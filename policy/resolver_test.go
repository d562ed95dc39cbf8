package policy

import (
	"slices"
	"strings"
	"testing"
)

// A profile that reaches names gets what a resolver needs to ask the DNS stub, whatever source
// the learn resolved from (the hosts file: no UDP socket, no FIONREAD); values rules are
// widened by the stub's values only, flags and deny rules are left, and a profile without
// names gets nothing.
func TestCloseResolver(t *testing.T) {
	named := func(eps ...string) *Profile {
		p := &Profile{}
		for _, e := range eps {
			p.Network.Connect = append(p.Network.Connect, Endpoint{Endpoint: e, Proto: "tcp"})
		}
		p.Syscalls.Allow = []Syscall{{Name: "socket"}, {Name: "connect"}, {Name: "sendto"}, {Name: "ioctl"}}
		p.Syscalls.Args = []ArgRule{
			{Syscall: "socket", Arg: 0, Values: []string{"AF_INET6"}},
			{Syscall: "socket", Arg: 1, Mask: "0xf", Values: []string{"SOCK_STREAM"}},
			{Syscall: "socket", Arg: 2, Values: []string{"6"}},
			{Syscall: "ioctl", Arg: 1, Values: []string{"TCGETS"}},
			{Syscall: "clone", Arg: 0, Flags: []string{"CLONE_VM"}},
		}
		return p
	}
	allowed := func(p *Profile) func(string) bool {
		return func(n string) bool {
			return slices.ContainsFunc(p.Syscalls.Allow, func(s Syscall) bool { return s.Name == n })
		}
	}
	p := named("reg.hosts.test:8080", "10.0.0.1:22")
	add, rules := CloseResolver(p, p.Syscalls.Args, allowed(p))
	if want := []string{"recvfrom", "poll", "ppoll", "getsockname", "setsockopt"}; !slices.Equal(add, want) {
		t.Errorf("added %q, want %q", add, want)
	}
	var got []string
	for _, r := range rules {
		got = append(got, r.Syscall+" "+strings.Join(append(r.Values, r.Flags...), ","))
	}
	want := []string{"socket AF_INET6,AF_INET", "socket SOCK_STREAM,SOCK_DGRAM", "socket 6,0", "ioctl TCGETS,FIONREAD", "clone CLONE_VM", "setsockopt 0,41", "setsockopt 11,25"}
	if !slices.Equal(got, want) {
		t.Errorf("rules %q, want %q", got, want)
	}
	if p.Syscalls.Args[0].Values[0] != "AF_INET6" || len(p.Syscalls.Args[0].Values) != 1 {
		t.Errorf("the profile was changed: %v", p.Syscalls.Args[0])
	}

	// ioctl newly allowed takes the stub's request only.
	p = named("reg.hosts.test:8080")
	p.Syscalls.Allow = p.Syscalls.Allow[:3]
	p.Syscalls.Args = p.Syscalls.Args[:3]
	_, rules = CloseResolver(p, p.Syscalls.Args, allowed(p))
	if i := slices.IndexFunc(rules, func(r ArgRule) bool { return r.Syscall == "ioctl" }); i < 0 || !slices.Equal(rules[i].Values, []string{"FIONREAD"}) {
		t.Errorf("ioctl newly allowed: rules %+v", rules)
	}

	for _, p := range []*Profile{named("10.0.0.1:22", "localhost:8080"), named()} {
		if add, rules := CloseResolver(p, p.Syscalls.Args, allowed(p)); add != nil || !slices.EqualFunc(rules, p.Syscalls.Args, func(a, b ArgRule) bool { return slices.Equal(a.Values, b.Values) }) {
			t.Errorf("no names (%v): added %q, rules %+v", p.Network.Connect, add, rules)
		}
	}
	p = named()
	p.Network.Resolve = []Endpoint{{Endpoint: "probe.test"}}
	if !UsesResolver(p) {
		t.Error("a resolve-only name goes through the stub")
	}
}
