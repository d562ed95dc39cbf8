package profiler

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"reflect"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/bpf"
	"github.com/sysprof/sysprof/internal/kernrun"
)

// Warm take-over: learn.c's programs and maps, and the syscall exit tracepoints' perf events
// with sys_exit_path attached, handed from a run that ends to the next one.
//
// A run loads learn.c in ~25 ms (parse the object, create the 16 MB ring buffer and the dedup
// map, verify 13 programs), and its end costs the next run more: the 41 perf events take ~2.5 s
// to close, and while the kernel frees a run's objects the next run's load goes 1.5–2× slower.
// So a run that ends hands everything to a helper process (`sleep`, holding copies of the fds)
// for warmLinger and describes it in a file of warmDir; a run that starts meanwhile takes the
// fds (pidfd_getfd), ends the helper, resets what learn.c keeps per run (run id and cgroup,
// counters, directory ids, the ring buffer's read position; the ending run emptied the hash
// maps) and attaches only its per-run hooks. A helper that nobody claims exits and the kernel
// closes everything, as before. Only runs of the same sysprof build on the same boot take each
// other's objects (warmKey), under a lock (warmDir/lock), and each file is taken once.
//
// While a helper lingers, sys_exit_path stays attached: the path syscalls on the host run it (it
// finds no stashed call and returns at once) and every syscall takes the kernel's slow path, as
// during a run.

// warmDir holds the lock and one file per lingering helper (tmpfs: gone with the boot). "":
// no take-over.
var warmDir = "/run/sysprof/learn-warm"

// SwapWarmDir sets where runs of this process hand their objects on and take them over ("":
// nowhere) and returns what restores it (for tests: t.Cleanup(profiler.SwapWarmDir(t.TempDir()))
// keeps a test's runs to themselves).
func SwapWarmDir(dir string) (restore func()) {
	old := warmDir
	warmDir = dir
	return func() { warmDir = old }
}

// warmLinger is how long a helper holds a finished run's objects, in seconds (sleep(1)'s
// argument).
const warmLinger = "1"

// warmTakeovers counts the runs of this process that took a warm probe over (for tests).
var warmTakeovers atomic.Int64

// warmRecord describes a lingering helper: its process and the numbers of its fds.
type warmRecord struct {
	Key            string         `json:"key"`
	kernrun.Holder                // the helper
	Progs          map[string]int `json:"progs"`
	Maps           map[string]int `json:"maps"`
	Perfs          []int          `json:"perfs"` // in exitTracepoints() order
}

// warmKey digests what a taker must share with the helper's run: the object, the loader, the
// ring buffer size and the kernel and boot.
var warmKey = sync.OnceValues(func() (string, error) {
	h := sha256.New()
	h.Write([]byte("sysprof learn warm v1\x00"))
	obj := bpf.LearnDigest()
	h.Write(obj[:])
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/cilium/ebpf" {
				h.Write([]byte(d.Version + " " + d.Sum + "\x00"))
			}
		}
	}
	fmt.Fprintf(h, "ring=%d,%d\x00%s\x00", EventsRingBytes, DefaultRingBufferBytes, strings.Join(exitTracepoints(), ","))
	kid, err := kernrun.KernelID()
	if err != nil {
		return "", err
	}
	h.Write(kid)
	return hex.EncodeToString(h.Sum(nil))[:32], nil
})

// What learn.c defines, by name (TestWarmKindsMatchObject checks them against the object).
var (
	learnProgTypes = map[string]ebpf.ProgramType{
		"sys_enter": ebpf.RawTracepoint, "sched_exec": ebpf.RawTracepoint, "sched_fork": ebpf.RawTracepoint,
		"sched_exit": ebpf.RawTracepoint, "cgroup_attach": ebpf.RawTracepoint, "sys_exit_path": ebpf.TracePoint,
		"connect4": ebpf.CGroupSockAddr, "connect6": ebpf.CGroupSockAddr, "sendmsg4": ebpf.CGroupSockAddr,
		"sendmsg6": ebpf.CGroupSockAddr, "bind4": ebpf.CGroupSockAddr, "bind6": ebpf.CGroupSockAddr,
		"dns_egress": ebpf.CGroupSKB, "dns_ingress": ebpf.CGroupSKB,
	}
	learnMapTypes = map[string]ebpf.MapType{
		"events": ebpf.RingBuf, "spill": ebpf.RingBuf, "tasks": ebpf.Hash, "syscalls": ebpf.Hash, "args": ebpf.Hash,
		"stashes": ebpf.TaskStorage, "seen": ebpf.Array, "path_state": ebpf.Array,
		"run": ebpf.Array, "sc_ops": ebpf.Array, "counters": ebpf.PerCPUArray, "scratch": ebpf.PerCPUArray, "fast": ebpf.PerCPUArray,
		"conns": ebpf.LRUHash,
	}
)

