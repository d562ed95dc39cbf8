package guard

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/bpf"
	"github.com/sysprof/sysprof/internal/kernrun"
	"github.com/sysprof/sysprof/internal/phase"
	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/report"
	"github.com/sysprof/sysprof/sandbox"
)

// The guard's object and the kernel's BTF (for its CO-RE relocations) are parsed once per
// process (the kernel's BTF only when no fixups are stored for this kernel, see
// relocatedOptions).
var (
	guardSpec = sync.OnceValues(bpf.LoadGuard)
	kernelBTF = sync.OnceValues(btf.LoadKernelSpec)
	// guardFixups names the guard object's CO-RE fixups on this kernel (an error without a
	// boot id: then every run relocates against the kernel's BTF).
	guardFixups = sync.OnceValues(func() (*kernrun.CoreFixups, error) {
		spec, err := guardSpec()
		if err != nil {
			return nil, err
		}
		return kernrun.NewCoreFixups("guard", spec)
	})
)

// Load is guard.c being opened from its pins or loaded ahead of its run (see
// cache_linux.go): none of it depends on the profile or on the run's cgroup.
type Load struct {
	done chan struct{}
	objs *guardObjs
	err  error
}

// startLoad starts opening or loading guard.c in the background.
func startLoad() *Load {
	l := &Load{done: make(chan struct{})}
	go func() {
		defer close(l.done)
		start := time.Now()
		l.objs, l.err = openGuard()
		phase.Since("guard: open or load", start)
	}()
	return l
}

func (l *Load) wait() (*guardObjs, error) {
	<-l.done
	return l.objs, l.err
}

// close waits for the load and closes what it opened (pins stay).
func (l *Load) close() {
	if o, err := l.wait(); err == nil {
		o.close()
	}
}

// Discard closes a load no run takes, in the background.
func (l *Load) Discard() { go l.close() }

var (
	nextLoadMu sync.Mutex
	nextLoad   *Load
)

// Prewarm starts loading what a root run's guard needs in the background, so that Run finds it
// loaded (the next Run of this process takes it). It does nothing for an ordinary user (no
// guard) and is never required: Run starts the load itself otherwise.
func Prewarm() {
	if os.Geteuid() != 0 {
		return
	}
	nextLoadMu.Lock()
	defer nextLoadMu.Unlock()
	if nextLoad == nil {
		nextLoad = startLoad()
	}
}

// TakeLoad returns the load Prewarm started, or starts one (for Config.Load).
func TakeLoad() *Load {
	nextLoadMu.Lock()
	defer nextLoadMu.Unlock()
	l := nextLoad
	nextLoad = nil
	if l == nil {
		l = startLoad()
	}
	return l
}

// Config is what a run's guard enforces and reports against.
type Config struct {
	// Files attaches the file-denial program to the exit tracepoints of the path syscalls the
	// command may execute (MayExecute; nil: every one).
	Files      bool
	MayExecute func(syscall string) bool
	// Audit: the supervisor lets refused syscalls continue, so every path syscall is watched.
	Audit bool
	// Hidden are the paths the sandbox hides (an ENOENT under one is a denial); Landlock is the
	// plan's (an EACCES it allows is not the sandbox's).
	Hidden []string
	// Covers are the protected paths bound read-only inside writable trees (and the read-only
	// binds of the private tmp): an EBUSY or EXDEV rename or removal that meets one is a refusal.
	Covers []string
	// BoundProtected are protected paths bound writable whole (an accepted .git): an EBUSY
	// rename or removal of one itself is a refusal too.
	BoundProtected []string
	// Masked are the files shown without their credentials (a .git/config): an open of one is
	// a read of what it held, on the record as a hidden file's.
	Masked   []string
	Landlock *sandbox.Landlock
	// Sockets are the host unix sockets the sandbox covers, or their directories (a failed
	// connect to one is a denial).
	Sockets []string
	// Vars are the path variables a suggestion is written with (paths.Portable).
	Vars map[string]string
	// FileRisk rates a suggestion (nil: unrated).
	FileRisk func(access, portable string) report.Risk
	// MaxDistinct caps the distinct denials listed (the rest are counted; 0: no cap).
	MaxDistinct int
	// Load is what TakeLoad returned (the guard owns it from Start on; nil: Start starts one).
	Load *Load
	// Cgroup is the run's cgroup when the init stage was born into one already (the guard
	// takes it; nil: Start creates one).
	Cgroup *kernrun.Cgroup
}

