package profiler

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/bpf"
	"github.com/sysprof/sysprof/trace"
)

// DefaultRingBufferBytes is the ring buffer size when Options.RingBufferBytes is 0.
const DefaultRingBufferBytes = 16 << 20

// EventsRingBytes is the most learn.c's first ring holds (events, the one read from the start
// of a run); the ring buffer of Options.RingBufferBytes (spill) is mapped only when a run fills
// that one. 512 KiB holds what a compile sends (~45 KB) ten times over; find /usr -xdev sends
// 3 MB through it without filling it (the reader is woken at a quarter).
const EventsRingBytes = 512 << 10

// leftoverGrace is how long the rest of the tree may take to finish after the main command
// exited before what is still running is killed.
const leftoverGrace = 250 * time.Millisecond

// pollInterval is how often the ring buffer is drained while events come (the kernel side
// does not ask for it); pollIdle the longest wait while none do: the wait doubles up to it.
const (
	pollInterval = 10 * time.Millisecond
	pollIdle     = 80 * time.Millisecond
)

// newPathsToSort is the fewest new paths the reader sorts at a time while the command runs (and
// never fewer than a 32nd of those sorted: sortNewPaths). It is idle most of the time: the
// paths are ordered for the trace then, not after the command.
const newPathsToSort = 1024

// interruptGrace is how long the command gets to exit after SIGTERM when ctx is cancelled.
const interruptGrace = 3 * time.Second

// Options says what to run and how.
type Options struct {
	Command []string // argv; Command[0] is looked up in the PATH of Env
	Dir     string   // working directory ("" = current)
	Env     []string // nil = os.Environ()
	// Stdin, Stdout, Stderr default to the process's own. *os.File values are handed to the
	// command as they are (TTY included); other readers and writers are copied.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// RingBufferBytes is the size of the event ring buffer a run spills into once its first
	// ring (EventsRingBytes, or this size when smaller) is full: a power of two and a multiple
	// of the page size. 0 means DefaultRingBufferBytes.
	RingBufferBytes int
	Debug           bool // put the full verifier log into load errors
}

// Run runs opts.Command permissively in a fresh cgroup2 directory, records what its whole
// process tree does with eBPF, and returns the Trace.
//
// The trace is returned whenever the command ran, even when it failed or was interrupted
// (ctx cancelled, or SIGINT/SIGTERM/SIGHUP received and forwarded): then Incomplete is set with a
// reason. Errors: ErrNeedRoot, *LoadError (BPF could not be loaded or attached), *CommandError
// (the command was not found, 127, or not executable, 126), and cgroup errors.
//
// Requires Linux 5.14 (cgroup.kill), BTF, root or CAP_BPF+CAP_PERFMON, and a cgroup2 mount.
// Call Settle before the process exits.
func Run(ctx context.Context, opts Options) (tr *trace.Trace, err error) {
	rs, err := prepareRun(opts)
	if err != nil {
		return nil, err
	}
	Settle() // the last run's probe is handed on before this one looks for it
	ph := newPhases()
	// A probe of the default shape may be taken over from the last run (warm.go): while the
	// run's cgroups are made, which the take-over does not need.
	claim := startClaim(warmShape(rs.ringBytes, opts.Debug))
	cg, err := newRunCgroup()
	if err != nil {
		claim.drop()
		return nil, err
	}
	defer func() {
		if rerr := cg.remove(); rerr != nil && err == nil && tr == nil {
			err = rerr
		}
	}()

	pk := newPeaks(cg)
	defer pk.remove()
	ph.mark("cgroup")
	p, err := loadProbe(cg.id, cg.dir, rs.ringBytes, opts.Debug, ph, claim.wait())
	if err != nil {
		if os.Geteuid() != 0 && errors.Is(err, unix.EPERM) {
			return nil, fmt.Errorf("%w: %v", ErrNeedRoot, err)
		}
		return nil, err
	}
	defer closeInBackground(p)
	ph.mark("attach")

	rd, spill, err := p.ringReader()
	if err != nil {
		return nil, &LoadError{Step: "open ring buffer", Err: err}
	}
	// Unmapping a 16 MB ring takes ~1 ms: done in the background, once the reader is stopped
	// (the defer below that stops it runs first).
	defer func() {
		go func() {
			rd.Close()
			spill.close()
		}()
	}()

	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return nil, err
	}
	start := time.Now()
	col := newCollector(uint64(ts.Nano()), start)
	reading := startReading(rd, p.objs.Events, spill, col)
	defer func() {
		if !reading.stopped {
			reading.stop()
			col.hasher.finish()
		}
	}()

	cmd := rs.command(opts, cg.fd)
	sigc := make(chan os.Signal, 8)
	signal.Notify(sigc, unix.SIGINT, unix.SIGTERM, unix.SIGHUP)
	defer signal.Stop(sigc)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := pk.start(cmd); err != nil {
		code := 126
		if errors.Is(err, os.ErrNotExist) {
			code = 127
		}
		return nil, &CommandError{Name: opts.Command[0], Code: code, Err: err}
	}

	t := &trace.Trace{
		Version: trace.Version,
		Command: append([]string(nil), opts.Command...),
		Context: Context(rs.dir, rs.env),
		Host:    hostInfo(),
		Start:   start,
	}
	interrupted, ctrlC := waitCommand(ctx, cmd, cg, sigc)
	t.ExitCode = exitCode(cmd.ProcessState)
	ph.mark("command")
	grace := leftoverGrace
	if ctrlC {
		// The command's workers got the same Ctrl-C (or their parent's word) and may still be
		// shutting down (next dev's server writes its cache on the way out).
		grace = interruptGrace
	}
	endLeftovers(ctx, cg, p, t, grace)
	t.Peaks = pk.read()
	if interrupted != "" {
		t.Reasons = append([]string{interrupted}, t.Reasons...)
	}
	ph.mark("leftovers")
	if err := finishTrace(p, col, reading, t, ph); err != nil {
		return nil, err
	}
	t.Peaks.Written, t.Peaks.WrittenFiles, t.Peaks.WritesMeasured = measureWrites(t)
	return t, nil
}

