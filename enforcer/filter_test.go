package enforcer

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/policy"
)

// vmInput encodes struct seccomp_data for x/net/bpf's VM. The kernel loads words in host
// (little-endian) order; the VM loads them big-endian, so each 32-bit word is written
// big-endian at the offset where the kernel would find it.
func vmInput(auditArch, nr uint32, args [6]uint64) []byte {
	b := make([]byte, 64)
	binary.BigEndian.PutUint32(b[offNr:], nr)
	binary.BigEndian.PutUint32(b[offArch:], auditArch)
	for i, a := range args {
		binary.BigEndian.PutUint32(b[argLo(i):], uint32(a))
		binary.BigEndian.PutUint32(b[argHi(i):], uint32(a>>32))
	}
	return b
}

type vmFilter struct{ vm *bpf.VM }

func newVM(t testing.TB, raw []bpf.RawInstruction) vmFilter {
	t.Helper()
	insns, ok := bpf.Disassemble(raw)
	if !ok {
		t.Fatalf("the compiled program has instructions x/net/bpf cannot decode")
	}
	vm, err := bpf.NewVM(insns)
	if err != nil {
		t.Fatalf("bpf.NewVM: %v", err)
	}
	return vmFilter{vm}
}

func (v vmFilter) run(t testing.TB, auditArch, nr uint32, args [6]uint64) uint32 {
	t.Helper()
	out, err := v.vm.Run(vmInput(auditArch, nr, args))
	if err != nil {
		t.Fatalf("vm: %v", err)
	}
	return uint32(out)
}

func actionName(r uint32) string {
	switch {
	case r == retAllow:
		return "ALLOW"
	case r == retNotify:
		return "NOTIFY"
	case r == retKill:
		return "KILL"
	case r&unix.SECCOMP_RET_ACTION_FULL == unix.SECCOMP_RET_ERRNO:
		return "ERRNO(" + unix.ErrnoName(unix.Errno(r&unix.SECCOMP_RET_DATA)) + ")"
	}
	return fmt.Sprintf("0x%08x", r)
}

func testProfile() *policy.Profile {
	p := &policy.Profile{}
	for _, n := range []string{"read", "write", "openat", "close", "mmap", "execve", "clone", "clone3", "socket", "ioctl", "getpid", "exit_group", "prctl"} {
		p.Syscalls.Allow = append(p.Syscalls.Allow, policy.Syscall{Name: n})
	}
	p.Syscalls.Args = []policy.ArgRule{
		{Syscall: "socket", Arg: 0, Values: []string{"AF_UNIX", "AF_INET", "AF_INET6"}},
		{Syscall: "socket", Arg: 1, Mask: "0xf", Values: []string{"SOCK_STREAM", "SOCK_DGRAM"}},
		{Syscall: "mmap", Arg: 2, Flags: []string{"0x1", "0x2", "0x4"}, Errno: "EACCES"},
		{Syscall: "prctl", Arg: 0, Values: []string{"15", "16"}, Errno: "EINVAL"},
	}
	return p
}

const (
	x86  = uint32(0xc000003e)
	i386 = uint32(0x40000003)
	a64  = uint32(0xc00000b7)
)

func nr64(name string) uint32  { return uint32(arch.X86_64.SyscallNames[name]) }
func nr32(name string) uint32  { return uint32(arch.I386.SyscallNames[name]) }
func nrx32(name string) uint32 { return uint32(arch.X32.SyscallNames[name]) | x32Bit }

