package profiler

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/bpf"
	"github.com/sysprof/sysprof/internal/kernrun"
)

// scOps maps x86_64 syscall names to what the kernel program does with them. The numbers come
// from the go-seccomp-bpf table at load time, so learn.c holds no syscall numbers.
var scOps = map[string]bpf.LearnScOp{
	"socket":      bpf.LearnScOpSCOP_SOCKET,
	"clone":       bpf.LearnScOpSCOP_CLONE,
	"clone3":      bpf.LearnScOpSCOP_CLONE3,
	"unshare":     bpf.LearnScOpSCOP_UNSHARE,
	"setns":       bpf.LearnScOpSCOP_SETNS,
	"prctl":       bpf.LearnScOpSCOP_PRCTL,
	"personality": bpf.LearnScOpSCOP_PERSONALITY,
	"ioctl":       bpf.LearnScOpSCOP_IOCTL,
	"mmap":        bpf.LearnScOpSCOP_MMAP,
	"mprotect":    bpf.LearnScOpSCOP_MPROTECT,

	"open":       bpf.LearnScOpSCOP_OPEN,
	"openat":     bpf.LearnScOpSCOP_OPENAT,
	"openat2":    bpf.LearnScOpSCOP_OPENAT2,
	"creat":      bpf.LearnScOpSCOP_CREAT,
	"stat":       bpf.LearnScOpSCOP_STAT,
	"lstat":      bpf.LearnScOpSCOP_STAT,
	"access":     bpf.LearnScOpSCOP_STAT,
	"readlink":   bpf.LearnScOpSCOP_STAT,
	"newfstatat": bpf.LearnScOpSCOP_STATAT,
	"statx":      bpf.LearnScOpSCOP_STATAT,
	"faccessat":  bpf.LearnScOpSCOP_STATAT,
	"faccessat2": bpf.LearnScOpSCOP_STATAT,
	"readlinkat": bpf.LearnScOpSCOP_STATAT,
	"execve":     bpf.LearnScOpSCOP_EXECVE,
	"execveat":   bpf.LearnScOpSCOP_EXECVEAT,
	"unlink":     bpf.LearnScOpSCOP_UNLINK,
	"rmdir":      bpf.LearnScOpSCOP_UNLINK,
	"unlinkat":   bpf.LearnScOpSCOP_UNLINKAT,
	"rename":     bpf.LearnScOpSCOP_RENAME,
	"renameat":   bpf.LearnScOpSCOP_RENAMEAT,
	"renameat2":  bpf.LearnScOpSCOP_RENAMEAT,
	"link":       bpf.LearnScOpSCOP_LINK,
	"linkat":     bpf.LearnScOpSCOP_LINKAT,
	"symlink":    bpf.LearnScOpSCOP_SYMLINK,
	"symlinkat":  bpf.LearnScOpSCOP_SYMLINKAT,
	"mkdir":      bpf.LearnScOpSCOP_MKDIR,
	"mknod":      bpf.LearnScOpSCOP_MKDIR,
	"mkdirat":    bpf.LearnScOpSCOP_MKDIRAT,
	"mknodat":    bpf.LearnScOpSCOP_MKDIRAT,
	"chmod":      bpf.LearnScOpSCOP_CHANGE,
	"chown":      bpf.LearnScOpSCOP_CHANGE,
	"lchown":     bpf.LearnScOpSCOP_CHANGE,
	"truncate":   bpf.LearnScOpSCOP_CHANGE,
	"fchmodat":   bpf.LearnScOpSCOP_CHANGEAT,
	"fchmodat2":  bpf.LearnScOpSCOP_CHANGEAT,
	"fchownat":   bpf.LearnScOpSCOP_CHANGEAT,
	"utimensat":  bpf.LearnScOpSCOP_CHANGEAT,
	"connect":    bpf.LearnScOpSCOP_CONNECT,
	"bind":       bpf.LearnScOpSCOP_BIND,
	"sendto":     bpf.LearnScOpSCOP_SENDTO,
	"sendmsg":    bpf.LearnScOpSCOP_SENDMSG,
}