// Guard is the kernel side of enforcing as root: a per-run cgroup the init stage is born
// into, with guard.c's programs attached to it, and the reader of their denial events.
type Guard struct {
	cfg  Config
	cg   *kernrun.Cgroup
	load *Load      // owns objs
	objs *guardObjs // guard.c's programs and maps (load's)
	ring *ebpf.Map  // the run's ring buffer (slot in rings)
	slot int        // -1: none taken
	// slotHandedOff: the helper that detaches the file program releases the slot.
	slotHandedOff bool
	slotLock      int           // the fd holding the slot's lock (-1: none; slotown_linux.go)
	ownFile       *ebpf.Program // an instance of the file program of this run's own (see attachFiles)
	// names are the path syscalls the file program is attached to (asked for: those this
	// kernel has); warm: the run took over a lingering slot with them (warm_linux.go).
	names  []string
	warm   bool
	keeper *warmKeeper // the helper of the slot taken over (warm), to give it back to
	inRuns bool        // the run has its entry in runs
	// tps: the file-denial program on the path syscalls' exit tracepoints.
	tps []tpLink
	// rd reads the run's ring, mapped only once the ring holds an event (readRing): mapping
	// and unmapping its 4 MiB costs ~2 ms of CPU, and most runs have nothing to report.
	// stopRead wakes the reader waiting for the first event (an eventfd); rdMu guards rd and
	// closing.
	rdMu     sync.Mutex
	rd       *ringbuf.Reader
	closing  bool
	stopRead int
	// hidden watches the hidden files' covers (WatchHidden; nil: none).
	hidden *hiddenWatch
	// rootPid is the init stage (PID 1 of the sandbox, the command's parent; without the sandbox
	// it execs the command): parent chains end there.
	rootPid atomic.Int64
	// rootExe is the init stage's executable when SetRoot named it (before it may exec): an
	// event read after the run ended (drained at Close) can no longer ask /proc.
	rootExe atomic.Pointer[string]
	// rootStays: the root pid stays the init stage for the whole run (the sandbox's PID 1), so a
	// process whose parent it is was started by the init stage, also once both are gone.
	rootStays atomic.Bool

	mu      sync.Mutex
	denials []report.Denial
	index   map[string]int
	kinds   map[string]bool // kindKey of every kept denial
	dropped int
	notes   []string
	lost    uint64 // refusals the kernel side could not record (set by Close)

	wg sync.WaitGroup

	// setupDone is closed when the background setup (Start) has finished; setupErr is its
	// result.
	setupDone chan struct{}
	setupErr  error
}

// Available reports why the root-only guard (eBPF programs and a run cgroup) cannot run here,
// or nil.
func Available() error {
	if os.Geteuid() != 0 {
		return errors.New("needs root (eBPF programs and cgroups)")
	}
	if _, err := kernrun.Cgroup2Mount(); err != nil {
		return err
	}
	return nil
}

// newGuard is Start with a load of its own, waited for: the guard is set up when it returns,
// or nothing is left of it.
func newGuard(cfg Config) (*Guard, error) {
	cfg.Load = startLoad()
	g, err := Start(cfg)
	if err != nil {
		return nil, err
	}
	if err := g.Wait(); err != nil {
		g.cg.Remove()
		return nil, err
	}
	return g, nil
}

// Start creates the run's cgroup and finishes guard.c's setup for it in the background with
// what cfg.Load loads: the file-denial program when cfg.Files. The caller starts the init stage
// meanwhile with UseCgroupFD = g.Cgroup().FD (or started it in cfg.Cgroup), calls Wait before
// releasing it to exec the command, and Close when the command is gone.
//
// Requires root, cgroup2 and Linux 5.15 (bpf_task_pt_regs, bpf_loop).
func Start(cfg Config) (*Guard, error) {
	l := cfg.Load
	if l == nil {
		l = startLoad()
	}
	cfg.Load = nil // the guard's own from here on
	g, err := newGuardCgroup(cfg)
	if err != nil {
		l.Discard()
		return nil, err
	}
	g.load = l
	g.setupDone = make(chan struct{})
	go func() {
		defer close(g.setupDone)
		g.setupErr = g.setup()
		phase.Mark("guard: ready")
	}()
	return g, nil
}

// Wait waits for the background setup and returns its error.
func (g *Guard) Wait() error {
	<-g.setupDone
	return g.setupErr
}

