package guard

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/testutil"
)

// TestGuardHooksOnlyPathExitsTheRunMayMake: what the guard costs a running command is set by
// where it attaches (issue 28). A run attaches its file program to the exit tracepoints of the
// path syscalls its profile lets it make, and nowhere else: not to the raw sys_enter/sys_exit
// hooks (~+40 ns on every syscall of the host), not to a syscall the run cannot make, not to
// one that cannot fail with a file denial (getppid, read).
func TestGuardHooksOnlyPathExitsTheRunMayMake(t *testing.T) {
	testutil.RequireRoot(t)
	withPinRoot(t)
	t.Cleanup(SwapWarm(t.TempDir(), 10*time.Millisecond))
	allowed := []string{"openat", "execve", "connect", "getppid", "read", "futex"}
	g, err := Start(Config{Files: true, MayExecute: func(name string) bool { return slices.Contains(allowed, name) }})
	testutil.RequireNoErr(t, "start the guard", err)
	defer g.Close()
	testutil.RequireNoErr(t, "guard setup", g.Wait())

	prog := map[ebpf.ProgramID]bool{}
	var got []string
	for _, tp := range g.tps {
		dup, err := unix.FcntlInt(uintptr(tp.Link), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		l, err := link.NewFromFD(dup) // closing it drops this reference only
		if err != nil {
			t.Fatal(err)
		}
		info, err := l.Info()
		l.Close()
		if err != nil {
			t.Fatal(err)
		}
		prog[info.Program] = true
		pe := info.PerfEvent()
		if info.Type != link.PerfEventType || pe == nil || pe.Tracepoint() == nil {
			t.Errorf("link %d is a %v, not a syscall tracepoint", info.ID, info.Type)
			continue
		}
		got = append(got, pe.Tracepoint().Tracepoint)
	}
	slices.Sort(got)
	want := []string{"sys_exit_connect", "sys_exit_execve", "sys_exit_openat"}
	if !slices.Equal(got, want) {
		t.Errorf("attached to %v, want exactly %v (the path syscalls the run may make)", got, want)
	}
	// No other hook runs the file program (a raw_tp or tp_btf attach would tax every syscall).
	it := new(link.Iterator)
	defer it.Close()
	for it.Next() {
		info, err := it.Link.Info()
		if err != nil || !prog[info.Program] {
			continue
		}
		pe := info.PerfEvent()
		if pe == nil || pe.Tracepoint() == nil || !strings.HasPrefix(pe.Tracepoint().Tracepoint, "sys_exit_") {
			t.Errorf("the file program is attached by link %d (%v), not a syscall exit tracepoint", info.ID, info.Type)
		}
	}
}
