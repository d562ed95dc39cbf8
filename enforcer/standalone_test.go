package enforcer

import (
	"encoding/binary"
	"slices"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/seccomp"
)

func TestEncodeStandaloneReplacesNotify(t *testing.T) {
	prog := []bpf.RawInstruction{
		{Op: 0x20, K: 4},                        // ld [4]
		{Op: 0x15, Jt: 1, Jf: 0, K: 0xc000003e}, // jeq
		{Op: 0x06, K: retNotify},
		{Op: 0x06, K: retAllow},
	}
	b := seccomp.Standalone(prog)
	if len(b) != 8*len(prog) {
		t.Fatalf("len = %d, want %d", len(b), 8*len(prog))
	}
	if k := binary.LittleEndian.Uint32(b[2*8+4:]); k != retErrno(unix.EPERM) {
		t.Errorf("notify return became %#x, want ERRNO(EPERM) %#x", k, retErrno(unix.EPERM))
	}
	if k := binary.LittleEndian.Uint32(b[3*8+4:]); k != retAllow {
		t.Errorf("allow return changed to %#x", k)
	}
	if b[8+2] != 1 || b[8+3] != 0 {
		t.Errorf("jump offsets not kept: jt=%d jf=%d", b[8+2], b[8+3])
	}
}

// The seccomp half depends on the profile and the architecture only: the program is the one
// Compile makes, and a filesystem section this host could not plan (a variable it lacks) does
// not stop it.
func TestCompileSeccompIsPure(t *testing.T) {
	p := testProfile()
	full, err := Compile(p, Env{Vars: map[string]string{"WORKDIR": t.TempDir(), "TMPDIR": "/tmp"}, Arch: "x86_64"})
	if err != nil {
		t.Fatal(err)
	}
	pure, err := CompileSeccomp(p, "x86_64")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(full.Filter, pure.Filter) {
		t.Errorf("CompileSeccomp's program differs from Compile's")
	}
	q := policy.Clone(p)
	q.Filesystem.Write = append(q.Filesystem.Write, policy.PathRule{Path: "$GOPATH/pkg"})
	if _, err := Compile(q, Env{Vars: map[string]string{}, Arch: "x86_64"}); err == nil {
		t.Fatal("Compile planned a rule whose variable this host lacks: the test's premise is gone")
	}
	if _, err := StandaloneFilter(q, Env{Vars: map[string]string{}, Arch: "x86_64"}); err != nil {
		t.Errorf("StandaloneFilter needs the host plan: %v", err)
	}
}

// A profile with a /proc/self write sends opens for writing to sysprof's supervisor; the
// standalone program, with no supervisor, lets them through instead of failing every one.
func TestStandaloneFilterOpensForWriting(t *testing.T) {
	p := testProfile()
	p.Filesystem.Write = append(p.Filesystem.Write, policy.PathRule{Path: "/proc/self/oom_score_adj"})
	b, err := StandaloneFilter(p, Env{Arch: "x86_64"})
	if err != nil {
		t.Fatal(err)
	}
	raw := make([]bpf.RawInstruction, 0, len(b)/8)
	for i := 0; i < len(b); i += 8 {
		raw = append(raw, bpf.RawInstruction{Op: binary.LittleEndian.Uint16(b[i:]), Jt: b[i+2], Jf: b[i+3], K: binary.LittleEndian.Uint32(b[i+4:])})
	}
	write := [6]uint64{0, 0, unix.O_WRONLY}
	if got := newVM(t, raw).run(t, x86, nr64("openat"), write); got != retAllow {
		t.Errorf("standalone openat(O_WRONLY) = %s, want ALLOW", actionName(got))
	}
	c, err := CompileSeccomp(p, "x86_64")
	if err != nil {
		t.Fatal(err)
	}
	if got := newVM(t, c.Filter).run(t, x86, nr64("openat"), write); got != retNotify {
		t.Errorf("supervised openat(O_WRONLY) = %s, want NOTIFY", actionName(got))
	}
}
