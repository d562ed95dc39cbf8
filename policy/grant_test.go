package policy

import (
	"reflect"
	"strings"
	"testing"
)

func TestGrantRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		g    Grant
		text string
	}{
		{Grant{Section: SectionSyscalls, Item: "ptrace"}, "syscalls.allow: + ptrace"},
		{Grant{Section: SectionArchitectures, Item: "i386"}, "syscalls.architectures: + i386"},
		{Grant{Section: SectionArgs, Syscall: "socket", Arg: 0, Item: "AF_NETLINK"}, "syscalls.args: socket arg 0: + AF_NETLINK"},
		{Grant{Section: SectionArgs, Syscall: "clone", Arg: 0, Item: "CLONE_NEWNS|CLONE_NEWUSER"}, "syscalls.args: clone arg 0: + CLONE_NEWNS|CLONE_NEWUSER"},
		{Grant{Section: SectionRead, Item: "$HOME/.config/x"}, "filesystem.read: + $HOME/.config/x"},
		{Grant{Section: SectionWrite, Item: "$HOME/.ssh/known_hosts", Unhide: []string{"$HOME/.ssh"}},
			"filesystem.write: + $HOME/.ssh/known_hosts, filesystem.hidden: - $HOME/.ssh"},
		{Grant{Section: SectionExec, Item: "/usr/bin/curl"}, "filesystem.exec: + /usr/bin/curl"},
		{Grant{Section: SectionList, Item: "/"}, "filesystem.list: + /"},
		{Grant{Section: SectionHidden, Item: "$HOME/.aws"}, "filesystem.hidden: + $HOME/.aws"},
		{Grant{Section: SectionConnect, Item: "api.example.test:443", Proto: "tcp"}, "network.connect: + api.example.test:443 tcp"},
		{Grant{Section: SectionSend, Item: "[::1]:53", Proto: "udp"}, "network.send: + [::1]:53 udp"},
		{Grant{Section: SectionConnect, Item: "unix:/run/nscd/socket"}, "network.connect: + unix:/run/nscd/socket"},
		{Grant{Section: SectionBind, Item: "127.0.0.1:0", Proto: "tcp"}, "network.bind: + 127.0.0.1:0 tcp"},
	} {
		if got := tc.g.String(); got != tc.text {
			t.Errorf("%+v prints %q, want %q", tc.g, got, tc.text)
		}
		back, err := ParseGrant(tc.text)
		if err != nil || !reflect.DeepEqual(back, tc.g) {
			t.Errorf("ParseGrant(%q) = %+v, %v; want %+v", tc.text, back, err, tc.g)
		}
	}
	if s := (Grant{}).String(); s != "(no change)" {
		t.Errorf("empty grant prints %q", s)
	}
}

func TestParseGrantRefuses(t *testing.T) {
	for _, s := range []string{
		"",
		"(no change)",
		"syscalls.allow: ptrace",
		"syscalls.allow: + ",
		"syscalls.allow: + two words",
		"syscalls.args: socket arg 7: + AF_INET",
		"syscalls.args: socket arg x: + AF_INET",
		"syscalls.args: socket arg 0 (domain): AF_INET", // a diff item, not an addition
		"syscalls.args: socket: + AF_INET",
		"network.connect: + ENDPOINT proto: mptcp (or syscalls.args: socket arg 2: + IPPROTO_MPTCP)",
		"network.connect: + host:443 ",
		"metadata.incomplete: + true",
		"none: $HOME/.ssh is a credential store (learn --allow-secret names one)",
	} {
		if g, err := ParseGrant(s); err == nil {
			t.Errorf("ParseGrant(%q) = %+v, want an error", s, g)
		}
	}
}

// TestGrantRisk checks that GrantRisk is the risk of the item's kind, rated against base.
func TestGrantRisk(t *testing.T) {
	base := &Profile{
		Filesystem: Filesystem{Write: []PathRule{{Path: "$WORKDIR/target"}}, Hidden: []PathRule{{Path: "$HOME/.ssh"}}},
		Network:    Network{Connect: []Endpoint{{Endpoint: "example.test:443", Proto: "tcp"}}},
	}
	same := func(r Risk, why string) [2]any { return [2]any{r, why} }
	for _, tc := range []struct {
		g    Grant
		want [2]any
	}{
		{Grant{Section: SectionSyscalls, Item: "ptrace"}, same(SyscallRisk("ptrace"))},
		{Grant{Section: SectionSyscalls, Item: "utimensat"}, same(SyscallRisk("utimensat"))},
		{Grant{Section: SectionArchitectures, Item: "i386"}, same(ArchitectureRisk("i386"))},
		{Grant{Section: SectionArgs, Syscall: "ioctl", Arg: 1, Item: "TIOCSTI"}, same(ArgValueRisk("ioctl", 1, 0x5412))},
		{Grant{Section: SectionArgs, Syscall: "clone", Arg: 0, Item: "CLONE_NEWUSER|SIGCHLD"}, same(ArgValueRisk("clone", 0, 0x10000011))},
		{Grant{Section: SectionArgs, Syscall: "socket", Arg: 0, Item: "AF_NETLINK"}, same(ArgValueRisk("socket", 0, 16))},
		{Grant{Section: SectionRead, Item: "$HOME/.ssh/id_ed25519"}, same(PathRisk("read", "$HOME/.ssh/id_ed25519", base))},
		{Grant{Section: SectionWrite, Item: "$WORKDIR/.git/hooks/pre-commit"}, same(PathRisk("write", "$WORKDIR/.git/hooks/pre-commit", base))},
		{Grant{Section: SectionExec, Item: "$WORKDIR/target/x"}, same(PathRisk("exec", "$WORKDIR/target/x", base))},
		{Grant{Section: SectionList, Item: "/"}, same(PathRisk("list", "/", base))},
		{Grant{Section: SectionConnect, Item: "other.test:443", Proto: "tcp"},
			same(EndpointRisk(SectionConnect, Endpoint{Endpoint: "other.test:443", Proto: "tcp"}, true))},
		{Grant{Section: SectionBind, Item: "127.0.0.1:0", Proto: "tcp"},
			same(EndpointRisk(SectionBind, Endpoint{Endpoint: "127.0.0.1:0", Proto: "tcp"}, true))},
		{Grant{Section: SectionHidden, Item: "$HOME/.aws"}, same(RiskNone, "")},
	} {
		r, why := GrantRisk(base, tc.g)
		if got := same(r, why); got != tc.want {
			t.Errorf("GrantRisk(%s) = %v, want %v", tc.g, got, tc.want)
		}
	}
	if r, why := GrantRisk(nil, Grant{Section: SectionArgs, Syscall: "socket", Arg: 0, Item: "AF_BOGUS"}); r != RiskHigh || !strings.Contains(why, "does not parse") {
		t.Errorf("an unparsable value is rated %s (%s), want high", r, why)
	}
	// The enforcer's suggestion for a refused argument value, rated as diff rates that value.
	for _, v := range []uint64{0x5412, 0x10000000, 0x100 | 17, 3} {
		g := ArgGrant("clone", 0, v)
		r, _ := GrantRisk(nil, g)
		if want, _ := ArgValueRisk("clone", 0, v); r != want {
			t.Errorf("ArgGrant(clone, 0, %#x) = %s rated %s, want %s", v, g, r, want)
		}
	}
}