// Cgroup is the run's cgroup (the command is born into it; Close removes it).
func (g *Guard) Cgroup() *kernrun.Cgroup { return g.cg }

// SetRoot names the init stage's pid: parent chains in the report end there.
func (g *Guard) SetRoot(pid int) {
	exe := kernrun.ExeOf(pid)
	g.rootExe.Store(&exe)
	g.rootPid.Store(int64(pid))
}

// rootIsInit reports whether the run's root process is the init stage (not the command it
// execs without the sandbox), asking /proc while it is there.
func (g *Guard) rootIsInit(root int) bool {
	exe := kernrun.ExeOf(root)
	if p := g.rootExe.Load(); exe == "(unknown)" && p != nil {
		exe = *p // gone: what it was when the run started
	}
	return kernrun.IsInitExe(exe)
}

// RootStays says the root pid is the sandbox's PID 1 for the whole run (it does not exec the
// command): denials read after it exited still name the command's parent chain right.
func (g *Guard) RootStays() { g.rootStays.Store(true) }

// newGuardCgroup creates the run's cgroup (or takes cfg.Cgroup): the command is born into it.
func newGuardCgroup(cfg Config) (*Guard, error) {
	g := &Guard{cfg: cfg, slot: -1, slotLock: -1, stopRead: -1, index: map[string]int{}, kinds: map[string]bool{}}
	if cfg.Cgroup != nil {
		g.cg = cfg.Cgroup
		return g, nil
	}
	var err error
	if g.cg, err = kernrun.NewCgroup(); err != nil {
		return nil, err
	}
	phase.Mark("guard: cgroup")
	return g, nil
}

// setup configures guard.c for the run's cgroup and attaches the file program when cfg.Files
// asks for it. On an error it leaves nothing loaded or attached (the cgroup stays: close or the
// caller removes it).
func (g *Guard) setup() (err error) {
	defer func() {
		if err != nil {
			g.detach()
			g.stopReading()
			g.leave()
			g.load.close()
			g.objs = nil
		}
	}()
	objs, err := g.load.wait()
	if err != nil {
		return err
	}
	phase.Mark("guard: wait for load")
	g.objs = objs
	if g.cfg.Files {
		g.names = g.fileNames()
	}
	if err := g.enter(); err != nil {
		return err
	}
	if g.stopRead, err = unix.Eventfd(0, unix.EFD_CLOEXEC); err != nil {
		g.stopRead = -1
		return fmt.Errorf("open guard ring buffer: eventfd: %w", err)
	}
	g.wg.Add(1)
	go g.read()
	phase.Mark("guard: enter the run")

	if g.cfg.Files {
		if err := g.attachFiles(); err != nil {
			return err
		}
		if g.warm {
			phase.Mark("guard: take over a warm file program")
		} else {
			phase.Mark("guard: attach file program")
		}
	}
	if objs.pinned() {
		// Entries of killed runs, after this run is up (nothing waits for it).
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			objs.collectDead()
		}()
	}
	return nil
}