// runSpec is a learn run's command resolved on this host.
type runSpec struct {
	path      string // the executable
	dir       string // the working directory, absolute
	env       []string
	ringBytes int
}

// prepareRun resolves opts before anything is created: the environment, the working
// directory, the executable (CommandError), the privileges (ErrNeedRoot) and the ring buffer's
// size.
func prepareRun(opts Options) (runSpec, error) {
	var rs runSpec
	if len(opts.Command) == 0 {
		return rs, errors.New("no command to run")
	}
	rs.env = opts.Env
	if rs.env == nil {
		rs.env = os.Environ()
	}
	dir := opts.Dir
	if dir == "" {
		var err error
		if dir, err = os.Getwd(); err != nil {
			return rs, err
		}
	}
	var err error
	if rs.dir, err = filepath.Abs(dir); err != nil {
		return rs, err
	}
	if rs.path, err = resolveCommand(opts.Command[0], rs.dir, rs.env); err != nil {
		return rs, err
	}
	if err := checkPrivileges(); err != nil {
		return rs, err
	}
	rs.ringBytes = opts.RingBufferBytes
	if rs.ringBytes == 0 {
		rs.ringBytes = DefaultRingBufferBytes
	}
	if page := os.Getpagesize(); rs.ringBytes < page || rs.ringBytes%page != 0 || rs.ringBytes&(rs.ringBytes-1) != 0 {
		return rs, fmt.Errorf("ring buffer size %d: must be a power of two and a multiple of %d", rs.ringBytes, page)
	}
	return rs, nil
}

// command is the command of the run, born into the run's cgroup (cgroupFD).
func (rs runSpec) command(opts Options, cgroupFD int) *exec.Cmd {
	return &exec.Cmd{
		Path:        rs.path,
		Args:        opts.Command,
		Dir:         rs.dir,
		Env:         rs.env,
		Stdin:       orFile(opts.Stdin, os.Stdin),
		Stdout:      orWriter(opts.Stdout, os.Stdout),
		Stderr:      orWriter(opts.Stderr, os.Stderr),
		SysProcAttr: &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: cgroupFD},
		// A daemon the command left behind may hold the output pipes (when Stdout is not an
		// *os.File); do not wait for it to close them.
		WaitDelay: leftoverGrace,
	}
}

