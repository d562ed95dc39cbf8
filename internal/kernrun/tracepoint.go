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

// OpenTracepoint opens the perf event of a tracepoint on CPU 0 (a tracepoint program runs on
// every CPU), enabled, without a program, so that the (slower) opens can run while the program
// is still being loaded. Attach the program with SetTracepointProgram; until then the event counts
// nothing anyone reads.
func OpenTracepoint(group, name string) (int, error) {
	dir, err := Tracefs()
	if err != nil {
		return -1, err
	}
	idText, err := os.ReadFile(filepath.Join(dir, "events", group, name, "id"))
	if err != nil {
		return -1, err
	}
	id, err := strconv.ParseUint(strings.TrimSpace(string(idText)), 10, 64)
	if err != nil {
		return -1, fmt.Errorf("tracepoint id %q: %w", idText, err)
	}
	attr := unix.PerfEventAttr{
		Type:        unix.PERF_TYPE_TRACEPOINT,
		Config:      id,
		Sample_type: unix.PERF_SAMPLE_RAW,
		Sample:      1,
		Wakeup:      1,
	}
	attr.Size = uint32(unsafe.Sizeof(attr))
	fd, err := unix.PerfEventOpen(&attr, -1, 0, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return -1, fmt.Errorf("perf_event_open: %w", err)
	}
	return fd, nil
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