// enter gives the run its state in guard.c's maps, under its cgroup id: a ring buffer slot and
// its configuration (hidden paths).
func (g *Guard) enter() error {
	id := g.cg.ID
	owners, rings := g.objs.maps["slot_owner"], g.objs.maps["rings"]
	// A slot is owned by a process (this one, then the helper that detaches its program). A
	// slot whose program is still attached for the syscalls this run needs comes first.
	if len(g.names) > 0 {
		if slot, tps, names, keeper, lock, ok := claimWarm(g.objs, g.names); ok {
			g.slot, g.tps, g.names, g.warm, g.keeper, g.slotLock = slot, tps, names, true, keeper, lock
		}
	}
	for attempt := 0; g.slot < 0; attempt++ {
		for s := uint32(0); s < ringSlots; s++ {
			var v uint64
			if owners.Lookup(s, &v) == nil {
				continue
			}
			// The slot's lock first (slotown_linux.go); held: its owner is alive.
			lock, held := g.objs.tryLockSlot(s)
			if held {
				continue
			}
			if owners.Update(s, ownerValue(os.Getpid(), lock >= 0), ebpf.UpdateNoExist) == nil {
				g.slot, g.slotLock = int(s), lock
				break
			}
			if lock >= 0 {
				unix.Close(lock)
			}
		}
		if g.slot >= 0 {
			break
		}
		if attempt > 0 || !g.objs.pinned() {
			return fmt.Errorf("all %d guard ring buffer slots are taken", ringSlots)
		}
		g.objs.collectDead() // slots of killed runs
	}
	slot := uint32(g.slot)
	var ring *ebpf.Map
	if err := rings.Lookup(slot, &ring); err != nil {
		// The slot's first use: create its ring buffer (changing a map of maps waits for a
		// grace period, so it is kept for the next run that takes the slot).
		if ring, err = ebpf.NewMap(ringSpec()); err != nil {
			return fmt.Errorf("create a guard ring buffer: %w", err)
		}
		if err := rings.Update(slot, ring, ebpf.UpdateAny); err != nil {
			ring.Close()
			return fmt.Errorf("enter a guard ring buffer: %w", err)
		}
	}
	g.ring = ring

	cfg := bpf.GuardRunCfg{Slot: slot}
	hidden := hiddenPrefixes(g.cfg.Hidden)
	cfg.HiddenN = uint32(len(hidden))
	for i, h := range hidden {
		v := &cfg.Hidden[i]
		v.Len = uint32(len(h))
		var buf [256]byte
		copy(buf[:], h)
		for j := range v.W {
			v.W[j] = binary.NativeEndian.Uint64(buf[j*8:])
		}
	}
	if err := g.objs.maps["runs"].Update(id, &cfg, ebpf.UpdateNoExist); err != nil {
		return fmt.Errorf("enter the run: %w", err)
	}
	g.inRuns = true
	// The slot's file program reports for this run from here on.
	if err := g.objs.maps["slot_cgid"].Update(slot, id, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("enter the run's slot: %w", err)
	}
	return nil
}

// slotTaken says, once the command is done and before the run gives its slot away, when
// guard.c no longer reported for the run: its slot names another run's cgroup, or its entry is
// gone (another sysprof process took the slot or collected the entry), or "".
func (g *Guard) slotTaken() string {
	if g.objs == nil || !g.inRuns || g.slot < 0 {
		return ""
	}
	var cfg bpf.GuardRunCfg
	if err := g.objs.maps["runs"].Lookup(g.cg.ID, &cfg); err != nil {
		return fmt.Sprintf("another sysprof process removed the run's entry from the guard's maps (%v)", err)
	}
	var cur uint64
	if err := g.objs.maps["slot_cgid"].Lookup(uint32(g.slot), &cur); err != nil || cur != g.cg.ID {
		return fmt.Sprintf("another sysprof process took the run's guard slot %d (it reports for cgroup %d)", g.slot, cur)
	}
	return ""
}

// leave removes the run's entries from guard.c's maps (after everything is detached and the
// ring buffer is read) and returns its counters.
func (g *Guard) leave() (cfg bpf.GuardRunCfg) {
	if g.objs == nil {
		return cfg
	}
	id := g.cg.ID
	if g.inRuns {
		runs := g.objs.maps["runs"]
		_ = runs.Lookup(id, &cfg)
		_ = runs.Delete(id)
		g.inRuns = false
	}
	if g.ring != nil {
		g.ring.Close()
		g.ring = nil
	}
	if g.slot >= 0 && !g.slotHandedOff {
		_ = g.objs.maps["slot_cgid"].Update(uint32(g.slot), uint64(0), ebpf.UpdateAny)
		_ = g.objs.maps["slot_owner"].Delete(uint32(g.slot))
	}
	if g.slotLock >= 0 {
		// After the entry is gone (or a helper holds the lock too).
		unix.Close(g.slotLock)
		g.slotLock = -1
	}
	g.slot = -1
	return cfg
}

// detach detaches the file program from the run (its links and perf events are handed to a
// helper process, which then releases the slot: see handOff).
func (g *Guard) detach() {
	if len(g.tps) > 0 {
		g.slotHandedOff = g.closeTracepoints()
	}
	g.tps = nil
}