// exitTracepoint is the syscalls/sys_exit_<name> tracepoint of a syscall, where it differs
// from the name in the x86_64 table.
var exitTracepoint = map[string]string{
	"stat":  "newstat",
	"lstat": "newlstat",
}

// exitTracepoints are the tracepoints sys_exit_path is attached to: those of the path syscalls.
func exitTracepoints() []string {
	var names []string
	for name, op := range scOps {
		if _, ok := bpf.NativeNumber(name); ok && op >= bpf.LearnScOpSCOP_PATH_FIRST {
			if n, ok := exitTracepoint[name]; ok {
				name = n
			}
			names = append(names, "sys_exit_"+name)
		}
	}
	slices.Sort(names)
	return names
}

// openExitTracepoints opens the perf events of exitTracepoints (see kernrun.OpenTracepoint).
func openExitTracepoints() ([]int, error) {
	if _, err := kernrun.Tracefs(); err != nil {
		return nil, &LoadError{Step: "mount tracefs", Err: err}
	}
	var fds []int
	for _, name := range exitTracepoints() {
		fd, err := kernrun.OpenTracepoint("syscalls", name)
		if err != nil {
			kernrun.ClosePerfEvents(fds)
			return nil, &LoadError{Step: "attach syscalls/" + name, Err: err}
		}
		fds = append(fds, fd)
	}
	return fds, nil
}

// learnObject is learn.c as parsed once per process (without its line info), and the name of its
// CO-RE fixups on this kernel. Each run loads a copy.
var learnObject = sync.OnceValues(func() (*learnParsed, error) { return parseLearn(bpf.LoadLearnNoLines) })

// learnObjectLines is learnObject with the C source lines, which only the verifier's log
// shows (Options.Debug).
var learnObjectLines = sync.OnceValues(func() (*learnParsed, error) { return parseLearn(bpf.LoadLearn) })

func parseLearn(load func() (*ebpf.CollectionSpec, error)) (*learnParsed, error) {
	spec, err := load()
	if err != nil {
		return nil, err
	}
	fix, err := kernrun.NewCoreFixups("learn", spec)
	if err != nil {
		fix = nil // no boot id: relocate against the kernel's BTF every run
	}
	return &learnParsed{spec: spec, fixups: fix}, nil
}

type learnParsed struct {
	spec   *ebpf.CollectionSpec
	fixups *kernrun.CoreFixups
}

// loadGroups are the programs of learn.c in the collections that load at the same time (the
// verifier runs in the loading thread; ~1/2 of the load time is sys_exit_path).
var loadGroups = [][]string{
	{bpf.LearnProgSysExitPath, bpf.LearnProgSchedFork, bpf.LearnProgSchedExit, bpf.LearnProgConnect4, bpf.LearnProgConnect6,
		bpf.LearnProgSendmsg4},
	{bpf.LearnProgSysEnter, bpf.LearnProgSchedExec, bpf.LearnProgSendmsg6, bpf.LearnProgBind4, bpf.LearnProgBind6,
		bpf.LearnProgDnsEgress, bpf.LearnProgDnsIngress, bpf.LearnProgCgroupAttach},
}

// probe is the loaded and attached kernel side of one run.
type probe struct {
	objs bpf.LearnObjects
	// warmable: objs may be handed to the next run (see warm.go); ended: the run's cgroup
	// emptied and its maps were read, so close may empty them and hand them on.
	warmable bool
	ended    bool
	links    []link.Link
	perfFDs  []int // tracepoint perf events with the program attached (syscalls/sys_exit_*)
	// perfHeld has the perf events' holder once started (after the attach, while the command
	// runs; only for a probe that is not handed on); it then owns perfFDs.
	perfHeld chan *kernrun.PerfHolder
	// ring has the ring buffer's reader once mapped (openRing), until Run takes it (ringReader).
	ring chan ringResult
}