func TestFilterTable(t *testing.T) {
	p := testProfile()
	c, err := Compile(p, Env{Vars: map[string]string{"HOME": "/h", "WORKDIR": "/w", "TMPDIR": "/tmp"}, Arch: "x86_64"})
	if err != nil {
		t.Fatal(err)
	}
	vm := newVM(t, c.Filter)
	enosys, eacces, einval := retErrno(unix.ENOSYS), retErrno(unix.EACCES), retErrno(unix.EINVAL)
	var none [6]uint64
	a := func(xs ...uint64) (r [6]uint64) { copy(r[:], xs); return }
	for _, tc := range []struct {
		name string
		arch uint32
		nr   uint32
		args [6]uint64
		want uint32
	}{
		{"allowed read", x86, nr64("read"), none, retAllow},
		{"always-allowed rt_sigreturn", x86, nr64("rt_sigreturn"), none, retAllow},
		{"ptrace not in profile", x86, nr64("ptrace"), none, retNotify},
		{"io_uring_setup not learned", x86, nr64("io_uring_setup"), none, retNotify},
		{"bpf", x86, nr64("bpf"), none, retNotify},
		{"unshare", x86, nr64("unshare"), none, retNotify},
		{"number newer than the table", x86, 600, none, enosys},
		{"gap in the table", x86, 400, none, enosys},
		{"huge native number", x86, 0x3fffffff, none, enosys},
		{"clone3 answers ENOSYS", x86, nr64("clone3"), none, enosys},
		{"x32 read when x32 not listed", x86, nrx32("read"), none, retNotify},
		{"x32 number beyond its table", x86, x32Bit | 0x3000, none, enosys},
		{"nr -1", x86, 0xffffffff, none, enosys},
		{"int 0x80 getpid (i386 not listed)", i386, nr32("getpid"), none, retNotify},
		{"aarch64 audit arch", a64, 172, none, retNotify},
		{"socket AF_INET stream", x86, nr64("socket"), a(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0), retAllow},
		{"socket AF_INET tcp", x86, nr64("socket"), a(unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_TCP), retAllow},
		{"socket MPTCP", x86, nr64("socket"), a(unix.AF_INET, unix.SOCK_STREAM, ipprotoMPTCP), retNotify},
		{"socket MPTCP with high garbage", x86, nr64("socket"), a(unix.AF_INET, unix.SOCK_STREAM, 1<<32|ipprotoMPTCP), retNotify},
		{"socket AF_NETLINK", x86, nr64("socket"), a(unix.AF_NETLINK, unix.SOCK_DGRAM, 0), retNotify},
		{"socket AF_INET with high garbage in domain", x86, nr64("socket"), a(1<<40|unix.AF_INET, unix.SOCK_STREAM, 0), retAllow},
		{"socket SOCK_RAW", x86, nr64("socket"), a(unix.AF_INET, unix.SOCK_RAW, 0), retNotify},
		{"mmap PROT_READ|WRITE", x86, nr64("mmap"), a(0, 4096, 3), retAllow},
		{"mmap PROT_EXEC", x86, nr64("mmap"), a(0, 4096, 5), retAllow},
		{"mmap PROT_SEM", x86, nr64("mmap"), a(0, 4096, 0x8), eacces},
		{"mmap high bit", x86, nr64("mmap"), a(0, 4096, 1<<33), eacces},
		{"prctl PR_SET_NAME", x86, nr64("prctl"), a(15), retAllow},
		{"prctl other", x86, nr64("prctl"), a(38), einval},
		{"clone thread", x86, nr64("clone"), a(unix.CLONE_VM | unix.CLONE_THREAD | unix.CLONE_SIGHAND), retAllow},
		{"clone CLONE_NEWNS", x86, nr64("clone"), a(unix.CLONE_NEWNS | uint64(unix.SIGCHLD)), retNotify},
		{"clone CLONE_NEWUSER", x86, nr64("clone"), a(unix.CLONE_NEWUSER), retNotify},
		{"ioctl TCGETS", x86, nr64("ioctl"), a(0, unix.TCGETS), retAllow},
		{"ioctl TIOCSTI", x86, nr64("ioctl"), a(0, unix.TIOCSTI), retNotify},
		{"ioctl TIOCSTI with high garbage", x86, nr64("ioctl"), a(0, 0xffffffff00000000|unix.TIOCSTI), retNotify},
		{"ioctl TIOCLINUX", x86, nr64("ioctl"), a(0, unix.TIOCLINUX), retNotify},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := vm.run(t, tc.arch, tc.nr, tc.args)
			if got != tc.want {
				t.Errorf("filter: %s, want %s", actionName(got), actionName(tc.want))
			}
			if m := c.spec.eval(tc.arch, tc.nr, tc.args); m != tc.want {
				t.Errorf("spec.eval: %s, want %s", actionName(m), actionName(tc.want))
			}
		})
	}
}