// readRing returns a reader of the run's ring once it holds an event, or nil when the run is
// closing (stopReading) with the ring empty.
func (g *Guard) readRing() *ringbuf.Reader {
	fds := []unix.PollFd{{Fd: int32(g.ring.FD()), Events: unix.POLLIN}, {Fd: int32(g.stopRead), Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(fds, -1)
		if err == unix.EINTR {
			continue
		}
		if err != nil || fds[0].Revents != 0 {
			break // an event (or poll failed: map it and read as always)
		}
		if fds[1].Revents != 0 {
			// Closing: an event that came after the poll is still read.
			ring := fds[:1]
			if n, err := unix.Poll(ring, 0); err == nil && n == 0 {
				return nil
			}
			break
		}
	}
	rd, err := ringbuf.NewReader(g.ring)
	if err != nil {
		g.mu.Lock()
		g.notes = append(g.notes, fmt.Sprintf("guard: open its ring buffer: %v (its file denials were refused but not recorded)", err))
		g.lost++
		g.mu.Unlock()
		return nil
	}
	g.rdMu.Lock()
	defer g.rdMu.Unlock()
	g.rd = rd
	if g.closing {
		rd.Flush() // read what is there, then stop
	}
	return rd
}

// stopReading makes the reader read what the ring holds and stop, waits for it and closes it.
func (g *Guard) stopReading() {
	if g.stopRead < 0 {
		return
	}
	g.rdMu.Lock()
	g.closing = true
	if g.rd != nil {
		g.rd.Flush()
	}
	g.rdMu.Unlock()
	_, _ = unix.Write(g.stopRead, []byte{1, 0, 0, 0, 0, 0, 0, 0})
	g.wg.Wait()
	if g.rd != nil {
		g.rd.Close()
		g.rd = nil
	}
	unix.Close(g.stopRead)
	g.stopRead = -1
}

// read turns ring buffer events into denials until the reader is closed.
func (g *Guard) read() {
	defer g.wg.Done()
	rd := g.readRing()
	if rd == nil {
		return
	}
	var rec ringbuf.Record
	for {
		if err := rd.ReadInto(&rec); err != nil {
			if errors.Is(err, ringbuf.ErrFlushed) || errors.Is(err, ringbuf.ErrClosed) || errors.Is(err, os.ErrClosed) {
				return // drained at close
			}
			continue
		}
		if len(rec.RawSample) < 4 {
			continue
		}
		var ev bpf.GuardGuardEvent
		hdr := binary.Size(ev)
		if len(rec.RawSample) < hdr {
			continue
		}
		if err := binary.Read(bytes.NewReader(rec.RawSample[:hdr]), binary.NativeEndian, &ev); err != nil {
			continue
		}
		if ev.Cgid != g.cg.ID {
			continue // another run's, left in a reused ring buffer
		}
		tail := newTail(rec.RawSample[hdr:])
		exe := tail.components(int(ev.ExeLen))
		pexe := tail.components(int(ev.PexeLen))
		if root := int(g.rootPid.Load()); kernrun.IsInitExe(exe) && (root == 0 || int(ev.Tgid) == root) {
			continue // the init stage (sysprof itself) before it execs the command
		}
		if ev.Kind == uint32(bpf.GuardGuardKindGK_FILE) {
			ds, parents := g.fileDenials(&ev, exe, pexe, tail)
			for _, d := range ds {
				if !g.known(d) {
					d.Parents = parents() // only a new entry keeps its parents
				}
				g.record(d)
			}
		}
	}
}

// who names the executable (as the kernel saw it at the call) and gives its parent chain; pexe
// is the parent's executable as the kernel saw it, for when the processes are gone. The chain
// walks /proc, most of an event's cost: only a denial the report will list asks for it (read).
func (g *Guard) who(ev *bpf.GuardGuardEvent, exe, pexe string) (string, func() []string) {
	if exe == "" {
		if exe = kernrun.ExeOf(int(ev.Tgid)); exe == "(unknown)" {
			exe = "(exited: " + commString(ev.Comm[:]) + ")"
		}
	}
	return exe, func() []string {
		root := int(g.rootPid.Load())
		if ev.Ptgid > 0 && int(ev.Ptgid) == root && (g.rootStays.Load() || kernrun.IsInitExe(pexe) || pexe == "" && g.rootIsInit(root)) {
			return nil // the command itself: its parent is the init stage, PID 1 of the sandbox
		}
		if ev.Ptgid > 0 && int(ev.Tgid) != root {
			// The first hop is the parent the kernel saw: the caller may be gone (or going) by
			// now, and /proc would no longer say.
			first := pexe
			if first == "" {
				first = kernrun.ExeOf(int(ev.Ptgid))
			}
			return append([]string{first}, kernrun.ParentsOf(root, int(ev.Ptgid))...)
		}
		return kernrun.ParentsOf(root, int(ev.Tgid))
	}
}

func commString(c []int8) string {
	b := make([]byte, 0, len(c))
	for _, x := range c {
		if x == 0 {
			break
		}
		b = append(b, byte(x))
	}
	return string(b)
}

// denialKey is what record aggregates a denial under.
func denialKey(d report.Denial) string {
	return string(d.Kind) + "\x00" + d.What + "\x00" + d.Exe + "\x00" + d.Suggest
}

// known reports whether recording d would only count it (its entry exists, or the list is full).
func (g *Guard) known(d report.Denial) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, ok := g.index[denialKey(d)]
	return ok || g.full(d)
}

