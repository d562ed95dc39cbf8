package seccomp

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/policy"
)

type vmFilter struct{ vm *VM }

func newVM(t testing.TB, raw []bpf.RawInstruction) vmFilter {
	t.Helper()
	vm, err := NewVM(raw)
	if err != nil {
		t.Fatal(err)
	}
	return vmFilter{vm}
}

func (v vmFilter) run(t testing.TB, auditArch, nr uint32, args [6]uint64) uint32 {
	t.Helper()
	out, err := v.vm.Run(auditArch, nr, args)
	if err != nil {
		t.Fatalf("vm: %v", err)
	}
	return out
}

func actionName(r uint32) string { return ActionName(r) }

func testProfile() *policy.Profile {
	p := &policy.Profile{}
	for _, n := range []string{"read", "write", "openat", "close", "mmap", "execve", "clone", "clone3", "socket", "ioctl", "getpid", "exit_group", "prctl", "chmod", "openat2", "kill", "tgkill"} {
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
func nrx32(name string) uint32 { return uint32(arch.X32.SyscallNames[name]) | X32Bit }

func TestFilterTable(t *testing.T) {
	p := testProfile()
	c, err := Compile(p, "x86_64", Options{InitStage: true})
	if err != nil {
		t.Fatal(err)
	}
	vm := newVM(t, c.Program)
	enosys, eacces, einval := RetErrno(unix.ENOSYS), RetErrno(unix.EACCES), RetErrno(unix.EINVAL)
	var none [6]uint64
	a := func(xs ...uint64) (r [6]uint64) { copy(r[:], xs); return }
	for _, tc := range []struct {
		name string
		arch uint32
		nr   uint32
		args [6]uint64
		want uint32
	}{
		{"allowed read", x86, nr64("read"), none, RetAllow},
		{"always-allowed rt_sigreturn", x86, nr64("rt_sigreturn"), none, RetAllow},
		{"ptrace not in profile", x86, nr64("ptrace"), none, RetNotify},
		{"io_uring_setup not learned", x86, nr64("io_uring_setup"), none, RetNotify},
		{"bpf", x86, nr64("bpf"), none, RetNotify},
		{"unshare", x86, nr64("unshare"), none, RetNotify},
		{"number newer than the table", x86, 600, none, enosys},
		{"gap in the table", x86, 400, none, enosys},
		{"huge native number", x86, 0x3fffffff, none, enosys},
		{"clone3 answers ENOSYS", x86, nr64("clone3"), none, enosys},
		{"x32 read when x32 not listed", x86, nrx32("read"), none, RetNotify},
		{"x32 number beyond its table", x86, X32Bit | 0x3000, none, enosys},
		{"nr -1", x86, 0xffffffff, none, enosys},
		{"int 0x80 getpid (i386 not listed)", i386, nr32("getpid"), none, RetNotify},
		{"aarch64 audit arch", a64, 172, none, RetNotify},
		{"socket AF_INET stream", x86, nr64("socket"), a(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0), RetAllow},
		{"socket AF_INET tcp", x86, nr64("socket"), a(unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_TCP), RetAllow},
		{"socket MPTCP", x86, nr64("socket"), a(unix.AF_INET, unix.SOCK_STREAM, IPProtoMPTCP), RetNotify},
		{"socket MPTCP with high garbage", x86, nr64("socket"), a(unix.AF_INET, unix.SOCK_STREAM, 1<<32|IPProtoMPTCP), RetNotify},
		{"socket AF_NETLINK", x86, nr64("socket"), a(unix.AF_NETLINK, unix.SOCK_DGRAM, 0), RetNotify},
		{"socket AF_INET with high garbage in domain", x86, nr64("socket"), a(1<<40|unix.AF_INET, unix.SOCK_STREAM, 0), RetAllow},
		{"socket SOCK_RAW", x86, nr64("socket"), a(unix.AF_INET, unix.SOCK_RAW, 0), RetNotify},
		{"mmap PROT_READ|WRITE", x86, nr64("mmap"), a(0, 4096, 3), RetAllow},
		{"mmap PROT_EXEC", x86, nr64("mmap"), a(0, 4096, 5), RetAllow},
		{"mmap PROT_SEM", x86, nr64("mmap"), a(0, 4096, 0x8), eacces},
		{"mmap high bit", x86, nr64("mmap"), a(0, 4096, 1<<33), eacces},
		{"prctl PR_SET_NAME", x86, nr64("prctl"), a(15), RetAllow},
		{"prctl other", x86, nr64("prctl"), a(38), einval},
		{"clone thread", x86, nr64("clone"), a(unix.CLONE_VM | unix.CLONE_THREAD | unix.CLONE_SIGHAND), RetAllow},
		{"clone CLONE_NEWNS", x86, nr64("clone"), a(unix.CLONE_NEWNS | uint64(unix.SIGCHLD)), RetNotify},
		{"clone CLONE_NEWUSER", x86, nr64("clone"), a(unix.CLONE_NEWUSER), RetNotify},
		{"ioctl TCGETS", x86, nr64("ioctl"), a(0, unix.TCGETS), RetAllow},
		{"ioctl TIOCSTI", x86, nr64("ioctl"), a(0, unix.TIOCSTI), RetNotify},
		{"ioctl TIOCSTI with high garbage", x86, nr64("ioctl"), a(0, 0xffffffff00000000|unix.TIOCSTI), RetNotify},
		{"ioctl TIOCLINUX", x86, nr64("ioctl"), a(0, unix.TIOCLINUX), RetNotify},
		{"kill of a child", x86, nr64("kill"), [6]uint64{4242, 15}, RetAllow},
		{"kill of the init stage", x86, nr64("kill"), [6]uint64{1, 6}, RetNotify},
		{"kill of the init stage, high garbage", x86, nr64("kill"), [6]uint64{1<<32 | 1, 11}, RetNotify},
		{"tgkill of the init stage", x86, nr64("tgkill"), [6]uint64{1, 2, 11}, RetNotify},
		{"chmod 0755", x86, nr64("chmod"), a(0, 0o755), RetAllow},
		{"chmod 04755", x86, nr64("chmod"), a(0, 0o4755), RetNotify},
		{"chmod 02755 with high garbage", x86, nr64("chmod"), a(0, 1<<32|0o2755), RetNotify},
		{"openat O_CREAT 0644", x86, nr64("openat"), a(0, 0, unix.O_CREAT|unix.O_WRONLY, 0o644), RetAllow},
		{"openat O_CREAT 04755", x86, nr64("openat"), a(0, 0, unix.O_CREAT|unix.O_WRONLY, 0o4755), RetNotify},
		{"openat2 answers ENOSYS", x86, nr64("openat2"), none, enosys},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := vm.run(t, tc.arch, tc.nr, tc.args)
			if got != tc.want {
				t.Errorf("filter: %s, want %s", actionName(got), actionName(tc.want))
			}
			if m := c.Spec.Eval(tc.arch, tc.nr, tc.args); m != tc.want {
				t.Errorf("spec.eval: %s, want %s", actionName(m), actionName(tc.want))
			}
		})
	}
}

