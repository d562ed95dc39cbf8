package policy

import (
	"slices"
	"strings"
	"testing"
)

func TestParseArgRule(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    ArgRule
		want ArgSpec
		err  string // substring of the error; "" for none
	}{
		{"values", ArgRule{Syscall: "socket", Arg: 0, Name: "domain", Values: []string{"AF_UNIX", "AF_INET", "10"}},
			ArgSpec{Syscall: "socket", Arg: 0, Name: "domain", Mask: ^uint64(0), Values: []uint64{1, 2, 10}}, ""},
		{"mask", ArgRule{Syscall: "socket", Arg: 1, Mask: "0xf", Values: []string{"SOCK_STREAM|SOCK_CLOEXEC"}, Errno: "EINVAL"},
			ArgSpec{Syscall: "socket", Arg: 1, Mask: 0xf, Values: []uint64{0x80001}, Errno: 22}, ""},
		{"flags", ArgRule{Syscall: "clone", Arg: 0, Flags: []string{"CLONE_VM", "CLONE_FS|SIGCHLD"}},
			ArgSpec{Syscall: "clone", Arg: 0, Mask: ^uint64(0), Flags: 0x100 | 0x200 | 17, HasFlags: true}, ""},
		{"flags zero", ArgRule{Syscall: "unshare", Arg: 0, Flags: []string{"0"}},
			ArgSpec{Syscall: "unshare", Arg: 0, Mask: ^uint64(0), HasFlags: true}, ""},
		{"deny", ArgRule{Syscall: "ioctl", Arg: 1, Mask: "0xffffffff", Deny: []string{"TIOCSTI", "TIOCLINUX"}},
			ArgSpec{Syscall: "ioctl", Arg: 1, Mask: 0xffffffff, Deny: []uint64{0x5412, 0x541c}}, ""},
		{"errno only", ArgRule{Syscall: "clone3", Arg: 0, Errno: "ENOSYS"},
			ArgSpec{Syscall: "clone3", Arg: 0, Mask: ^uint64(0), Errno: 38}, ""},
		{"errno number", ArgRule{Syscall: "clone3", Arg: 0, Errno: "38"},
			ArgSpec{Syscall: "clone3", Arg: 0, Mask: ^uint64(0), Errno: 38}, ""},
		{"empty", ArgRule{Syscall: "socket", Arg: 1}, ArgSpec{Syscall: "socket", Arg: 1, Mask: ^uint64(0)}, ""},
		{"bad arg", ArgRule{Syscall: "socket", Arg: 6}, ArgSpec{}, "syscalls.args: socket arg 6: argument index must be 0..5"},
		{"bad value", ArgRule{Syscall: "socket", Arg: 0, Values: []string{"AF_BOGUS"}}, ArgSpec{}, "syscalls.args: socket arg 0: values: "},
		{"bad flag", ArgRule{Syscall: "clone", Arg: 0, Flags: []string{"0xzz"}}, ArgSpec{}, "clone arg 0: flags: "},
		{"bad deny", ArgRule{Syscall: "ioctl", Arg: 1, Deny: []string{""}}, ArgSpec{}, "ioctl arg 1: deny: "},
		{"bad mask", ArgRule{Syscall: "socket", Arg: 1, Mask: "SOCK_BOGUS"}, ArgSpec{}, "socket arg 1: mask: "},
		{"bad errno", ArgRule{Syscall: "clone3", Arg: 0, Errno: "EWHAT"}, ArgSpec{}, "errno: unknown errno \"EWHAT\""},
		{"errno of another kind", ArgRule{Syscall: "clone3", Arg: 0, Errno: "AF_INET"}, ArgSpec{}, "AF_INET is a family constant"},
		{"errno zero", ArgRule{Syscall: "clone3", Arg: 0, Errno: "0"}, ArgSpec{}, "not an errno"},
		{"errno too big", ArgRule{Syscall: "clone3", Arg: 0, Errno: "4096"}, ArgSpec{}, "not an errno"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseArgRule(tc.r)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Syscall != tc.want.Syscall || got.Arg != tc.want.Arg || got.Name != tc.want.Name || got.Mask != tc.want.Mask ||
				!slices.Equal(got.Values, tc.want.Values) || (got.Values == nil) != (tc.want.Values == nil) ||
				got.Flags != tc.want.Flags || got.HasFlags != tc.want.HasFlags || !slices.Equal(got.Deny, tc.want.Deny) || got.Errno != tc.want.Errno {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
			// Printed back and read again, the rule is the same.
			again, err := ParseArgRule(got.Rule())
			if err != nil || again.String() != got.String() {
				t.Errorf("round trip: %v, %q, want %q", err, again.String(), got.String())
			}
		})
	}
}