func TestFilterForeignArchesWhenListed(t *testing.T) {
	p := testProfile()
	p.Syscalls.Architectures = []string{"x86_64", "i386", "x32"}
	c, err := Compile(p, Env{Arch: "x86_64"})
	if err != nil {
		t.Fatal(err)
	}
	vm := newVM(t, c.Filter)
	var none [6]uint64
	for _, tc := range []struct {
		name     string
		arch, nr uint32
		want     uint32
	}{
		{"i386 getpid", i386, nr32("getpid"), retAllow},
		{"i386 ptrace", i386, nr32("ptrace"), retNotify},
		{"i386 beyond table", i386, 2000, retErrno(unix.ENOSYS)},
		{"x32 getpid", x86, nrx32("getpid"), retAllow},
		{"x32 ptrace", x86, nrx32("ptrace"), retNotify},
		{"x32 clone3", x86, nrx32("clone3"), retErrno(unix.ENOSYS)},
		{"x86_64 getpid", x86, nr64("getpid"), retAllow},
	} {
		if got := vm.run(t, tc.arch, tc.nr, none); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, actionName(got), actionName(tc.want))
		}
	}
}

func TestMPTCPAllowedWhenLearned(t *testing.T) {
	p := testProfile()
	p.Network.Connect = []policy.Endpoint{{Endpoint: "127.0.0.1:8080", Proto: "mptcp"}}
	c, err := Compile(p, Env{Arch: "x86_64"})
	if err != nil {
		t.Fatal(err)
	}
	got := newVM(t, c.Filter).run(t, x86, nr64("socket"), [6]uint64{unix.AF_INET, unix.SOCK_STREAM, ipprotoMPTCP})
	if got != retAllow {
		t.Errorf("MPTCP socket with an mptcp endpoint in the profile: %s, want ALLOW", actionName(got))
	}
}