// TestInitStageSignals: under enforce (InitStage) a signal naming pid 1 goes to the supervisor;
// an export's filter lets it through (in a container pid 1 may be the command: abort's tgkill).
func TestInitStageSignals(t *testing.T) {
	for _, init := range []bool{true, false} {
		c, err := Compile(testProfile(), "x86_64", Options{InitStage: init})
		if err != nil {
			t.Fatal(err)
		}
		want := uint32(RetAllow)
		if init {
			want = RetNotify
		}
		for _, call := range []struct {
			name string
			args [6]uint64
		}{{"kill", [6]uint64{1, 6}}, {"tgkill", [6]uint64{1, 1, 6}}} {
			if got := newVM(t, c.Program).run(t, x86, nr64(call.name), call.args); got != want {
				t.Errorf("init stage %v: %s of pid 1: %s, want %s", init, call.name, actionName(got), actionName(want))
			}
			if got := newVM(t, c.Program).run(t, x86, nr64(call.name), [6]uint64{4242, 4242, 6}); got != RetAllow {
				t.Errorf("init stage %v: %s of another pid: %s", init, call.name, actionName(got))
			}
		}
	}
}

func TestFilterForeignArchesWhenListed(t *testing.T) {
	p := testProfile()
	p.Syscalls.Architectures = []string{"x86_64", "i386", "x32"}
	c, err := Compile(p, "x86_64", Options{})
	if err != nil {
		t.Fatal(err)
	}
	vm := newVM(t, c.Program)
	var none [6]uint64
	for _, tc := range []struct {
		name     string
		arch, nr uint32
		want     uint32
	}{
		{"i386 getpid", i386, nr32("getpid"), RetAllow},
		{"i386 ptrace", i386, nr32("ptrace"), RetNotify},
		{"i386 beyond table", i386, 2000, RetErrno(unix.ENOSYS)},
		{"x32 getpid", x86, nrx32("getpid"), RetAllow},
		{"x32 ptrace", x86, nrx32("ptrace"), RetNotify},
		{"x32 clone3", x86, nrx32("clone3"), RetErrno(unix.ENOSYS)},
		{"x86_64 getpid", x86, nr64("getpid"), RetAllow},
	} {
		if got := vm.run(t, tc.arch, tc.nr, none); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, actionName(got), actionName(tc.want))
		}
	}
}

