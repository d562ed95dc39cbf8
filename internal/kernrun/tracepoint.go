package kernrun

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/hostcheck"
)

var (
	tracefsMu  sync.Mutex
	tracefsDir string // found: kept for the process
)

// Tracefs returns where tracefs is (hostcheck.TracefsMount, doctor's probe, shared), and mounts
// it at /sys/kernel/tracing when nothing provides it (some VMs boot without it): the
// tracepoint ids are read from its events/ directory. Once found, it is kept for the process.
func Tracefs() (string, error) {
	tracefsMu.Lock()
	defer tracefsMu.Unlock()
	if tracefsDir != "" {
		return tracefsDir, nil
	}
	d, err := hostcheck.TracefsMount()
	if errors.Is(err, hostcheck.ErrNotSupported) {
		d = "/sys/kernel/tracing"
		err = unix.Mount("tracefs", d, "tracefs", 0, "")
		if err != nil && !errors.Is(err, unix.EBUSY) {
			return "", fmt.Errorf("tracefs is not mounted and mounting it at %s failed: %w", d, err)
		}
		err = nil
	}
	if err != nil {
		return "", err
	}
	tracefsDir = d
	return d, nil
}

// tracepointIDs caches the ids of tracepoints (tracefs events/GROUP/NAME/id).
var tracepointIDs sync.Map

// TracepointID returns a tracepoint's id (tracefs events/GROUP/NAME/id, read once per
// process); an error matching os.ErrNotExist when this kernel does not have it.
func TracepointID(group, name string) (uint64, error) {
	key := group + "/" + name
	if v, ok := tracepointIDs.Load(key); ok {
		return v.(uint64), nil
	}
	dir, err := Tracefs()
	if err != nil {
		return 0, err
	}
	b, err := os.ReadFile(filepath.Join(dir, "events", group, name, "id"))
	if err != nil {
		return 0, err
	}
	id, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("tracepoint id %q: %w", b, err)
	}
	tracepointIDs.Store(key, id)
	return id, nil
}

// openTracepoint opens the perf event of tracepoint id on CPU 0 (a tracepoint program runs on
// every CPU), disabled or not.
func openTracepoint(id uint64, disabled bool) (int, error) {
	attr := unix.PerfEventAttr{
		Type:        unix.PERF_TYPE_TRACEPOINT,
		Config:      id,
		Sample_type: unix.PERF_SAMPLE_RAW,
		Sample:      1,
		Wakeup:      1,
	}
	if disabled {
		attr.Bits = unix.PerfBitDisabled
	}
	attr.Size = uint32(unsafe.Sizeof(attr))
	return unix.PerfEventOpen(&attr, -1, 0, -1, unix.PERF_FLAG_FD_CLOEXEC)
}

// OpenTracepoint opens the perf event of a tracepoint, enabled, without a program, so that the
// (slower) opens can run while the program is still being loaded (learn). Attach the program
// with SetTracepointProgram; until then the event counts nothing anyone reads.
func OpenTracepoint(group, name string) (int, error) {
	id, err := TracepointID(group, name)
	if err != nil {
		return -1, err
	}
	fd, err := openTracepoint(id, false)
	if err != nil {
		return -1, fmt.Errorf("perf_event_open: %w", err)
	}
	return fd, nil
}

// TracepointLink is a program attached to a tracepoint through a bpf link (AttachTracepoint):
// the perf event and the link, fds of this process (-1: none).
type TracepointLink struct{ Perf, Link int }