// ringReading drains the ring buffer into the collector in the background until stop.
type ringReading struct {
	rd       *ringbuf.Reader
	spill    *spillRing
	waker    *os.File      // the ring in Go's netpoller; nil: a timer only
	wake     chan struct{} // closed by stop
	stopping atomic.Bool
	done     chan error
	stopped  bool
	// bytes read from each ring, headers included (SYSPROF_TIMINGS prints them)
	eventsBytes, spillBytes int
}

// startReading starts draining ring (read through rd) into col. learn.c does not wake the
// reader per event, only when the ring is a quarter full (rb_flags): the reader drains then,
// every pollInterval while events come (up to pollIdle while none do), and when stopped,
// sorting the new paths meanwhile.
//
// It waits in Go's netpoller, not in the reader's own epoll_wait: a goroutine blocked in a
// system call keeps its P until sysmon takes it back, and one taken back every poll kept sysmon
// waking every 20 us (10–15% of sysprof's CPU samples in a learn of find). Each look at the ring
// is an epoll_wait that does not block (a deadline of now).
//
// Once a run filled ring, learn.c writes to spill instead: each time ring is empty the reader
// drains spill too, and then polls every pollInterval (learn.c never wakes it for spill).
func startReading(rd *ringbuf.Reader, ring *ebpf.Map, spill *spillRing, col *collector) *ringReading {
	r := &ringReading{rd: rd, spill: spill, waker: ringWaker(ring), wake: make(chan struct{}), done: make(chan error, 1)}
	go func() {
		var rec ringbuf.Record
		every, got := pollInterval, false
		for {
			rd.SetDeadline(time.Now())
			err := rd.ReadInto(&rec)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				if err := r.readSpill(col, &rec); err != nil {
					if r.waker != nil {
						r.waker.Close()
					}
					r.done <- err
					return
				}
				got = got || r.spill.rd != nil
				col.sortNewPaths(newPathsToSort)
				if got || r.waker == nil {
					every = pollInterval
				} else {
					every = min(2*every, pollIdle)
				}
				got = false
				r.wait(every)
				continue
			}
			if r.waker != nil {
				r.waker.Close()
			}
			if err != nil {
				if errors.Is(err, ringbuf.ErrFlushed) {
					err = r.readSpill(col, &rec) // the run is over: what spill holds is the last
				} else if errors.Is(err, os.ErrClosed) {
					err = nil
				}
				r.done <- err
				return
			}
			got = true
			r.eventsBytes += len(rec.RawSample) + 8
			col.handle(rec.RawSample)
		}
	}()
	return r
}

// readSpill hands col what spill holds once the run wrote there, each record after what ring
// (rd) still holds: a record left in ring was written by a program that found ring not yet
// full, before anything that followed from it went to spill.
func (r *ringReading) readSpill(col *collector, rec *ringbuf.Record) error {
	s := r.spill
	if s.rd == nil {
		if !s.written() {
			return nil
		}
		rd, err := ringbuf.NewReader(s.m)
		if err != nil {
			return fmt.Errorf("map the spill ring buffer: %w", err)
		}
		s.rd = rd
		spills.Add(1)
	}
	s.rd.SetDeadline(time.Now())
	for {
		err := s.rd.ReadInto(&s.rec)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil
		}
		if err != nil {
			return err
		}
		for r.rd.AvailableBytes() > 0 {
			if err := r.rd.ReadInto(rec); err != nil {
				break // a deadline (the ring's records are read the next time round) or closed
			}
			r.eventsBytes += len(rec.RawSample) + 8
			col.handle(rec.RawSample)
		}
		r.spillBytes += len(s.rec.RawSample) + 8
		col.handle(s.rec.RawSample)
	}
}

// spillRing is learn.c's second ring, which a run writes to once the first (events) is full.
// Mapping all of it costs what mapping events did when it was 16 MB (the kernel inserts every
// page at mmap), so it is mapped only once its producer position moved: its first two pages
// (the positions), mapped alone, say so.
type spillRing struct {
	m   *ebpf.Map
	pos []byte          // the consumer's page, then the producer's (read-only)
	rd  *ringbuf.Reader // once written
	rec ringbuf.Record
}

