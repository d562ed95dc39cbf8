package enforcer

import (
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
)

// Issue 23 item 2, under i386: a profile that lists the i386 ABI (int 0x80, a 32-bit program)
// refuses executable memory there too: mmap2 is checked as mmap is, and the old mmap, whose
// arguments are in memory, is refused whole (libc does not use it). Both are reported with the
// rule that would let them through; a plain i386 mapping still works.
func TestCompatExecMemoryRefusedAndReported(t *testing.T) {
	testutil.RequireRoot(t)
	p := victimProfile()
	p.Syscalls.Architectures = []string{"x86_64", "i386"}
	p.Syscalls.Allow = append(p.Syscalls.Allow, policy.Syscall{Name: "mmap2"})
	o := runVictim(t, p, false, "int80-mmap2-rw", "int80-mmap2-exec", "int80-mmap-exec", "tcp", "ok")
	if o.err != nil || o.code != 0 {
		t.Fatalf("run: %s", o)
	}
	for _, line := range []string{"int80-mmap2-rw: ok", "int80-mmap2-exec: EPERM", "int80-mmap-exec: EPERM", "tcp: ok"} {
		if !strings.Contains(o.stdout, line+"\n") {
			t.Errorf("want %q in the output:\n%s", line, o)
		}
	}
	for _, sc := range []string{"mmap2", "mmap"} {
		d := o.denial(sc)
		if d == nil {
			t.Errorf("no %s denial in the report:\n%s", sc, o)
			continue
		}
		if d.Arch != "i386" || d.Allowed || d.Suggest != "syscalls.args: "+sc+" arg 2: + PROT_EXEC" {
			t.Errorf("%s denial: arch %q, suggestion %q, allowed %v; want i386, the PROT_EXEC rule, refused", sc, d.Arch, d.Suggest, d.Allowed)
		}
	}
}