// eventsRingBytes is the size of learn.c's first ring (events) for a run whose spill ring has
// ringBytes: the ring the reader maps at the start of every run (the kernel inserts each of
// its pages, twice, at mmap: ~3 ms of CPU for 16 MB, ~0.1 ms for this).
func eventsRingBytes(ringBytes int) int { return min(ringBytes, eventsRingMax) }

// eventsRingMax is EventsRingBytes but in tests that make runs spill.
var eventsRingMax = EventsRingBytes

// warmShape reports whether a run's probe has the one shape that is handed from run to run
// (warm.go): the default rings, no verifier log.
func warmShape(ringBytes int, debug bool) bool {
	return ringBytes == DefaultRingBufferBytes && eventsRingMax == EventsRingBytes && !debug
}

// spills counts the runs of this process whose reader mapped the spill ring (for tests).
var spills atomic.Int64

type ringResult struct {
	rd    *ringbuf.Reader
	spill *spillRing
	err   error
}

// openRing maps the events ring for reading in the background, while the hooks attach.
func (p *probe) openRing() {
	p.ring = make(chan ringResult, 1)
	go func() {
		rd, err := ringbuf.NewReader(p.objs.Events)
		if err != nil {
			p.ring <- ringResult{err: err}
			return
		}
		spill, err := newSpillRing(p.objs.Spill)
		if err != nil {
			rd.Close()
			p.ring <- ringResult{err: err}
			return
		}
		p.ring <- ringResult{rd, spill, nil}
	}()
}

// ringReader returns the reader and the spill ring openRing made; the caller closes them.
func (p *probe) ringReader() (*ringbuf.Reader, *spillRing, error) {
	r := <-p.ring
	p.ring = nil
	return r.rd, r.spill, r.err
}

// loadProbe loads learn.c for the cgroup with id cgid and attaches it: tracepoints host-wide
// (the programs filter on the cgroup and the tasks map), cgroup hooks on cgroupDir. A probe of
// the default shape takes over the last run's objects (w, from startClaim) when there were
// any, instead of loading.
func loadProbe(cgid uint64, cgroupDir string, ringBytes int, debug bool, ph *phases, w *warmClaim) (p *probe, err error) {
	warmable := warmShape(ringBytes, debug)
	if w != nil {
		ph.mark("take over a warm probe")
		p, err := warmProbe(w, cgid, cgroupDir, ph)
		if err == nil {
			return p, nil
		}
		ph.mark("warm probe unusable: " + err.Error())
	}
	// What does not need the object starts first, in the background: the perf events of the
	// exit tracepoints (~60 us each, and they wait for the RCU grace periods of a previous
	// run's closes) and the ring buffers (~4 ms to allocate 16 MB).
	bg := startBackground(ringBytes)
	defer func() {
		if err != nil {
			bg.discard()
		}
	}()

	parsed := learnObject
	if debug {
		parsed = learnObjectLines
	}
	obj, err := parsed()
	if err != nil {
		return nil, &LoadError{Step: "parse BPF object", Err: err}
	}
	spec := copySpec(obj.spec)
	spec.Maps["events"].MaxEntries = uint32(eventsRingBytes(ringBytes))
	spec.Maps["spill"].MaxEntries = uint32(ringBytes)
	ph.mark("parse spec")
	relocated := relocate(obj, spec)

	opts := &ebpf.CollectionOptions{MapReplacements: map[string]*ebpf.Map{}}
	if debug {
		opts.Programs.LogLevel = ebpf.LogLevelInstruction
	}
	err = createMaps(spec, opts.MapReplacements, bg)
	if !<-relocated {
		opts.Cache = btf.NewCache()
	}
	if err != nil {
		return nil, err
	}
	ph.mark("create maps")
	p = &probe{}
	if err = loadPrograms(spec, opts, &p.objs); err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) && debug {
			return nil, &LoadError{Step: "load BPF programs", Err: fmt.Errorf("%+v", ve)}
		}
		return nil, &LoadError{Step: "load BPF programs", Err: err}
	}
	loaded := p // a failing return sets p to nil before this runs
	defer func() {
		if err != nil {
			loaded.close()
		}
	}()
	ph.mark("load programs")
	p.warmable = warmable
	if err := p.configure(cgid); err != nil {
		return nil, err
	}
	ph.mark("fill sc_ops")
	err = p.attach(cgroupDir, ph, func() error { return p.attachExits(bg) })
	if err != nil {
		return nil, err
	}
	return p, nil
}