func newSpillRing(m *ebpf.Map) (*spillRing, error) {
	pos, err := unix.Mmap(m.FD(), 0, 2*os.Getpagesize(), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("map the spill ring buffer's positions: %w", err)
	}
	return &spillRing{m: m, pos: pos}, nil
}

// written reports whether the ring holds records not read yet.
func (s *spillRing) written() bool {
	cons := atomic.LoadUint64((*uint64)(unsafe.Pointer(&s.pos[0])))
	prod := atomic.LoadUint64((*uint64)(unsafe.Pointer(&s.pos[os.Getpagesize()])))
	return prod != cons
}

func (s *spillRing) close() {
	if s.rd != nil {
		s.rd.Close()
	}
	unix.Munmap(s.pos)
}

// ringWaker is a copy of ring's fd in Go's netpoller (its readiness is the kernel's wakeup), or
// nil.
func ringWaker(ring *ebpf.Map) *os.File {
	fd, err := unix.FcntlInt(uintptr(ring.FD()), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil
	}
	return os.NewFile(uintptr(fd), "learn ring buffer")
}

// wait returns after d, when the kernel wakes the reader, or when stop is called.
func (r *ringReading) wait(d time.Duration) {
	if r.waker == nil || r.waker.SetReadDeadline(time.Now().Add(d)) != nil {
		select {
		case <-time.After(d):
		case <-r.wake:
		}
		return
	}
	if r.stopping.Load() {
		return // stop's deadline may have been overwritten above
	}
	rc, err := r.waker.SyscallConn()
	if err != nil {
		return
	}
	first := true
	rc.Read(func(uintptr) bool {
		ready := !first
		first = false
		return ready
	})
}

// stop makes the reader return what is in the ring (Flush), then end, and returns its error.
func (r *ringReading) stop() error {
	r.stopped = true
	r.stopping.Store(true)
	if err := r.rd.Flush(); err != nil {
		r.rd.Close()
	}
	close(r.wake)
	if r.waker != nil {
		r.waker.SetReadDeadline(time.Unix(1, 0))
	}
	return <-r.done
}

// waitCommand waits for cmd, forwarding the signals sysprof gets (sigc) and ending it when ctx
// is done: SIGTERM, then after interruptGrace the whole cgroup killed. It returns why the run
// was interrupted, or "".
//
// Ctrl-C (SIGINT alone) is how a dev server's run ends: a command that then exits by itself
// (by the signal or its own handler) ended normally, and the run is not interrupted. What it
// left running is still killed and said (endLeftovers); ctrlC reports that ending.
func waitCommand(ctx context.Context, cmd *exec.Cmd, cg *runCgroup, sigc <-chan os.Signal) (interrupted string, ctrlC bool) {
	waitc := make(chan error, 1)
	go func() { waitc <- cmd.Wait() }()
	var killTimer <-chan time.Time
	ctxDone := ctx.Done()
	for {
		select {
		case <-waitc:
			if interrupted == "interrupted by "+unix.SignalName(unix.SIGINT) {
				return "", true
			}
			return interrupted, false
		case s := <-sigc:
			sig := s.(syscall.Signal)
			if interrupted == "" || sig != unix.SIGINT && strings.HasSuffix(interrupted, unix.SignalName(unix.SIGINT)) {
				interrupted = "interrupted by " + unix.SignalName(sig)
			}
			if !(sig == unix.SIGINT && childGotTTYSignal(cmd.Stdin)) {
				cmd.Process.Signal(sig)
			}
		case <-ctxDone:
			ctxDone = nil
			if interrupted == "" {
				interrupted = "interrupted: " + context.Cause(ctx).Error()
			}
			cmd.Process.Signal(unix.SIGTERM)
			killTimer = time.After(interruptGrace)
		case <-killTimer:
			cg.kill()
		}
	}
}

// endLeftovers gives the rest of the tree (double-forked daemons) grace after the command
// exited, then kills it, and says so in t.
func endLeftovers(ctx context.Context, cg *runCgroup, p *probe, t *trace.Trace, grace time.Duration) {
	if cg.waitEmpty(ctx, grace) {
		return
	}
	if n := len(cg.pids()); n > 0 {
		t.Reasons = append(t.Reasons, fmt.Sprintf("%d process(es) still running after the command exited were killed: what they did next is not recorded", n))
	}
	cg.kill()
	if !cg.waitEmpty(context.Background(), 5*time.Second) {
		t.Reasons = append(t.Reasons, "processes in the run cgroup did not exit after cgroup.kill")
		p.warmable = false // their next syscalls would land in maps handed on as empty
	}
}