// learnObjectsByName lists objs' programs and maps by their names in learn.c.
func learnObjectsByName(objs *bpf.LearnObjects) (map[string]*ebpf.Program, map[string]*ebpf.Map) {
	progs, maps := map[string]*ebpf.Program{}, map[string]*ebpf.Map{}
	for _, v := range []reflect.Value{reflect.ValueOf(&objs.LearnPrograms).Elem(), reflect.ValueOf(&objs.LearnMaps).Elem()} {
		for i := range v.NumField() {
			name := v.Type().Field(i).Tag.Get("ebpf")
			switch x := v.Field(i).Interface().(type) {
			case *ebpf.Program:
				if x != nil {
					progs[name] = x
				}
			case *ebpf.Map:
				if x != nil {
					maps[name] = x
				}
			}
		}
	}
	return progs, maps
}

// clearLearnMaps empties the hash maps a run fills.
func clearLearnMaps(objs *bpf.LearnObjects) error {
	return errors.Join(
		clearMap[uint32, bpf.LearnTaskInfo](objs.Tasks),
		clearMap[bpf.LearnScKey, uint64](objs.Syscalls),
		clearMap[bpf.LearnArgKey, uint64](objs.Args),
	)
}

// clearMap deletes every entry of the hash map m, in one walk of its buckets (nothing inserts
// meanwhile: the run's cgroup is empty). An empty map costs one lookup.
func clearMap[K, V any](m *ebpf.Map) error {
	var k K
	if err := m.NextKey(nil, &k); errors.Is(err, ebpf.ErrKeyNotExist) {
		return nil
	}
	keys := make([]K, 4096) // at least one hash bucket's worth
	vals := make([]V, len(keys))
	var cursor ebpf.MapBatchCursor
	for {
		_, err := m.BatchLookupAndDelete(&cursor, keys, vals, nil)
		switch {
		case errors.Is(err, ebpf.ErrNotSupported):
			return clearMapByKey[K](m)
		case errors.Is(err, ebpf.ErrKeyNotExist): // the walk is through (its last batch included)
			return nil
		case err != nil:
			return fmt.Errorf("clear map %s: %w", m, err)
		}
	}
}

// clearMapByKey is clearMap without batch operations.
func clearMapByKey[K any](m *ebpf.Map) error {
	var k K
	for {
		err := m.NextKey(nil, &k)
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			return nil
		}
		if err == nil {
			err = m.Delete(&k)
		}
		if err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			return fmt.Errorf("clear map %s: %w", m, err)
		}
	}
}

// handOff gives p's objects and attached perf events to a lingering helper and describes it in
// warmDir. It reports whether it did; p's own copies are the caller's to close either way.
// The run's cgroup id is zeroed first: sys_exit_path, still attached, then returns at once for
// every path syscall on the host until a run takes it over (resetRun).
func handOff(p *probe) bool {
	key, err := warmKey()
	if err != nil || warmDir == "" || len(p.perfFDs) != len(exitTracepoints()) {
		return false
	}
	var rs bpf.LearnRunState
	if p.objs.Run.Lookup(uint32(0), &rs) != nil {
		return false
	}
	rs.Cgid = 0
	if p.objs.Run.Put(uint32(0), rs) != nil {
		return false
	}
	sleepPath, err := exec.LookPath("sleep")
	if err != nil || os.MkdirAll(warmDir, 0o700) != nil {
		return false
	}
	progs, ms := learnObjectsByName(&p.objs)
	if len(progs) != len(learnProgTypes) || len(ms) != len(learnMapTypes) {
		return false
	}
	// The fds in the record's order: programs, then maps (by name), then the perf events.
	progNames, mapNames := slices.Sorted(maps.Keys(progs)), slices.Sorted(maps.Keys(ms))
	var fds []int
	for _, name := range progNames {
		fds = append(fds, progs[name].FD())
	}
	for _, name := range mapNames {
		fds = append(fds, ms[name].FD())
	}
	fds = append(fds, p.perfFDs...)
	h, nums, err := kernrun.StartHolder(exec.Command(sleepPath, warmLinger), fds)
	if err != nil {
		return false
	}
	if h.Start == 0 {
		return true // gone already: it holds nothing any more
	}
	rec := warmRecord{Key: key, Holder: h, Progs: map[string]int{}, Maps: map[string]int{}}
	for i, name := range progNames {
		rec.Progs[name] = nums[i]
	}
	for i, name := range mapNames {
		rec.Maps[name] = nums[len(progNames)+i]
	}
	rec.Perfs = nums[len(progNames)+len(mapNames):]
	_ = warmEscrow().Publish(strconv.Itoa(rec.Pid)+".json", rec)
	return true
}