// relocate applies the CO-RE fixups stored for this kernel to spec, else relocates spec's
// programs against the kernel's BTF (parsed in the background while the maps are created) and
// stores the fixups for the next runs. The channel says whether the programs are relocated
// (false: the loader relocates them, and reports what fails).
func relocate(obj *learnParsed, spec *ebpf.CollectionSpec) <-chan bool {
	relocated := make(chan bool, 1)
	if obj.fixups != nil && obj.fixups.Apply(spec) {
		relocated <- true
		return relocated
	}
	progs := spec.Programs // only the programs: the maps are created from spec meanwhile
	go func() {
		kernel, err := btf.LoadKernelSpec()
		if err != nil {
			relocated <- false
			return
		}
		relocated <- obj.fixups.Relocate(&ebpf.CollectionSpec{Programs: progs}, kernel)
	}()
	return relocated
}

// configure enters the run (its cgroup id cgid) and the syscall table learn.c reads.
func (p *probe) configure(cgid uint64) error {
	rs := bpf.LearnRunState{Cgid: cgid, Id: 1, RbQuarter: uint64(p.objs.Events.MaxEntries() / 4)}
	if err := p.objs.Run.Put(uint32(0), rs); err != nil {
		return &LoadError{Step: "set run", Err: err}
	}
	for name, op := range scOps {
		nr, ok := bpf.NativeNumber(name)
		if !ok {
			continue // a legacy call this architecture lacks (open on aarch64)
		}
		if err := p.objs.ScOps.Put(uint32(nr), uint32(op)); err != nil {
			return &LoadError{Step: "fill sc_ops", Err: err}
		}
	}
	return nil
}

// attachExits takes the perf events of the syscall exit tracepoints bg opened and sets the
// exit program on each.
func (p *probe) attachExits(bg *background) error {
	fds, err := bg.takePerf()
	p.perfFDs = fds
	if err != nil {
		return err
	}
	names := exitTracepoints()
	for i, fd := range p.perfFDs {
		if err := kernrun.SetTracepointProgram(fd, p.objs.SysExitPath); err != nil {
			return &LoadError{Step: "attach syscalls/" + names[i], Err: err}
		}
	}
	return nil
}