// finishTrace completes t once the run cgroup is empty: it drains the ring buffer, then reads
// the in-kernel aggregates while the collector fills in the rest. Once the cgroup is empty
// nothing produces any more: a probe to be handed on is detached by close, in the background.
// Others (--debug, processes that outlived cgroup.kill) are detached first.
func finishTrace(p *probe, col *collector, reading *ringReading, t *trace.Trace, ph *phases) error {
	p.progStats()
	if !p.warmable {
		p.detach()
		ph.mark("detach")
	}
	rerr := reading.stop()
	ph.mark("drain")
	reading.stats()
	col.hasher.finish()
	ph.mark("hash")
	t.End = time.Now()
	if rerr != nil {
		t.Reasons = append(t.Reasons, "reading the ring buffer failed: "+rerr.Error())
	}
	// The aggregates only share reads of the collector's exe names with fill.
	aggregated := make(chan error, 1)
	go func() { aggregated <- readAggregates(p, col, t) }()
	col.fill(t)
	col.hasher.save()
	ph.mark("fill")
	if err := <-aggregated; err != nil {
		return err
	}
	p.ended = true
	addRootExecve(t)
	ph.mark("aggregates")
	if col.undecodable > 0 {
		t.Reasons = append(t.Reasons, fmt.Sprintf("BUG: %d events could not be decoded", col.undecodable))
	}
	t.Incomplete = len(t.Reasons) > 0
	return nil
}

func orFile(r io.Reader, def *os.File) io.Reader {
	if r == nil {
		return def
	}
	return r
}

func orWriter(w io.Writer, def *os.File) io.Writer {
	if w == nil {
		return def
	}
	return w
}

// resolveCommand finds the executable like a shell would, relative to dir for names with a
// slash and in the PATH of env otherwise.
func resolveCommand(name, dir string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if err := checkExecutable(name, p); err != nil {
			return "", err
		}
		return p, nil
	}
	pathEnv, _ := envLookup(env, "PATH")
	return lookPathIn(name, pathEnv)
}

// checkPrivileges returns ErrNeedRoot unless the process can load tracing programs.
func checkPrivileges() error {
	if os.Geteuid() == 0 {
		return nil
	}
	const capPerfmon, capBPF = 38, 39
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return ErrNeedRoot
	}
	has := func(c uint) bool { return data[c/32].Effective&(1<<(c%32)) != 0 }
	if !has(capBPF) || !has(capPerfmon) {
		return ErrNeedRoot
	}
	return nil
}

// childGotTTYSignal reports whether a SIGINT was most likely typed at the terminal: the
// command's stdin is a terminal whose foreground process group is ours (the command is in it
// too), so the kernel already sent the signal to the command and forwarding it would deliver it
// twice. A SIGINT sent with kill(2) to sysprof alone is then not forwarded; SIGTERM and SIGHUP
// always are.
func childGotTTYSignal(stdin io.Reader) bool {
	f, ok := stdin.(*os.File)
	if !ok {
		return false
	}
	fg, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCGPGRP)
	return err == nil && fg == unix.Getpgrp()
}