func TestArgSpecAllows(t *testing.T) {
	spec := func(r ArgRule) ArgSpec {
		s, err := ParseArgRule(r)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	sockType := spec(ArgRule{Syscall: "socket", Arg: 1, Mask: "0xf", Values: []string{"SOCK_STREAM", "SOCK_DGRAM"}})
	cloneFlags := spec(ArgRule{Syscall: "clone", Arg: 0, Flags: []string{"CLONE_VM", "CLONE_THREAD", "SIGCHLD"}})
	ioctl := spec(ArgRule{Syscall: "ioctl", Arg: 1, Mask: "0xffffffff", Deny: []string{"TIOCSTI"}})
	clone3 := spec(ArgRule{Syscall: "clone3", Arg: 0, Errno: "ENOSYS"})
	empty := spec(ArgRule{Syscall: "socket", Arg: 2})
	for _, tc := range []struct {
		name string
		s    ArgSpec
		v    uint64
		want bool
	}{
		{"listed value", sockType, 1, true},
		{"listed value, bits outside the mask", sockType, 2 | 0x80000, true},
		{"unlisted value", sockType, 3, false},
		{"allowed flags", cloneFlags, 0x100 | 0x10000 | 17, true},
		{"no flags", cloneFlags, 0, true},
		{"flag outside", cloneFlags, 0x100 | 0x10000000, false},
		{"denied value", ioctl, 0x5412, false},
		{"denied value, high garbage", ioctl, 1<<32 | 0x5412, false},
		{"other value", ioctl, 0x5401, true},
		{"errno only", clone3, 0, false},
		{"restricts nothing", empty, 262, true},
	} {
		if got := tc.s.Allows(tc.v); got != tc.want {
			t.Errorf("%s: %s allows %#x = %v, want %v", tc.name, tc.s, tc.v, got, tc.want)
		}
	}
	if !clone3.ErrnoOnly() || clone3.Restricts() || empty.ErrnoOnly() || empty.Restricts() || !ioctl.Restricts() {
		t.Errorf("ErrnoOnly/Restricts: clone3 %v/%v, empty %v/%v, ioctl -/%v", clone3.ErrnoOnly(), clone3.Restricts(), empty.ErrnoOnly(), empty.Restricts(), ioctl.Restricts())
	}
}

func TestArgSpecString(t *testing.T) {
	for _, tc := range []struct {
		r    ArgRule
		want string
	}{
		{ArgRule{Syscall: "socket", Arg: 1, Name: "type", Mask: "0xf", Values: []string{"1", "SOCK_DGRAM"}, Errno: "EINVAL"},
			"socket arg 1 (type) & 0xf in {SOCK_STREAM, SOCK_DGRAM} else EINVAL"},
		{ArgRule{Syscall: "ioctl", Arg: 1, Deny: []string{"0x5412", "TIOCLINUX"}}, "ioctl arg 1 never {TIOCSTI, TIOCLINUX}"},
		{ArgRule{Syscall: "clone", Arg: 0, Flags: []string{"CLONE_VM", "CLONE_FS", "SIGCHLD"}}, "clone arg 0 may set only CLONE_VM|CLONE_FS|SIGCHLD"},
		{ArgRule{Syscall: "clone3", Arg: 0, Name: "clone_args", Errno: "ENOSYS"}, "clone3 arg 0 (clone_args) always ENOSYS"},
		{ArgRule{Syscall: "socket", Arg: 1}, "socket arg 1 any value"},
		{ArgRule{Syscall: "socket", Arg: 0, Values: []string{"AF_LOCAL"}}, "socket arg 0 in {AF_UNIX}"},
	} {
		s, err := ParseArgRule(tc.r)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.r, got, tc.want)
		}
	}
}

func TestFormatArg(t *testing.T) {
	for _, tc := range []struct {
		syscall string
		arg     int
		v       uint64
		want    string
	}{
		{"socket", 0, 1, "AF_UNIX"},
		{"socket", 0, 16, "AF_NETLINK"},
		{"socket", 0, 999, "0x3e7"},
		{"socketpair", 0, 1, "AF_UNIX"},
		{"socket", 1, 3, "SOCK_RAW"},
		{"socket", 1, 1 | 0x80000 | 0x800, "SOCK_STREAM|SOCK_NONBLOCK|SOCK_CLOEXEC"},
		{"socket", 1, 0x80000, "SOCK_CLOEXEC"},
		{"socket", 2, 0, "0"},
		{"socket", 2, 262, "IPPROTO_MPTCP"},
		{"clone", 0, 0x20000 | 0x10000000, "CLONE_NEWNS|CLONE_NEWUSER"},
		{"clone", 0, 0x100 | 17, "CLONE_VM|SIGCHLD"},
		{"clone", 0, 17, "SIGCHLD"},
		{"clone", 0, 0, "0"},
		{"unshare", 0, 0x80, "CLONE_NEWTIME"},
		{"unshare", 0, 0, "0"},
		{"setns", 1, 0x40000000, "CLONE_NEWNET"},
		{"ioctl", 1, 0x5412, "TIOCSTI"},
		{"ioctl", 1, 0x1234, "0x1234"},
		{"ptrace", 0, 16, "PTRACE_ATTACH"},
		{"ptrace", 0, 0x4206, "PTRACE_SEIZE"},
		{"prctl", 0, 38, "PR_SET_NO_NEW_PRIVS"},
		{"personality", 0, 0, "PER_LINUX"},
		{"mmap", 2, 0, "PROT_NONE"},
		{"mmap", 2, 5, "PROT_READ|PROT_EXEC"},
		{"kill", 1, 9, "SIGKILL"},
		{"openat", 2, 0x80000, "0x80000"},
	} {
		got := FormatArg(tc.syscall, tc.arg, tc.v)
		if got != tc.want {
			t.Errorf("FormatArg(%s, %d, %#x) = %q, want %q", tc.syscall, tc.arg, tc.v, got, tc.want)
		}
		if back, err := ParseValue(got); err != nil || back != tc.v {
			t.Errorf("ParseValue(%q) = %#x, %v; want %#x", got, back, err, tc.v)
		}
		// What FormatArg writes is a valid value of that argument in a profile.
		if msg := valueProblem(got, ArgKind(tc.syscall, tc.arg), tc.syscall, tc.arg); msg != "" {
			t.Errorf("FormatArg(%s, %d, %#x) = %q, which a profile refuses: %s", tc.syscall, tc.arg, tc.v, got, msg)
		}
	}
}
