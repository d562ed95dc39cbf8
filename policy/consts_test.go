package policy

import "testing"

func TestParseValue(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
		ok   bool
	}{
		{"AF_INET", 2, true},
		{"AF_LOCAL", 1, true},
		{"AF_VSOCK", 40, true},
		{"IPPROTO_MPTCP", 262, true},
		{"SOCK_STREAM|SOCK_CLOEXEC", 0x80001, true},
		{"SOCK_STREAM | SOCK_NONBLOCK", 0x801, true},
		{"CLONE_NEWUSER", 0x10000000, true},
		{"CLONE_INTO_CGROUP", 0x200000000, true},
		{"TIOCSTI", 0x5412, true},
		{"TIOCLINUX", 0x541C, true},
		{"PER_LINUX32", 8, true},
		{"ADDR_NO_RANDOMIZE", 0x40000, true},
		{"PR_SET_NO_NEW_PRIVS", 38, true},
		{"PROT_READ|PROT_EXEC", 5, true},
		{"ENOSYS", 38, true},
		{"16", 16, true},
		{"0x10", 16, true},
		{"0o17", 15, true},
		{"-1", ^uint64(0), true},
		{"0xffffffffffffffff", ^uint64(0), true},
		{"", 0, false},
		{"AF_BOGUS", 0, false},
		{"0xzz", 0, false},
		{"AF_INET|", 0, false},
		{"99999999999999999999999", 0, false},
	}
	for _, tt := range tests {
		got, err := ParseValue(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseValue(%q) = %#x, %v; want %#x, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestSymbol(t *testing.T) {
	tests := []struct {
		kind string
		v    uint64
		want string
	}{
		{KindFamily, 2, "AF_INET"},
		{KindFamily, 1, "AF_UNIX"}, // canonical name, not the AF_LOCAL alias
		{KindFamily, 999, "0x3e7"},
		{KindProtocol, 262, "IPPROTO_MPTCP"},
		{KindIoctl, 0x5412, "TIOCSTI"},
		{KindClone, 0x10000000 | 0x20000, "CLONE_NEWNS|CLONE_NEWUSER"},
		{KindClone, 0x100 | 0x11, "CLONE_VM|0x11"},
		{KindPersonality, 0, "PER_LINUX"},
		{KindPersonality, 8 | 0x40000, "PER_LINUX32|ADDR_NO_RANDOMIZE"},
		{KindProt, 3, "PROT_READ|PROT_WRITE"},
		{KindSockType, 0x80001, "SOCK_STREAM|SOCK_CLOEXEC"},
		{KindSockType, 0x80802, "SOCK_DGRAM|SOCK_NONBLOCK|SOCK_CLOEXEC"},
		{KindSockType, 0x100003, "SOCK_RAW|0x100000"},
		{KindProt, 0, "PROT_NONE"},
		{"nonsense", 5, "0x5"},
	}
	for _, tt := range tests {
		if got := Symbol(tt.kind, tt.v); got != tt.want {
			t.Errorf("Symbol(%s, %#x) = %q, want %q", tt.kind, tt.v, got, tt.want)
		}
	}
	// Every name reads back to its value.
	for _, k := range constKinds {
		for _, c := range k.consts {
			if v, err := ParseValue(c.name); err != nil || v != c.value {
				t.Errorf("ParseValue(%s) = %#x, %v", c.name, v, err)
			}
			if got := Symbol(k.name, c.value); got != c.name {
				if v, _ := ParseValue(got); v != c.value {
					t.Errorf("Symbol(%s, %#x) = %q does not read back", k.name, c.value, got)
				}
			}
		}
	}
}

func TestArgKind(t *testing.T) {
	for _, tt := range []struct {
		sc   string
		arg  int
		want string
	}{
		{"socket", 0, KindFamily}, {"socket", 1, KindSockType}, {"socket", 2, KindProtocol}, {"socket", 3, ""},
		{"clone", 0, KindClone}, {"unshare", 0, KindClone}, {"setns", 1, KindClone}, {"ioctl", 1, KindIoctl},
		{"prctl", 0, KindPrctl}, {"personality", 0, KindPersonality}, {"mmap", 2, KindProt}, {"read", 0, ""},
		{"socket", 9, ""},
	} {
		if got := ArgKind(tt.sc, tt.arg); got != tt.want {
			t.Errorf("ArgKind(%s, %d) = %q, want %q", tt.sc, tt.arg, got, tt.want)
		}
	}
}