// attach attaches p's per-run hooks: the sched tracepoints, then (perf) the program of the
// syscall exit tracepoints, then sys_enter, then the hooks of the run cgroup.
func (p *probe) attach(cgroupDir string, ph *phases, perf func() error) error {
	p.openRing()
	attachRaw := func(name string, prog *ebpf.Program) error {
		l, err := link.AttachRawTracepoint(link.RawTracepointOptions{Name: name, Program: prog})
		if err != nil {
			return &LoadError{Step: "attach raw tracepoint " + name, Err: err}
		}
		p.links = append(p.links, l)
		return nil
	}
	for _, tp := range []struct {
		name string
		prog *ebpf.Program
	}{
		{"sched_process_exec", p.objs.SchedExec},
		{"sched_process_fork", p.objs.SchedFork},
		{"sched_process_exit", p.objs.SchedExit},
		{"cgroup_attach_task", p.objs.CgroupAttach}, // before sys_enter trusts the cgroup
	} {
		if err := attachRaw(tp.name, tp.prog); err != nil {
			return err
		}
	}
	if err := perf(); err != nil {
		return err
	}
	// The helper that will close the perf events starts now, off the way out of the run
	// (unless they may be handed to the next run: see warm.go).
	if !p.warmable {
		p.perfHeld = make(chan *kernrun.PerfHolder, 1)
		go func(fds []int) { p.perfHeld <- kernrun.HoldPerfEvents(fds) }(p.perfFDs)
	}
	ph.mark("attach sched + sys_exit tracepoints")
	// sys_enter last: by then everything it feeds is in place.
	if err := attachRaw("sys_enter", p.objs.SysEnter); err != nil {
		return err
	}

	cg := []struct {
		prog   *ebpf.Program
		attach ebpf.AttachType
	}{
		{p.objs.Connect4, ebpf.AttachCGroupInet4Connect},
		{p.objs.Connect6, ebpf.AttachCGroupInet6Connect},
		{p.objs.Sendmsg4, ebpf.AttachCGroupUDP4Sendmsg},
		{p.objs.Sendmsg6, ebpf.AttachCGroupUDP6Sendmsg},
		{p.objs.Bind4, ebpf.AttachCGroupInet4Bind},
		{p.objs.Bind6, ebpf.AttachCGroupInet6Bind},
		{p.objs.DnsEgress, ebpf.AttachCGroupInetEgress},
		{p.objs.DnsIngress, ebpf.AttachCGroupInetIngress},
	}
	for _, c := range cg {
		l, err := link.AttachCgroup(link.CgroupOptions{Path: cgroupDir, Attach: c.attach, Program: c.prog})
		if err != nil {
			return &LoadError{Step: "attach " + c.attach.String() + " to the run cgroup", Err: err}
		}
		p.links = append(p.links, l)
	}
	return nil
}

// background is what loadProbe starts before it parses the object.
type background struct {
	perf      chan perfResult
	ring      chan ringsResult
	perfTaken bool
	ringTaken bool
}

type ringsResult struct {
	events, spill *ebpf.Map
	err           error
}

type perfResult struct {
	fds []int
	err error
}

func startBackground(ringBytes int) *background {
	bg := &background{perf: make(chan perfResult, 1), ring: make(chan ringsResult, 1)}
	go func() {
		fds, err := openExitTracepoints()
		bg.perf <- perfResult{fds, err}
	}()
	go func() {
		var r ringsResult
		r.events, r.err = ebpf.NewMap(&ebpf.MapSpec{Name: "events", Type: ebpf.RingBuf, MaxEntries: uint32(eventsRingBytes(ringBytes))})
		if r.err != nil {
			r.err = &LoadError{Step: "create map events", Err: r.err}
		} else if r.spill, r.err = ebpf.NewMap(&ebpf.MapSpec{Name: "spill", Type: ebpf.RingBuf, MaxEntries: uint32(ringBytes)}); r.err != nil {
			r.events.Close()
			r.events, r.err = nil, &LoadError{Step: "create map spill", Err: r.err}
		}
		bg.ring <- r
	}()
	return bg
}

// takePerf waits for the perf events; the caller closes them from then on.
func (bg *background) takePerf() ([]int, error) {
	bg.perfTaken = true
	r := <-bg.perf
	return r.fds, r.err
}

// takeRings waits for the ring buffer maps; the caller closes them from then on.
func (bg *background) takeRings() ringsResult {
	bg.ringTaken = true
	return <-bg.ring
}

// discard closes what was not taken.
func (bg *background) discard() {
	if !bg.perfTaken {
		fds, _ := bg.takePerf()
		kernrun.ClosePerfEvents(fds)
	}
	if !bg.ringTaken {
		if r := bg.takeRings(); r.err == nil {
			r.events.Close()
			r.spill.Close()
		}
	}
}