// warmEscrow is where helpers are published (kernrun's fd escrow).
func warmEscrow() kernrun.Escrow { return kernrun.Escrow{Dir: warmDir} }

// warmClaim is what a run took over from a helper.
type warmClaim struct {
	objs  bpf.LearnObjects
	perfs []int // attached to objs.SysExitPath, in exitTracepoints() order
}

// claimWarm takes over a lingering helper's objects, or returns nil.
func claimWarm() *warmClaim {
	key, err := warmKey()
	if err != nil || warmDir == "" {
		return nil
	}
	e := warmEscrow()
	unlock, err := e.Lock(false)
	if err != nil {
		return nil // no helper ever published here
	}
	defer unlock()
	for _, f := range e.Files("*.json") {
		var rec warmRecord
		if e.Read(f, &rec) != nil {
			e.Remove(f)
			continue
		}
		if !rec.Alive() {
			e.Remove(f) // its helper is gone (of this build or another)
			continue
		}
		if rec.Key != key {
			continue // another build's helper: it ends on its own
		}
		c, err := takeWarm(&rec)
		e.Remove(f) // taken, or not usable: never again
		if err == nil {
			warmTakeovers.Add(1)
			return c
		}
	}
	return nil
}

// claiming is a take-over started in the background (startClaim).
type claiming struct {
	c     chan *warmClaim // nil: no take-over for this run
	taken bool
}

// startClaim starts claimWarm in the background when warmable.
func startClaim(warmable bool) *claiming {
	if !warmable || warmDir == "" {
		return &claiming{}
	}
	c := &claiming{c: make(chan *warmClaim, 1)}
	go func() { c.c <- claimWarm() }()
	return c
}

// wait returns what was taken over, or nil; once.
func (c *claiming) wait() *warmClaim {
	if c.c == nil || c.taken {
		return nil
	}
	c.taken = true
	return <-c.c
}

// drop closes what was taken over for a run that ends before it loads.
func (c *claiming) drop() {
	if w := c.wait(); w != nil {
		w.objs.Close()
		kernrun.ClosePerfEvents(w.perfs)
	}
}

// takeWarm takes rec's fds (their own references: the helper's exit closes only its copies),
// checks them, and ends the helper.
func takeWarm(rec *warmRecord) (*warmClaim, error) {
	if len(rec.Progs) != len(learnProgTypes) || len(rec.Maps) != len(learnMapTypes) || len(rec.Perfs) != len(exitTracepoints()) {
		return nil, errors.New("not learn.c's objects")
	}
	progNames, mapNames := slices.Sorted(maps.Keys(rec.Progs)), slices.Sorted(maps.Keys(rec.Maps))
	var nums []int
	for _, name := range progNames {
		nums = append(nums, rec.Progs[name])
	}
	for _, name := range mapNames {
		nums = append(nums, rec.Maps[name])
	}
	nums = append(nums, rec.Perfs...)
	pidfd, fds, err := kernrun.Take(rec.Holder, nums)
	if err != nil {
		return nil, err
	}
	defer unix.Close(pidfd)
	coll := &ebpf.Collection{Programs: map[string]*ebpf.Program{}, Maps: map[string]*ebpf.Map{}}
	c := &warmClaim{perfs: fds[len(progNames)+len(mapNames):]}
	owned := 0 // fds[:owned] are coll's
	fail := func(err error) (*warmClaim, error) {
		coll.Close()
		for _, fd := range fds[owned:] {
			unix.Close(fd)
		}
		return nil, err
	}
	for i, name := range progNames {
		prog, err := ebpf.NewProgramFromFD(fds[i])
		if err != nil {
			return fail(err)
		}
		coll.Programs[name] = prog
		owned++
		kname, err := bpfObjName(prog.FD(), true)
		if err != nil || prog.Type() != learnProgTypes[name] || !strings.HasPrefix(name, kname) || kname == "" {
			return fail(fmt.Errorf("fd %d of %d is not program %s", rec.Progs[name], rec.Pid, name))
		}
	}
	for i, name := range mapNames {
		m, err := ebpf.NewMapFromFD(fds[len(progNames)+i])
		if err != nil {
			return fail(err)
		}
		coll.Maps[name] = m
		owned++
		kname, err := bpfObjName(m.FD(), false)
		if err != nil || m.Type() != learnMapTypes[name] || !strings.HasPrefix(name, kname) || kname == "" {
			return fail(fmt.Errorf("fd %d of %d is not map %s", rec.Maps[name], rec.Pid, name))
		}
	}
	if err := coll.Assign(&c.objs.LearnPrograms); err != nil {
		return fail(err)
	}
	if err := coll.Assign(&c.objs.LearnMaps); err != nil {
		c.objs.Close()
		return fail(err)
	}
	_ = unix.PidfdSendSignal(pidfd, unix.SIGKILL, nil, 0)
	return c, nil
}