// AttachTracepoint opens a disabled perf event for a tracepoint (nothing is recorded: the
// program runs for every CPU all the same) and links prog to it with cookie (the guard). A
// tracepoint this kernel does not have is no error: TracepointLink{-1, -1}.
func AttachTracepoint(group, name string, prog *ebpf.Program, cookie uint64) (TracepointLink, error) {
	none := TracepointLink{-1, -1}
	id, err := TracepointID(group, name)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return none, nil
		}
		return none, err
	}
	pfd, err := openTracepoint(id, true)
	if err != nil {
		return none, fmt.Errorf("perf_event_open %s/%s: %w", group, name, err)
	}
	// BPF_LINK_CREATE with BPF_PERF_EVENT: union bpf_attr's link_create {prog_fd, target_fd,
	// attach_type, flags, perf_event.bpf_cookie} (the kernel makes it close-on-exec).
	var a struct {
		progFD, targetFD, attachType, flags uint32
		cookie                              uint64
		_                                   [32]byte // zero: the kernel checks the rest
	}
	a.progFD, a.targetFD, a.attachType, a.cookie = uint32(prog.FD()), uint32(pfd), uint32(ebpf.AttachPerfEvent), cookie
	lfd, _, errno := unix.Syscall(unix.SYS_BPF, unix.BPF_LINK_CREATE, uintptr(unsafe.Pointer(&a)), unsafe.Sizeof(a))
	if errno != 0 {
		unix.Close(pfd)
		return none, fmt.Errorf("attach %s to %s/%s: %w", prog, group, name, errno)
	}
	return TracepointLink{Perf: pfd, Link: int(lfd)}, nil
}

// SetTracepointProgram attaches prog to a perf event from OpenTracepoint.
func SetTracepointProgram(fd int, prog *ebpf.Program) error {
	if err := unix.IoctlSetInt(fd, unix.PERF_EVENT_IOC_SET_BPF, prog.FD()); err != nil {
		return fmt.Errorf("PERF_EVENT_IOC_SET_BPF: %w", err)
	}
	return nil
}

// ClosePerfEvents closes tracepoint perf events without waiting for them.
//
// Closing a tracepoint perf event waits for an RCU grace period under a global mutex (~65 ms
// each on these VMs, serial even when closed from many threads). So the events are handed to
// a short-lived helper process (`cat` reading a pipe) that inherits them: this process closes
// its copies (cheap: the helper still holds the events), then closes the pipe, and the
// helper's exit pays for the real closes while nobody waits for it. (A helper that exits on
// its own, like `true`, can be gone before this process closes its copies, and then this
// process pays: ~1 s for 28 events, seen.) The programs stay attached for a moment longer;
// they must do nothing harmful then (filter on a cgroup that is empty by then). Without the
// helper the events are closed here, in parallel.
func ClosePerfEvents(fds []int) {
	if len(fds) == 0 {
		return
	}
	HoldPerfEvents(fds).Close()
}

// PerfHolder holds perf events until Close, in a helper process (`cat` reading a pipe) that
// has copies of them: ClosePerfEvents in two steps, the first (starting the helper, ~1 ms) off
// the way out of a run.
type PerfHolder struct {
	files []*os.File // this process's copies
	pw    *os.File   // closing it lets the helper exit; nil: no helper
	cmd   *exec.Cmd
}

// HoldPerfEvents takes over fds (close them with the holder's Close) and starts a helper
// holding copies of them.
func HoldPerfEvents(fds []int) *PerfHolder {
	h := &PerfHolder{files: make([]*os.File, 0, len(fds))}
	for _, fd := range fds {
		h.files = append(h.files, os.NewFile(uintptr(fd), "perf_event"))
	}
	catPath, err := exec.LookPath("cat")
	if err != nil {
		return h
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return h
	}
	cmd := exec.Command(catPath)
	cmd.Stdin = pr
	cmd.ExtraFiles = h.files
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	pr.Close()
	if err != nil {
		pw.Close()
		return h
	}
	h.pw, h.cmd = pw, cmd
	return h
}

// Close closes this process's copies of the events (cheap: the helper holds them) and lets
// the helper exit, which pays for the real closes while nobody waits for it. Without a helper
// the events are closed here, in parallel.
func (h *PerfHolder) Close() {
	if h.pw == nil {
		var wg sync.WaitGroup
		for _, f := range h.files {
			wg.Add(1)
			go func() {
				defer wg.Done()
				f.Close()
			}()
		}
		wg.Wait()
		return
	}
	for _, f := range h.files {
		f.Close()
	}
	h.pw.Close()    // now the helper may exit
	go h.cmd.Wait() // reap it when it is done
}