// model is the plain-Go meaning of a profile for one call, written from the documented rules
// and independent of the compiler: allowed ⇔ the name is in the set and the arguments pass.
func model(p *policy.Profile, auditArch, nr uint32, args [6]uint64) uint32 {
	var info *arch.Info
	listed := func(a string) bool { return a == "x86_64" || slices.Contains(p.Syscalls.Architectures, a) }
	switch {
	case auditArch == x86 && nr >= x32Bit:
		info = arch.X32
	case auditArch == x86:
		info = arch.X86_64
	case auditArch == i386 && listed("i386"):
		info = arch.I386
	default:
		return retNotify // a foreign architecture: everything it does is reported
	}
	mask := uint32(info.SeccompMask)
	name, ok := info.SyscallNumbers[int(nr&^mask)]
	if !ok || nr&mask != mask {
		return retErrno(unix.ENOSYS)
	}
	if !listed(info.Name) {
		return retNotify
	}
	if name == "clone3" {
		return retErrno(unix.ENOSYS)
	}
	num := func(s string) uint64 { x, _ := strconv.ParseUint(s, 0, 64); return x }
	errnoOf := func(r policy.ArgRule) uint32 {
		if r.Errno == "" {
			return retNotify
		}
		e, _ := policy.ParseErrno(r.Errno)
		return retErrno(unix.Errno(e))
	}
	for _, r := range p.Syscalls.Args {
		if r.Syscall == name && r.Errno != "" && len(r.Values)+len(r.Flags)+len(r.Deny) == 0 {
			return errnoOf(r)
		}
	}
	listedName := func(n string) bool {
		return slices.ContainsFunc(p.Syscalls.Allow, func(s policy.Syscall) bool { return s.Name == n })
	}
	allowed := slices.Contains(alwaysAllowed, name) || listedName(name)
	// clone3 answers ENOSYS, so a profile with clone3 gets its fallback, clone.
	if name == "clone" && (listedName("clone3") || slices.ContainsFunc(p.Syscalls.Args, func(r policy.ArgRule) bool { return r.Syscall == "clone3" })) {
		allowed = true
	}
	if !allowed {
		return retNotify
	}
	// explicit[arg] collects what the profile's rules explicitly let through on an argument.
	type allowance struct{ values, bits []uint64 }
	explicit := map[int]*allowance{}
	for _, r := range p.Syscalls.Args {
		if r.Syscall != name {
			continue
		}
		w32 := isInt32Arg(name, r.Arg)
		t32 := func(x uint64) uint64 {
			if w32 {
				return x & 0xffffffff
			}
			return x
		}
		m := ^uint64(0)
		if r.Mask != "" {
			m = num(r.Mask)
		}
		if explicit[r.Arg] == nil {
			explicit[r.Arg] = &allowance{}
		}
		v := t32(args[r.Arg]) & t32(m)
		pass := true
		if len(r.Values) > 0 {
			pass = false
			for _, s := range r.Values {
				pass = pass || v == t32(num(s))
				explicit[r.Arg].values = append(explicit[r.Arg].values, num(s)&m)
			}
		}
		if len(r.Flags) > 0 {
			var f uint64
			for _, s := range r.Flags {
				f |= num(s)
			}
			pass = pass && v&^f == 0
			explicit[r.Arg].bits = append(explicit[r.Arg].bits, f&m)
		}
		for _, s := range r.Deny {
			pass = pass && v != t32(num(s))
		}
		if !pass {
			return errnoOf(r)
		}
	}
	lo := func(i int) uint64 { return args[i] & 0xffffffff }
	lets := func(arg int, deniedValue func(uint64) bool, deniedBits uint64) bool {
		a := explicit[arg]
		if a == nil {
			return false
		}
		for _, v := range a.values {
			if deniedValue(v&0xffffffff) || v&deniedBits != 0 {
				return true
			}
		}
		for _, b := range a.bits {
			if b&deniedBits != 0 {
				return true
			}
		}
		return false
	}
	never := func(uint64) bool { return false }
	isTIOC := func(v uint64) bool { return v == unix.TIOCSTI || v == unix.TIOCLINUX }
	isMPTCP := func(v uint64) bool { return v == ipprotoMPTCP }
	switch {
	case name == "clone" && lo(0)&namespaceFlags != 0 && !lets(0, never, namespaceFlags):
		return retNotify
	case name == "ioctl" && isTIOC(lo(1)) && !lets(1, isTIOC, 0):
		return retNotify
	case name == "socket" && lo(2) == ipprotoMPTCP && !mptcpLearned(p) && !lets(2, isMPTCP, 0):
		return retNotify
	}
	return retAllow
}

func TestFilterRandomAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	names := sortedKeys(arch.X86_64.SyscallNames)
	for round := range 40 {
		p := &policy.Profile{}
		for _, n := range names {
			if rng.IntN(3) == 0 {
				p.Syscalls.Allow = append(p.Syscalls.Allow, policy.Syscall{Name: n})
			}
		}
		for _, a := range []string{"i386", "x32"} {
			if rng.IntN(2) == 0 {
				p.Syscalls.Architectures = append(p.Syscalls.Architectures, a)
			}
		}
		// Argument rules, numeric only, some on syscalls with hardening.
		interesting := []uint64{0, 1, 2, 3, 0xf, 0x10, 262, unix.TIOCSTI, unix.CLONE_NEWNS, 0xffffffff, 1 << 32, 1<<32 | 2, ^uint64(0)}
		for _, s := range p.Syscalls.Allow {
			if rng.IntN(4) != 0 && s.Name != "socket" && s.Name != "clone" && s.Name != "ioctl" {
				continue
			}
			for range rng.IntN(3) {
				r := policy.ArgRule{Syscall: s.Name, Arg: rng.IntN(3)}
				if rng.IntN(2) == 0 {
					r.Mask = "0x" + strconv.FormatUint(interesting[rng.IntN(len(interesting))], 16)
				}
				for range rng.IntN(3) {
					r.Values = append(r.Values, "0x"+strconv.FormatUint(interesting[rng.IntN(len(interesting))], 16))
				}
				if rng.IntN(2) == 0 {
					r.Flags = append(r.Flags, "0x"+strconv.FormatUint(interesting[rng.IntN(len(interesting))], 16))
				}
				for range rng.IntN(2) {
					r.Deny = append(r.Deny, "0x"+strconv.FormatUint(interesting[rng.IntN(len(interesting))], 16))
				}
				if rng.IntN(3) == 0 {
					r.Errno = "EACCES"
				}
				p.Syscalls.Args = append(p.Syscalls.Args, r)
			}
		}
		if rng.IntN(4) == 0 {
			p.Network.Connect = []policy.Endpoint{{Endpoint: "127.0.0.1:1", Proto: "mptcp"}}
		}
		c, err := Compile(p, Env{Arch: "x86_64"})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		vm := newVM(t, c.Filter)
		for range 3000 {
			var a, nr uint32
			switch rng.IntN(10) {
			case 0:
				a = i386
			case 1:
				a = a64
			default:
				a = x86
			}
			switch rng.IntN(8) {
			case 0:
				nr = rng.Uint32()
			case 1:
				nr = x32Bit | uint32(rng.IntN(600))
			case 2:
				nr = uint32(rng.IntN(1000))
			default:
				nr = uint32(arch.X86_64.SyscallNames[names[rng.IntN(len(names))]])
			}
			var args [6]uint64
			for i := range args {
				switch rng.IntN(3) {
				case 0:
					args[i] = rng.Uint64()
				default:
					args[i] = interesting[rng.IntN(len(interesting))]
				}
			}
			want := model(p, a, nr, args)
			got := vm.run(t, a, nr, args)
			if got != want {
				name, abi := SyscallName(a, nr)
				t.Fatalf("round %d: arch %#x nr %#x (%s %s) args %#x: filter %s, model %s\nrules: %+v",
					round, a, nr, abi, name, args, actionName(got), actionName(want), p.Syscalls.Args)
			}
			if e := c.spec.eval(a, nr, args); e != want {
				t.Fatalf("round %d: spec.eval %s, model %s", round, actionName(e), actionName(want))
			}
		}
	}
}

func TestAssemblerLongJumps(t *testing.T) {
	// A profile with many argument rules makes the search tree's jumps longer than 255.
	p := &policy.Profile{}
	for _, n := range sortedKeys(arch.X86_64.SyscallNames) {
		p.Syscalls.Allow = append(p.Syscalls.Allow, policy.Syscall{Name: n})
		if len(p.Syscalls.Args) < 120 {
			p.Syscalls.Args = append(p.Syscalls.Args, policy.ArgRule{Syscall: n, Arg: 1, Values: []string{"1", "2", "3"}})
		}
	}
	c, err := Compile(p, Env{Arch: "x86_64"})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Filter) < 600 {
		t.Fatalf("program has %d instructions; the test needs one with long jumps", len(c.Filter))
	}
	vm := newVM(t, c.Filter)
	for _, n := range sortedKeys(arch.X86_64.SyscallNames) {
		nr := nr64(n)
		for _, v := range []uint64{1, 4} {
			args := [6]uint64{0, v}
			if got, want := vm.run(t, x86, nr, args), model(p, x86, nr, args); got != want {
				t.Fatalf("%s(%d): filter %s, model %s", n, v, actionName(got), actionName(want))
			}
		}
	}
}
