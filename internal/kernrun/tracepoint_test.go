package kernrun

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/hostcheck"
	"github.com/sysprof/sysprof/internal/testutil"
)

// Tracefs is doctor's tracefs, with its events (mounted when nothing provided it).
func TestTracefs(t *testing.T) {
	testutil.RequireRoot(t)
	d, err := Tracefs()
	testutil.RequireNoErr(t, "tracefs", err)
	if _, err := os.Stat(filepath.Join(d, "events", "syscalls")); err != nil {
		t.Errorf("tracefs %s has no syscall events: %v", d, err)
	}
	if p, err := hostcheck.TracefsMount(); err != nil || p != d {
		t.Errorf("doctor finds tracefs at %q (%v), runs at %q", p, err, d)
	}
}

// AttachTracepoint links a program to a tracepoint with a cookie; a tracepoint the kernel lacks
// is none; the same program on the same tracepoint twice is EEXIST (the guard relies on it).
func TestAttachTracepoint(t *testing.T) {
	testutil.RequireRoot(t)
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type:         ebpf.TracePoint,
		Instructions: asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()},
		License:      "GPL",
	})
	testutil.RequireNoErr(t, "load a tracepoint program", err)
	defer prog.Close()
	if tp, err := AttachTracepoint("syscalls", "sys_exit_no_such_call", prog, 1); err != nil || tp.Perf != -1 || tp.Link != -1 {
		t.Errorf("absent tracepoint: %+v %v", tp, err)
	}
	tp, err := AttachTracepoint("syscalls", "sys_exit_getppid", prog, 7)
	if err != nil || tp.Perf < 0 || tp.Link < 0 {
		t.Fatalf("attach: %+v %v", tp, err)
	}
	defer ClosePerfEvents([]int{tp.Perf})
	defer unix.Close(tp.Link)
	dup, err := unix.FcntlInt(uintptr(tp.Link), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	l, err := link.NewFromFD(dup)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	info, err := l.Info()
	if err != nil || info.PerfEvent() == nil || info.PerfEvent().Tracepoint() == nil || info.PerfEvent().Tracepoint().Cookie != 7 {
		t.Errorf("link info %+v %v, want a perf event link with cookie 7", info, err)
	}
	if again, err := AttachTracepoint("syscalls", "sys_exit_getppid", prog, 8); !errors.Is(err, unix.EEXIST) {
		t.Errorf("attached twice: %+v %v, want EEXIST", again, err)
	}
}