// createMaps creates the maps of spec (not the data sections: they are made, and frozen, with
// the programs) into out, all at once: the big ones take a few ms each to allocate. Maps that
// do not need them are made without BTF types. The ring buffers come from bg.
func createMaps(spec *ebpf.CollectionSpec, out map[string]*ebpf.Map, bg *background) error {
	var names []string
	for name := range spec.Maps {
		if !strings.HasPrefix(name, ".") && name != "events" && name != "spill" {
			names = append(names, name)
		}
	}
	maps := make([]*ebpf.Map, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ms := spec.Maps[name]
			if ms.Type != ebpf.TaskStorage {
				// Only local storage needs the key and value types in the kernel; loading
				// them is a BTF object per map.
				ms = ms.Copy()
				ms.Key, ms.Value = nil, nil
			}
			maps[i], errs[i] = ebpf.NewMap(ms)
		}()
	}
	rings := bg.takeRings()
	err := rings.err
	if err == nil {
		out["events"], out["spill"] = rings.events, rings.spill
	}
	wg.Wait()
	for i, name := range names {
		if errs[i] != nil && err == nil {
			err = &LoadError{Step: "create map " + name, Err: errs[i]}
		}
		if maps[i] != nil {
			out[name] = maps[i]
		}
	}
	if err != nil {
		for name, m := range out {
			m.Close()
			delete(out, name)
		}
	}
	return err
}

