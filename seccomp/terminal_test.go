package seccomp

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/policy"
)

// TestTerminalRequestsClosed (issue 24 item 4): a profile learned before the terminal requests
// grew (its ioctl rule the probes TCGETS and TIOCGWINSZ alone) lets a pager at a terminal set
// its raw mode (TCSETSW) and flush it (fsync), as a newer learn's would; injection stays
// refused, and a profile learned --exact keeps exactly its rule.
func TestTerminalRequestsClosed(t *testing.T) {
	old := func(exact bool) *policy.Profile {
		p := &policy.Profile{Metadata: policy.Metadata{Exact: exact}}
		for _, n := range []string{"read", "write", "exit_group"} {
			p.Syscalls.Allow = append(p.Syscalls.Allow, policy.Syscall{Name: n, Provenance: policy.Provenance{By: "/usr/bin/less"}})
		}
		p.Syscalls.Allow = append(p.Syscalls.Allow, policy.Syscall{Name: "ioctl", Family: policy.TerminalFamily})
		p.Syscalls.Args = []policy.ArgRule{{Syscall: "ioctl", Arg: 1, Name: "request", Mask: "0xffffffff", Values: []string{"TCGETS", "TIOCGWINSZ"}}}
		return p
	}
	a := func(xs ...uint64) (r [6]uint64) { copy(r[:], xs); return }
	for _, tc := range []struct {
		exact bool
		nr    uint32
		args  [6]uint64
		allow bool
	}{
		{false, nr64("ioctl"), a(1, unix.TCSETSW), true},
		{false, nr64("ioctl"), a(1, unix.TCGETS), true},
		{false, nr64("fsync"), a(1), true},
		{false, nr64("ioctl"), a(1, unix.TIOCSTI), false},
		{false, nr64("ioctl"), a(1, unix.TIOCSCTTY), false},
		{false, nr64("ioctl"), a(1, 0x5421 /* FIONBIO */), true},
		{false, nr64("ioctl"), a(1, unix.TIOCGPTN), true},
		{true, nr64("ioctl"), a(1, 0x5421 /* FIONBIO */), false},
		{true, nr64("ioctl"), a(1, unix.TCSETSW), false},
		{true, nr64("ioctl"), a(1, unix.TCGETS), true},
	} {
		c, err := Compile(old(tc.exact), "x86_64", Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := newVM(t, c.Program).run(t, x86, tc.nr, tc.args); (got == RetAllow) != tc.allow {
			t.Errorf("exact=%v nr %d request %#x: %s, want allowed=%v", tc.exact, tc.nr, tc.args[1], actionName(got), tc.allow)
		}
	}
}