// full reports whether a denial not listed yet is only counted (g.mu held): past MaxDistinct
// when its kind is listed already, always past twice that. A command cannot fill the record
// with thousands of refused reads or creates and then write a hook unseen.
func (g *Guard) full(d report.Denial) bool {
	n := g.cfg.MaxDistinct
	return n > 0 && len(g.denials) >= n && (g.kinds[kindKey(d)] || len(g.denials) >= 2*n)
}

// kindKey is a denial's kind: what was refused and how risky, by whom, and the protected path
// (paths.IsProtected) it names, whatever the rest of the path: a write to each protected path
// is listed once at least, however many other critical writes came first.
func kindKey(d report.Denial) string {
	var protected string
	if _, portable, ok := strings.Cut(d.Suggest, " + "); ok {
		protected, _ = paths.IsProtected(portable)
	}
	return string(d.Kind) + "\x00" + d.Syscall + "\x00" + d.Access + "\x00" + d.Risk.String() + "\x00" + d.Exe + "\x00" + protected
}

// record aggregates denials per (kind, what, executable, suggestion), at most maxDistinct.
func (g *Guard) record(d report.Denial) {
	key := denialKey(d)
	g.mu.Lock()
	defer g.mu.Unlock()
	if i, ok := g.index[key]; ok {
		g.denials[i].Count++
		return
	}
	if g.full(d) {
		g.dropped++
		return
	}
	g.index[key] = len(g.denials)
	if g.kinds == nil {
		g.kinds = map[string]bool{}
	}
	g.kinds[kindKey(d)] = true
	g.denials = append(g.denials, d)
}

// Lost is how many refusals the kernel side counted but could not record (ring buffer full,
// scratch space busy), known once Close returned.
func (g *Guard) Lost() uint64 { return g.lost }

// Close detaches everything, drains the ring buffer, removes the cgroup (killing what is left
// in it) and returns the denials and notes.
func (g *Guard) Close() ([]report.Denial, []string) {
	g.closeHidden()
	if err := g.Wait(); err != nil {
		// The background setup failed: nothing is loaded; the caller noted why.
		var notes []string
		if err := g.cg.Remove(); err != nil {
			notes = append(notes, err.Error())
		}
		return nil, notes
	}
	taken := g.slotTaken() // before the hand-off gives the slot away
	// The file program's hand-off (starting the helper) meanwhile.
	handed := make(chan bool, 1)
	go func() { handed <- len(g.tps) > 0 && g.closeTracepoints() }()
	g.stopReading()
	g.slotHandedOff = <-handed
	g.tps = nil
	phase.Mark("close: detach and drain")
	var notes []string
	cfg := g.leave()
	if cfg.Drops > 0 {
		notes = append(notes, fmt.Sprintf("%d network/file denials were not reported: the guard's ring buffer was full (they were still refused)", cfg.Drops))
	}
	if cfg.Busy > 0 {
		notes = append(notes, fmt.Sprintf("%d network/file denials were not reported: the guard's scratch space was in use by another of the run's tasks on the same CPU (they were still refused)", cfg.Busy))
	}
	g.lost += cfg.Drops + cfg.Busy
	if taken != "" {
		// How many went unseen is unknown: at least one, so that the record never passes
		// for complete (report.LostRecords, --fail-on-denial).
		notes = append(notes, "network/file denials may be missing from this report: "+taken+" (they were still refused)")
		g.lost++
	}
	g.load.close()
	g.objs = nil
	phase.Mark("close: collection")
	if err := g.cg.Remove(); err != nil {
		notes = append(notes, err.Error())
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.dropped > 0 {
		notes = append(notes, fmt.Sprintf("%d more distinct network/file denials were counted but not listed", g.dropped))
	}
	return g.denials, append(g.notes, notes...)
}