// bpfObjName is the name the kernel keeps for the program (prog) or map fd: one
// BPF_OBJ_GET_INFO_BY_FD for the start of struct bpf_prog_info or bpf_map_info. cilium's Info
// reads the fd's /proc fdinfo too: for the 27 objects of a take-over that was 6% of a warm
// `learn -- true`'s CPU.
func bpfObjName(fd int, prog bool) (string, error) {
	const progName, mapName, nameLen = 64, 24, 16 // offsetof(..., name), BPF_OBJ_NAME_LEN
	info := new([progName + nameLen]byte)
	attr := struct {
		fd, len uint32
		info    uint64
	}{uint32(fd), uint32(len(info)), uint64(uintptr(unsafe.Pointer(info)))}
	_, _, errno := unix.Syscall(unix.SYS_BPF, unix.BPF_OBJ_GET_INFO_BY_FD, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr))
	runtime.KeepAlive(info)
	if errno != 0 {
		return "", errno
	}
	off := mapName
	if prog {
		off = progName
	}
	name := info[off : off+nameLen]
	if i := bytes.IndexByte(name, 0); i >= 0 {
		name = name[:i]
	}
	return string(name), nil
}

// warmProbe makes a probe of a claim for the run of cgroup cgid: it resets what learn.c keeps
// per run and attaches the per-run hooks.
func warmProbe(c *warmClaim, cgid uint64, cgroupDir string, ph *phases) (p *probe, err error) {
	p = &probe{objs: c.objs, perfFDs: c.perfs, warmable: true}
	taken := p // a failing return sets p to nil before this runs
	defer func() {
		if err != nil {
			taken.warmable = false // not in a known state: the kernel closes it all
			taken.close()
		}
	}()
	if err := resetRun(&p.objs, cgid); err != nil {
		return nil, &LoadError{Step: "reset a warm probe", Err: err}
	}
	ph.mark("reset warm probe")
	if err := p.attach(cgroupDir, ph, func() error { return nil }); err != nil {
		return nil, err
	}
	return p, nil
}

// resetRun readies taken-over maps for the run of cgroup cgid: counters, directory ids and the
// rings' read positions, then the run gets a new id and writes to events first. The hash maps are not cleared again (an
// empty one still costs a walk of all its buckets, 393,216 for the three): a run hands its objects
// on only after its cgroup emptied and it emptied the maps (probe.close), and without a process
// of that run nothing inserts (sys_enter and sched_fork need the task in `tasks`, sched_exec
// the run's cgroup).
func resetRun(objs *bpf.LearnObjects, cgid uint64) error {
	zeros := make([]uint64, ebpf.MustPossibleCPU())
	for i := range uint32(bpf.LearnCounterCNT_MAX) {
		if err := objs.Counters.Put(i, zeros); err != nil {
			return fmt.Errorf("reset counter %d: %w", i, err)
		}
	}
	if err := objs.PathState.Put(uint32(0), make([]byte, objs.PathState.ValueSize())); err != nil {
		return fmt.Errorf("reset path_state: %w", err)
	}
	for _, m := range []*ebpf.Map{objs.Events, objs.Spill} {
		if err := skipRing(m); err != nil {
			return fmt.Errorf("skip the ring buffer %s: %w", m, err)
		}
	}
	var rs bpf.LearnRunState
	if err := objs.Run.Lookup(uint32(0), &rs); err != nil {
		return fmt.Errorf("read run: %w", err)
	}
	rs.Cgid, rs.Id, rs.Escaped, rs.Spilled = cgid, nextRunID(rs.Id), 0, 0
	return objs.Run.Put(uint32(0), rs)
}

// nextRunID is the id of the run that takes over a probe whose last run had id prev: one no
// earlier run of these objects had (the stashes and the dedup table tell runs apart by it).
// A variable for the tests, which give runs the ids that made two runs' fingerprints collide.
var nextRunID = func(prev uint64) uint64 { return prev + 1 }

// skipRing moves the ring buffer's consumer position to its producer's: what was left unread is
// never read.
func skipRing(m *ebpf.Map) error {
	page := os.Getpagesize()
	cons, err := unix.Mmap(m.FD(), 0, page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return err
	}
	defer unix.Munmap(cons)
	prod, err := unix.Mmap(m.FD(), int64(page), page, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return err
	}
	defer unix.Munmap(prod)
	pos := atomic.LoadUint64((*uint64)(unsafe.Pointer(&prod[0])))
	atomic.StoreUint64((*uint64)(unsafe.Pointer(&cons[0])), pos)
	return nil
}