func TestMPTCPAllowedWhenLearned(t *testing.T) {
	p := testProfile()
	p.Network.Connect = []policy.Endpoint{{Endpoint: "127.0.0.1:8080", Proto: "mptcp"}}
	c, err := Compile(p, "x86_64", Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := newVM(t, c.Program).run(t, x86, nr64("socket"), [6]uint64{unix.AF_INET, unix.SOCK_STREAM, IPProtoMPTCP})
	if got != RetAllow {
		t.Errorf("MPTCP socket with an mptcp endpoint in the profile: %s, want ALLOW", actionName(got))
	}
}

// model is the plain-Go meaning of a profile for one call, written from the documented rules
// and independent of the compiler: allowed ⇔ the name is in the set and the arguments pass.
func model(p *policy.Profile, auditArch, nr uint32, args [6]uint64) uint32 {
	var info *arch.Info
	listed := func(a string) bool { return a == "x86_64" || slices.Contains(p.Syscalls.Architectures, a) }
	switch {
	case auditArch == x86 && nr >= X32Bit:
		info = arch.X32
	case auditArch == x86:
		info = arch.X86_64
	case auditArch == i386 && listed("i386"):
		info = arch.I386
	default:
		return RetNotify // a foreign architecture: everything it does is reported
	}
	mask := uint32(info.SeccompMask)
	name, ok := info.SyscallNumbers[int(nr&^mask)]
	if !ok || nr&mask != mask {
		return RetErrno(unix.ENOSYS)
	}
	if !listed(info.Name) {
		return RetNotify
	}
	if name == "clone3" || name == "openat2" {
		return RetErrno(unix.ENOSYS)
	}
	num := func(s string) uint64 { x, _ := policy.ParseValue(s); return x } // names too (AF_UNIX)
	errnoOf := func(r policy.ArgRule) uint32 {
		if r.Errno == "" {
			return RetNotify
		}
		e, _ := policy.ParseErrno(r.Errno)
		return RetErrno(unix.Errno(e))
	}
	for _, r := range p.Syscalls.Args {
		if r.Syscall == name && r.Errno != "" && len(r.Values)+len(r.Flags)+len(r.Deny) == 0 {
			return errnoOf(r)
		}
	}
	listedName := func(n string) bool {
		return slices.ContainsFunc(p.Syscalls.Allow, func(s policy.Syscall) bool { return s.Name == n })
	}
	allowed := slices.Contains(AlwaysAllowed, name) || listedName(name)
	// A profile not learned --exact has its behaviour families closed (policy.Families).
	if _, mate := policy.FamilyMates(p)[name]; mate && p.ClosesFamilies() {
		allowed = true
	}
	// clone3 answers ENOSYS, so a profile with clone3 gets its fallback, clone.
	if name == "clone" && (listedName("clone3") || slices.ContainsFunc(p.Syscalls.Args, func(r policy.ArgRule) bool { return r.Syscall == "clone3" })) {
		allowed = true
	}
	if !allowed {
		return RetNotify
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
	isMPTCP := func(v uint64) bool { return v == IPProtoMPTCP }
	switch {
	case name == "clone" && lo(0)&NamespaceFlags != 0 && !lets(0, never, NamespaceFlags):
		return RetNotify
	case name == "ioctl" && isTIOC(lo(1)) && !lets(1, isTIOC, 0):
		return RetNotify
	case name == "socket" && lo(2) == IPProtoMPTCP && !MPTCPLearned(p) && !lets(2, isMPTCP, 0):
		return RetNotify
	case slices.Contains([]string{"kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_open"}, name) && lo(0) == 1 &&
		!lets(0, func(v uint64) bool { return v == 1 }, 0):
		return RetNotify // the init stage
	case slices.Contains([]string{"ptrace", "process_vm_readv", "process_vm_writev", "kcmp"}, name) && func() bool {
		for _, arg := range map[string][]int{"ptrace": {1}, "process_vm_readv": {0}, "process_vm_writev": {0}, "kcmp": {0, 1}}[name] {
			if lo(arg) == 1 && !lets(arg, func(v uint64) bool { return v == 1 }, 0) {
				return true
			}
		}
		return false
	}():
		return RetNotify // the init stage
	}
	if name == "prlimit64" && lo(0) != 0 && !lets(0, func(v uint64) bool { return v != 0 }, 0xffffffff) {
		return RetNotify
	}
	execMem := map[string]uint64{"mmap": unix.PROT_EXEC, "mmap2": unix.PROT_EXEC, "mprotect": unix.PROT_EXEC, "pkey_mprotect": unix.PROT_EXEC, "shmat": shmExec}
	if info == arch.I386 && name == "mmap" && !lets(2, never, unix.PROT_EXEC) {
		return RetNotify // the old mmap: its arguments are in memory, every call is sent
	}
	if b, ok := execMem[name]; ok && lo(2)&b != 0 && (!strings.HasPrefix(name, "mmap") || lo(3)&unix.MAP_ANONYMOUS != 0) && !lets(2, never, b) {
		return RetNotify
	}
	// memfd_create: every call, unless a rule on flags lists a value with MFD_EXEC.
	if name == "memfd_create" && !lets(1, func(v uint64) bool { return v&unix.MFD_EXEC != 0 }, 0) {
		return RetNotify
	}
	setid := map[string]int{"chmod": 1, "fchmod": 1, "fchmodat": 2, "fchmodat2": 2, "creat": 1, "open": 2, "openat": 3, "mknod": 1, "mknodat": 2, "mkdir": 1, "mkdirat": 2}
	if i, ok := setid[name]; ok && lo(i)&(unix.S_ISUID|unix.S_ISGID) != 0 && !lets(i, never, unix.S_ISUID|unix.S_ISGID) {
		return RetNotify
	}
	return RetAllow
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
		p.Metadata.Exact = rng.IntN(2) == 0
		// Argument rules, numeric only, some on syscalls with hardening.
		interesting := []uint64{0, 1, 2, 3, 0xf, 0x10, 262, unix.TIOCSTI, unix.CLONE_NEWNS, 0xffffffff, 1 << 32, 1<<32 | 2, ^uint64(0), 0o4755, 0o2000, 1<<32 | 0o4000, unix.PROT_EXEC, unix.MAP_ANONYMOUS, unix.PROT_EXEC | unix.PROT_READ, shmExec}
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
		c, err := Compile(p, "x86_64", Options{InitStage: true})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		vm := newVM(t, c.Program)
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
				nr = X32Bit | uint32(rng.IntN(600))
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
			if e := c.Spec.Eval(a, nr, args); e != want {
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
	c, err := Compile(p, "x86_64", Options{InitStage: true}) // as the model: pid 1 is the init stage
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Program) < 600 {
		t.Fatalf("program has %d instructions; the test needs one with long jumps", len(c.Program))
	}
	vm := newVM(t, c.Program)
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

// io_uring (issue 23 item 8): refused unless learned; learned, the compile says that its
// operations skip the argument rules, and the review rates it critical with that reason.
func TestIOURingRefusedUnlessLearned(t *testing.T) {
	p := testProfile()
	c, err := Compile(p, "x86_64", Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"io_uring_setup", "io_uring_enter", "io_uring_register"} {
		if got := newVM(t, c.Program).run(t, x86, nr64(n), [6]uint64{}); got != RetNotify {
			t.Errorf("%s not learned: %s, want NOTIFY (reported, EPERM)", n, actionName(got))
		}
	}
	p.Syscalls.Allow = append(p.Syscalls.Allow, policy.Syscall{Name: "io_uring_setup"})
	c, err = Compile(p, "x86_64", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(c.Notes, func(n string) bool { return strings.Contains(n, "io_uring") && strings.Contains(n, "argument check") }) {
		t.Errorf("a learned io_uring_setup is not noted as skipping argument checks: %q", c.Notes)
	}
	review := policy.Review(nil, p)
	if !slices.ContainsFunc(review, func(ch policy.Change) bool {
		return ch.Item == "io_uring_setup" && ch.Risk >= policy.RiskCritical && strings.Contains(ch.Reason, "argument rules")
	}) {
		t.Errorf("learn's review does not say io_uring weakens the argument rules: %+v", review)
	}
}

// Executable memory no file backs is refused unless the profile has a rule on prot letting
// PROT_EXEC through (what synth writes when learn saw a JIT); a file's mapping is the mounts'.
func TestExecMemory(t *testing.T) {
	anon, file := uint64(unix.MAP_PRIVATE|unix.MAP_ANONYMOUS), uint64(unix.MAP_PRIVATE)
	rx, rw := uint64(unix.PROT_READ|unix.PROT_EXEC), uint64(unix.PROT_READ|unix.PROT_WRITE)
	a := func(xs ...uint64) (r [6]uint64) { copy(r[:], xs); return }
	cases := []struct {
		name    string
		nr      uint32
		args    [6]uint64
		refused bool
	}{
		{"mmap anonymous rx", nr64("mmap"), a(0, 4096, rx, anon, ^uint64(0)), true},
		{"mmap anonymous rwx, high garbage in flags", nr64("mmap"), a(0, 4096, rx|rw, 1<<40|anon, ^uint64(0)), true},
		{"mmap anonymous rw", nr64("mmap"), a(0, 4096, rw, anon, ^uint64(0)), false},
		{"mmap of a file rx (the loader)", nr64("mmap"), a(0, 4096, rx, file, 3), false},
		{"mprotect rx", nr64("mprotect"), a(0, 4096, rx), true},
		{"mprotect r (relro)", nr64("mprotect"), a(0, 4096, unix.PROT_READ), false},
		{"pkey_mprotect rx", nr64("pkey_mprotect"), a(0, 4096, rx, 0), true},
		{"shmat SHM_EXEC", nr64("shmat"), a(1, 0, shmExec), true},
		{"shmat", nr64("shmat"), a(1, 0, 0), false},
	}
	for _, learned := range []bool{false, true} {
		p := &policy.Profile{}
		for _, n := range []string{"mmap", "mprotect", "pkey_mprotect", "shmat"} {
			p.Syscalls.Allow = append(p.Syscalls.Allow, policy.Syscall{Name: n})
			if learned && n != "shmat" {
				p.Syscalls.Args = append(p.Syscalls.Args, policy.ArgRule{Syscall: n, Arg: 2, Mask: "PROT_EXEC", Values: []string{"PROT_NONE", "PROT_EXEC"}})
			}
		}
		c, err := Compile(p, "x86_64", Options{})
		if err != nil {
			t.Fatal(err)
		}
		vm := newVM(t, c.Program)
		for _, tc := range cases {
			want := uint32(RetAllow)
			// (learn records no shmat: a rule on its prot-like argument is not PROT_EXEC)
			if tc.refused && (!learned || tc.nr == nr64("shmat")) {
				want = RetNotify
			}
			if got := vm.run(t, x86, tc.nr, tc.args); got != want {
				t.Errorf("learned=%v %s: filter %s, want %s", learned, tc.name, actionName(got), actionName(want))
			}
			if got := c.Spec.Eval(x86, tc.nr, tc.args); got != want {
				t.Errorf("learned=%v %s: spec %s, want %s", learned, tc.name, actionName(got), actionName(want))
			}
		}
	}
}

// The same under i386 (int 0x80 or a 32-bit program, when the profile lists i386): mmap2 and
// mprotect have their arguments in registers and are checked as on x86_64; the old mmap has
// them in memory, so every call is sent unless a rule lets PROT_EXEC through.
func TestExecMemoryCompat(t *testing.T) {
	anon, file := uint64(unix.MAP_PRIVATE|unix.MAP_ANONYMOUS), uint64(unix.MAP_PRIVATE)
	rx, rw := uint64(unix.PROT_READ|unix.PROT_EXEC), uint64(unix.PROT_READ|unix.PROT_WRITE)
	a := func(xs ...uint64) (r [6]uint64) { copy(r[:], xs); return }
	cases := []struct {
		name    string
		nr      uint32
		args    [6]uint64
		refused bool
	}{
		{"mmap2 anonymous rx", nr32("mmap2"), a(0, 4096, rx, anon, 0xffffffff), true},
		{"mmap2 anonymous rw", nr32("mmap2"), a(0, 4096, rw, anon, 0xffffffff), false},
		{"mmap2 of a file rx (the loader)", nr32("mmap2"), a(0, 4096, rx, file, 3), false},
		{"old mmap, a pointer to its arguments", nr32("mmap"), a(0xffffd000), true},
		{"old mmap, registers that look harmless", nr32("mmap"), a(0, 4096, rw, file, 3), true},
		{"mprotect rx", nr32("mprotect"), a(0, 4096, rx), true},
		{"mprotect r", nr32("mprotect"), a(0, 4096, unix.PROT_READ), false},
	}
	for _, learned := range []bool{false, true} {
		p := &policy.Profile{}
		p.Syscalls.Architectures = []string{"x86_64", "i386"}
		for _, n := range []string{"mmap", "mmap2", "mprotect"} {
			p.Syscalls.Allow = append(p.Syscalls.Allow, policy.Syscall{Name: n})
			if learned {
				// (numbers: the model reads no names)
				p.Syscalls.Args = append(p.Syscalls.Args, policy.ArgRule{Syscall: n, Arg: 2, Mask: "0x4", Values: []string{"0x0", "0x4"}})
			}
		}
		c, err := Compile(p, "x86_64", Options{})
		if err != nil {
			t.Fatal(err)
		}
		vm := newVM(t, c.Program)
		for _, tc := range cases {
			want := uint32(RetAllow)
			if tc.refused && !learned {
				want = RetNotify
			}
			if got := vm.run(t, i386, tc.nr, tc.args); got != want {
				t.Errorf("learned=%v i386 %s: filter %s, want %s", learned, tc.name, actionName(got), actionName(want))
			}
			if got := c.Spec.Eval(i386, tc.nr, tc.args); got != want {
				t.Errorf("learned=%v i386 %s: spec %s, want %s", learned, tc.name, actionName(got), actionName(want))
			}
			if got := model(p, i386, tc.nr, tc.args); got != want {
				t.Errorf("learned=%v i386 %s: model %s, want %s", learned, tc.name, actionName(got), actionName(want))
			}
		}
	}
}

// Every memfd_create goes to the supervisor (which makes it on a noexec tmpfs) unless the
// profile has a rule on its flags letting MFD_EXEC through (what synth writes when learn saw a
// memfd executed or mapped executable).
func TestMemfdToSupervisor(t *testing.T) {
	a := func(xs ...uint64) (r [6]uint64) { copy(r[:], xs); return }
	flags := []uint64{0, unix.MFD_CLOEXEC, unix.MFD_ALLOW_SEALING | unix.MFD_CLOEXEC, unix.MFD_EXEC, unix.MFD_NOEXEC_SEAL, 1<<40 | unix.MFD_CLOEXEC, 0xffffffff}
	for _, learned := range []bool{false, true} {
		p := &policy.Profile{}
		p.Syscalls.Allow = append(p.Syscalls.Allow, policy.Syscall{Name: "memfd_create"})
		if learned {
			p.Syscalls.Args = append(p.Syscalls.Args, policy.ArgRule{Syscall: "memfd_create", Arg: 1, Mask: "0x10", Values: []string{"0", "0x10"}})
		} else { // a rule that does not name MFD_EXEC keeps the hardening
			p.Syscalls.Args = append(p.Syscalls.Args, policy.ArgRule{Syscall: "memfd_create", Arg: 1, Flags: []string{"0xffffffff"}})
		}
		c, err := Compile(p, "x86_64", Options{})
		if err != nil {
			t.Fatal(err)
		}
		vm := newVM(t, c.Program)
		for _, f := range flags {
			want := uint32(RetNotify)
			if learned {
				want = RetAllow
			}
			args := a(0x1000, f)
			if got := vm.run(t, x86, nr64("memfd_create"), args); got != want {
				t.Errorf("learned=%v flags %#x: filter %s, want %s", learned, f, actionName(got), actionName(want))
			}
			if got := c.Spec.Eval(x86, nr64("memfd_create"), args); got != want {
				t.Errorf("learned=%v flags %#x: spec %s, want %s", learned, f, actionName(got), actionName(want))
			}
		}
	}
}

// TestPrlimitOtherToSupervisor: prlimit64 on the caller (pid 0) passes; on any other pid
// (the init stage, a sibling; garbage in the high word does not hide it) it goes to the
// supervisor, unless the profile's rule on pid lets other pids through.
func TestPrlimitOtherToSupervisor(t *testing.T) {
	a := func(xs ...uint64) (r [6]uint64) { copy(r[:], xs); return }
	for _, tc := range []struct {
		name string
		rule *policy.ArgRule
		pid  uint64
		want uint32
	}{
		{"self", nil, 0, RetAllow},
		{"self with high garbage", nil, 1 << 32, RetAllow},
		{"init stage", nil, 1, RetNotify},
		{"sibling", nil, 4242, RetNotify},
		{"negative", nil, 0xffffffff, RetNotify},
		{"sibling, other pids learned", &policy.ArgRule{Syscall: "prlimit64", Arg: 0, Name: "pid", Flags: []string{"0x7fffffff"}}, 4242, RetAllow},
		{"self, other pids learned", &policy.ArgRule{Syscall: "prlimit64", Arg: 0, Name: "pid", Flags: []string{"0x7fffffff"}}, 0, RetAllow},
		{"sibling, a rule naming pid 0 only", &policy.ArgRule{Syscall: "prlimit64", Arg: 0, Name: "pid", Values: []string{"0"}}, 4242, RetNotify},
	} {
		p := &policy.Profile{}
		p.Syscalls.Allow = append(p.Syscalls.Allow, policy.Syscall{Name: "prlimit64"})
		if tc.rule != nil {
			p.Syscalls.Args = append(p.Syscalls.Args, *tc.rule)
		}
		c, err := Compile(p, "x86_64", Options{})
		if err != nil {
			t.Fatal(err)
		}
		args := a(tc.pid, unix.RLIMIT_NOFILE, 0, 0x1000)
		if got := newVM(t, c.Program).run(t, x86, nr64("prlimit64"), args); got != tc.want {
			t.Errorf("%s: filter %s, want %s", tc.name, actionName(got), actionName(tc.want))
		}
		if got := c.Spec.Eval(x86, nr64("prlimit64"), args); got != tc.want {
			t.Errorf("%s: spec %s, want %s", tc.name, actionName(got), actionName(tc.want))
		}
	}
}
