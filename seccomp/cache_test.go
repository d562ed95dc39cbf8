package seccomp

import (
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"

	"github.com/sysprof/sysprof/policy"
)

// cacheProfiles are the filters whose layout is checked: the unit-test profile with i386 and
// x32 listed and an argument rule on mmap and mprotect (as a loader's exec rules add), and every
// shipped profile.
func cacheProfiles(t *testing.T) map[string]*policy.Profile {
	t.Helper()
	p := testProfile()
	p.Syscalls.Architectures = []string{"x86_64", "i386", "x32"}
	for _, n := range []string{"getppid", "mprotect", "fstat", "newfstatat", "mkdir", "fchmodat", "creat", "open", "futex", "brk"} {
		p.Syscalls.Allow = append(p.Syscalls.Allow, policy.Syscall{Name: n})
	}
	p.Syscalls.Args = append(p.Syscalls.Args, policy.ArgRule{Syscall: "mprotect", Arg: 2, Flags: []string{"0x1", "0x2"}})
	out := map[string]*policy.Profile{"unit": p}
	files, err := filepath.Glob("../profiles/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("shipped profiles: %v (%d files)", err, len(files))
	}
	for _, f := range files {
		sp, err := policy.Load(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out[filepath.Base(f)] = sp
	}
	return out
}

// TestArgFreeAllowsAreCached: for every number of the two ABIs the kernel's action cache covers
// (x86_64 and i386), the program is served by the cache exactly when its rule allows whatever
// the arguments: a syscall with an argument check (set-id modes on openat, mkdir, chmod, …; a
// profile's mmap rule) runs the program, every other allowed one never does.
func TestArgFreeAllowsAreCached(t *testing.T) {
	for name, p := range cacheProfiles(t) {
		c, err := Compile(p, "x86_64", Options{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		cached := 0
		for _, abi := range c.Spec.ABIs {
			if abi.Info != arch.X86_64 && abi.Info != arch.I386 {
				continue // x32: the kernel caches no numbers above its syscall count
			}
			id := uint32(abi.Info.ID)
			for nr := uint32(0); nr <= abi.Max; nr++ {
				miss := abi.CacheMiss(nr)
				got := ConstAllow(c.Program, id, nr)
				if got != (miss == "") {
					t.Errorf("%s: %s %s (%d): served by the action cache %v, want %v (%s)", name, abi.Info.Name, abi.Known[nr], nr, got, miss == "", missOr(miss))
				}
				if got {
					cached++
				}
			}
		}
		if cached == 0 {
			t.Errorf("%s: no syscall is served by the action cache", name)
		}
	}
	// What the hot paths of a build make: cached unless they carry an argument rule.
	c, err := Compile(cacheProfiles(t)["unit"], "x86_64", Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"read", "write", "close", "getppid", "fstat", "newfstatat", "futex", "brk"} {
		if !ConstAllow(c.Program, x86, nr64(n)) {
			t.Errorf("%s: not served by the action cache", n)
		}
	}
	for _, n := range []string{"openat", "mkdir", "fchmodat", "mmap", "mprotect", "clone", "socket", "ioctl"} {
		if ConstAllow(c.Program, x86, nr64(n)) {
			t.Errorf("%s: served by the action cache although it has an argument check", n)
		}
	}
}

func missOr(s string) string {
	if s == "" {
		return "allowed without an argument check"
	}
	return s
}

// TestConstAllowIsSound: a number the emulator calls cached is allowed by the program whatever
// the arguments (the VM with random ones), and a program that reads an argument before it allows
// is never called cached.
func TestConstAllowIsSound(t *testing.T) {
	c, err := Compile(cacheProfiles(t)["unit"], "x86_64", Options{})
	if err != nil {
		t.Fatal(err)
	}
	vm := newVM(t, c.Program)
	rng := rand.New(rand.NewPCG(28, 1))
	for _, id := range []uint32{x86, i386} {
		for nr := uint32(0); nr < 1024; nr++ {
			if !ConstAllow(c.Program, id, nr) {
				continue
			}
			for range 8 {
				var args [6]uint64
				for i := range args {
					args[i] = rng.Uint64()
				}
				if got := vm.run(t, id, nr, args); got != RetAllow {
					t.Fatalf("arch %#x nr %d: cached, but the program answers %s for %x", id, nr, actionName(got), args)
				}
			}
		}
	}
	argFirst := []bpf.Instruction{
		bpf.LoadAbsolute{Off: argLo(0), Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: 1, SkipTrue: 0, SkipFalse: 0},
		bpf.RetConstant{Val: RetAllow},
	}
	raw, err := bpf.Assemble(argFirst)
	if err != nil {
		t.Fatal(err)
	}
	if ConstAllow(raw, x86, 0) {
		t.Error("a program that loads an argument is called cached")
	}
	allowAll, _ := bpf.Assemble([]bpf.Instruction{bpf.RetConstant{Val: RetAllow}})
	if !ConstAllow(allowAll, x86, 0) {
		t.Error("RET ALLOW is not called cached")
	}
}