// loadPrograms loads the programs of spec, the groups of loadGroups at the same time, and assigns
// them, and the maps of opts.MapReplacements (which it takes over, also on error), to objs.
func loadPrograms(spec *ebpf.CollectionSpec, opts *ebpf.CollectionOptions, objs *bpf.LearnObjects) error {
	colls := make([]*ebpf.Collection, len(loadGroups))
	errs := make([]error, len(loadGroups))
	var wg sync.WaitGroup
	for i, group := range loadGroups {
		gs := &ebpf.CollectionSpec{Maps: spec.Maps, Programs: map[string]*ebpf.ProgramSpec{}, Variables: spec.Variables,
			Types: spec.Types, ByteOrder: spec.ByteOrder}
		for _, name := range group {
			if ps := spec.Programs[name]; ps != nil {
				gs.Programs[name] = ps
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The collection clones the replacement maps, and makes its own .rodata.
			colls[i], errs[i] = ebpf.NewCollectionWithOptions(gs, *opts)
		}()
	}
	wg.Wait()
	defer func() {
		for _, c := range colls {
			if c != nil {
				c.Close() // its programs were taken out when assigned to objs
			}
		}
	}()
	err := errors.Join(errs...)
	if err == nil {
		err = (&ebpf.Collection{Maps: opts.MapReplacements}).Assign(&objs.LearnMaps)
	}
	if err != nil {
		for _, m := range opts.MapReplacements {
			m.Close()
		}
		return err
	}
	progs := map[string]*ebpf.Program{}
	for _, c := range colls {
		for name, prog := range c.Programs {
			progs[name] = prog
		}
	}
	if len(progs) != len(spec.Programs) {
		objs.LearnMaps.Close()
		return fmt.Errorf("BUG: %d programs loaded, the object has %d: update loadGroups", len(progs), len(spec.Programs))
	}
	if err := (&ebpf.Collection{Programs: progs}).Assign(&objs.LearnPrograms); err != nil {
		objs.LearnMaps.Close()
		return err
	}
	for _, c := range colls {
		clear(c.Programs) // now owned by objs
	}
	return nil
}

// closing counts the probes being closed in the background.
var closing sync.WaitGroup

// closeInBackground closes p while the caller goes on: waiting for its maps to be emptied and
// handing it on took 12-17 ms after a find /usr run, before synthesis could start.
func closeInBackground(p *probe) {
	closing.Add(1)
	go func() {
		defer closing.Done()
		p.close()
	}()
}

// Settle waits until the probes of finished runs are closed, and handed on to the next learn run
// where they can be (warm.go). A run's trace is complete without it; call it before the process
// exits, or the next sysprof process loads its programs again.
func Settle() { closing.Wait() }

// close detaches p, and hands its objects to the next run when it can (warm.go).
func (p *probe) close() {
	if p.ring != nil { // not taken: the attach failed
		if r := <-p.ring; r.rd != nil {
			r.rd.Close()
			r.spill.close()
		}
	}
	p.detach()
	if p.warmable {
		if p.ended && clearLearnMaps(&p.objs) == nil && handOff(p) {
			for _, fd := range p.perfFDs {
				unix.Close(fd) // the helper holds them
			}
			p.perfFDs = nil
		} else {
			kernrun.ClosePerfEvents(p.perfFDs)
			p.perfFDs = nil
		}
	}
	p.objs.Close()
}

// detach ends the recording: it closes every link and, unless the probe is to be handed on
// (its perf events stay attached for the next run; close closes them otherwise), every perf
// event. Maps stay readable.
// The perf events of the syscall exit tracepoints are slow to close (an RCU grace period
// each): a short-lived process holding copies (kernrun.HoldPerfEvents) closes them. The
// program stays attached to those tracepoints for a few more seconds, doing nothing: it only
// acts on threads with a stashed syscall of the (finished) run.
func (p *probe) detach() {
	for _, l := range p.links {
		l.Close() // raw tracepoints and cgroup links detach in microseconds
	}
	p.links = nil
	if p.warmable {
		return // the perf events stay attached for the next run, or close closes them
	}
	if p.perfHeld != nil {
		(<-p.perfHeld).Close()
		p.perfHeld = nil
	} else {
		kernrun.ClosePerfEvents(p.perfFDs)
	}
	p.perfFDs = nil
}

// copySpec copies what a run changes in spec (map sizes, variables, the relocated
// instructions); the types, which nothing changes, are shared (copying them took ~0.7 ms).
func copySpec(spec *ebpf.CollectionSpec) *ebpf.CollectionSpec {
	c := &ebpf.CollectionSpec{
		Maps:      make(map[string]*ebpf.MapSpec, len(spec.Maps)),
		Programs:  make(map[string]*ebpf.ProgramSpec, len(spec.Programs)),
		Variables: make(map[string]*ebpf.VariableSpec, len(spec.Variables)),
		Types:     spec.Types,
		ByteOrder: spec.ByteOrder,
	}
	for name, m := range spec.Maps {
		c.Maps[name] = m.Copy()
	}
	for name, p := range spec.Programs {
		c.Programs[name] = p.Copy()
	}
	for name, v := range spec.Variables {
		c.Variables[name] = v.Copy()
	}
	return c
}

// counters sums the per-CPU counters of learn.c.
func (p *probe) counters() ([]uint64, error) {
	out := make([]uint64, bpf.LearnCounterCNT_MAX)
	for i := range out {
		var perCPU []uint64
		if err := p.objs.Counters.Lookup(uint32(i), &perCPU); err != nil {
			return nil, fmt.Errorf("read counter %d: %w", i, err)
		}
		for _, v := range perCPU {
			out[i] += v
		}
	}
	return out, nil
}

// cpuCached reads the calls sys_enter's per-CPU caches (learn.c's struct cpu_cache) hold for
// this run and has not added to the syscalls map yet. Read once the run's threads are gone.
func (p *probe) cpuCached() (map[bpf.LearnScKey]uint64, error) {
	var rs bpf.LearnRunState
	if err := p.objs.Run.Lookup(uint32(0), &rs); err != nil {
		return nil, fmt.Errorf("read run: %w", err)
	}
	var perCPU []bpf.LearnCpuCache
	if err := p.objs.Fast.Lookup(uint32(0), &perCPU); err != nil {
		return nil, fmt.Errorf("read the per-CPU syscall caches: %w", err)
	}
	out := map[bpf.LearnScKey]uint64{}
	for _, c := range perCPU {
		if c.RunId != rs.Id || c.Task == 0 {
			continue
		}
		for i, tag := range c.Tag {
			if tag != 0 && c.Rep[i] != 0 {
				k := bpf.LearnScKey{ExeKey: c.ExeKey, Arch: uint32(tag>>32) - 1, Nr: uint32(tag)}
				out[k] += c.Rep[i]
			}
		}
	}
	return out, nil
}