// exitCode is the shell's view of how the command ended: its status, or 128+N for signal N.
func exitCode(ps *os.ProcessState) int {
	if ps == nil {
		return -1
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// readAggregates reads the syscall and argument maps and the loss counters into t.
func readAggregates(p *probe, col *collector, t *trace.Trace) error {
	cached, err := p.cpuCached()
	if err != nil {
		return err
	}
	err = readAll(p.objs.Syscalls, func(k bpf.LearnScKey, n uint64) {
		n += cached[k]
		delete(cached, k)
		t.Syscalls = append(t.Syscalls, col.syscall(k, n))
	})
	if err != nil {
		return fmt.Errorf("read syscall counts: %w", err)
	}
	for k, n := range cached { // counted in the map first, so none is expected here
		t.Syscalls = append(t.Syscalls, col.syscall(k, n))
	}
	err = readAll(p.objs.Args, func(k bpf.LearnArgKey, n uint64) {
		t.Args = append(t.Args, col.arg(k, n))
	})
	if err != nil {
		return fmt.Errorf("read argument values: %w", err)
	}
	for exe, n := range col.memfdCode {
		t.Args = append(t.Args, trace.ArgValue{Exe: exe, Syscall: "memfd_create", Kind: trace.ArgMemfdExec, Value: unix.MFD_EXEC, Count: n})
	}
	cnt, err := p.counters()
	if err != nil {
		return err
	}
	ring, missed := cnt[bpf.LearnCounterCNT_RINGBUF_DROPS]+cnt[bpf.LearnCounterCNT_SCRATCH_BUSY], cnt[bpf.LearnCounterCNT_EXIT_MISSED]
	t.Loss.RingbufDrops = ring + missed
	t.Loss.MapFull = cnt[bpf.LearnCounterCNT_SYSCALLS_FULL] + cnt[bpf.LearnCounterCNT_ARGS_FULL] +
		cnt[bpf.LearnCounterCNT_TASKS_FULL] + cnt[bpf.LearnCounterCNT_STASH_FULL]
	if ring > 0 {
		t.Reasons = append(t.Reasons, fmt.Sprintf("%d events lost: the ring buffer was full", ring))
	}
	if missed > 0 {
		t.Reasons = append(t.Reasons, fmt.Sprintf("%d file accesses lost: the kernel skipped learn's syscall-exit program (another BPF program was running on that CPU)", missed))
	}
	if t.Loss.MapFull > 0 {
		t.Reasons = append(t.Reasons, fmt.Sprintf("%d observations lost: in-kernel maps were full", t.Loss.MapFull))
	}
	sort.Slice(t.Syscalls, func(i, j int) bool {
		a, b := t.Syscalls[i], t.Syscalls[j]
		if a.Exe != b.Exe {
			return a.Exe < b.Exe
		}
		if a.Arch != b.Arch {
			return a.Arch < b.Arch
		}
		return a.Name < b.Name
	})
	sort.Slice(t.Args, func(i, j int) bool {
		a, b := t.Args[i], t.Args[j]
		if a.Exe != b.Exe {
			return a.Exe < b.Exe
		}
		if a.Syscall != b.Syscall {
			return a.Syscall < b.Syscall
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return a.Value < b.Value
	})
	return nil
}

// readAll calls each for every entry of the hash map m, read in batches: iterating key by key
// scans the buckets (262144 for syscalls) from each key to the next, ~1 ms for a few dozen
// entries. Where the kernel has no batch operations it iterates.
func readAll[K, V any](m *ebpf.Map, each func(K, V)) error {
	keys := make([]K, 4096) // at least one hash bucket's worth (ENOSPC otherwise)
	vals := make([]V, len(keys))
	var cursor ebpf.MapBatchCursor
	for first := true; ; first = false {
		n, err := m.BatchLookup(&cursor, keys, vals, nil)
		if first && errors.Is(err, ebpf.ErrNotSupported) {
			var k K
			var v V
			it := m.Iterate()
			for it.Next(&k, &v) {
				each(k, v)
			}
			return it.Err()
		}
		for i := range n {
			each(keys[i], vals[i])
		}
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// addRootExecve adds the root's first execve, which happens before the gate (the exec is what
// opens it) but which the command needs.
func addRootExecve(t *trace.Trace) {
	if len(t.Processes) == 0 {
		return
	}
	exe := t.Processes[0].Exe
	nr := bpf.NativeArch.SyscallNames["execve"]
	for i := range t.Syscalls {
		s := &t.Syscalls[i]
		if s.Exe == exe && s.Arch == bpf.NativeArch.Name && s.Nr == nr {
			s.Count++
			return
		}
	}
	t.Syscalls = append(t.Syscalls, trace.SyscallCount{Exe: exe, Arch: bpf.NativeArch.Name, Name: "execve", Nr: nr, Count: 1})
	sort.SliceStable(t.Syscalls, func(i, j int) bool {
		a, b := t.Syscalls[i], t.Syscalls[j]
		if a.Exe != b.Exe {
			return a.Exe < b.Exe
		}
		if a.Arch != b.Arch {
			return a.Arch < b.Arch
		}
		return a.Name < b.Name
	})
}
