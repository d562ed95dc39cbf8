package guard

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/bpf"
	"github.com/sysprof/sysprof/internal/kernrun"
	"github.com/sysprof/sysprof/internal/phase"
)

// The guard's programs, verified once and kept in bpffs.
//
// Parsing guard.c's object and loading its programs (the verifier) costs ~10 ms of CPU per
// run, more than everything else enforce does before the command runs. Nothing in the programs
// or in their maps belongs to one run (see guard.c), so the first run on a boot loads them and
// pins them under pinRoot/guard-<key>/, and later runs open the pins (a few µs each) and only
// enter their own state (configuration, a ring buffer slot), keyed by their cgroup id, so that
// concurrent runs share nothing but the programs.
//
//   - The key digests the object embedded in this binary, the loader's version, the syscall
//     table guard.c is given (fops), and the kernel (release, version, boot id): pins of another
//     sysprof build or another boot are never opened. Publishing a new directory removes the
//     others (a build still running keeps what it holds open and loads again next time).
//   - The directory appears at once (pinned into a temporary directory, then renamed), so a
//     run sees all pins or none. It is root-only (0700, in bpffs, which is root-only too).
//   - Every pin is checked when opened (program type, map type, key and value sizes, size): a
//     missing or unusable pin removes the directory and the run loads afresh and publishes
//     again. bpffs is mounted at pinRoot's parent when nothing mounted it (kernrun.EnsureBPFFS);
//     where that fails, or when publishing fails, the run uses what it loaded, unpinned.
//   - A run holds a slot while it runs: the slot's ring buffer and the slot's own instance of
//     the file-denial program (the kernel refuses to attach one program twice to a tracepoint,
//     and detaching it takes a grace period, so the helper that detaches it after the run
//     releases the slot, unless the next run takes it over first; see handOff and
//     warm_linux.go). Both are made on the slot's first use and kept.
//   - A run removes its entries when it ends. A run that was killed leaves them: later runs
//     remove the entries of run cgroups that no longer exist, and free the slots of owners
//     (processes) that no longer exist.
//
// The cost of keeping them: the programs, ~100 kB of maps, and per slot ever used at the same
// time (usually one or two) 4 MB of ring buffer and a program, until reboot or the next
// sysprof build.

// pinRoot is where the guard's pins live (in the bpffs mount).
var pinRoot = "/sys/fs/bpf/sysprof"

// PinRoot is the bpffs directory where enforce keeps the guard's verified programs between runs
// (for `sysprof doctor`).
func PinRoot() string { return pinRoot }

// pinLayout: v2, slot owners hold the slot's lock (slotown_linux.go). The Go side's ownership
// rules are part of what the pins mean: a build that frees slots by pid alone must not share
// these maps (it freed live runs' slots from another pid namespace).
const pinLayout = "sysprof guard pins v2"

// fileProgram observes file denials: guard.c's one program.
const fileProgram = "sys_exit_path"

// What guard.c defines (checked against the object by TestGuardObjectMatchesExpectations).
const (
	ringSlots = 64
	ringbufSz = 4 << 20
	runsMax   = 1024
)

// guardMaps are the maps user space uses, with what a pin of each must be.
var guardMaps = sync.OnceValue(func() map[string]ebpf.MapSpec {
	return map[string]ebpf.MapSpec{
		"runs":       {Type: ebpf.Hash, KeySize: 8, ValueSize: uint32(binary.Size(bpf.GuardRunCfg{})), MaxEntries: runsMax},
		"rings":      {Type: ebpf.ArrayOfMaps, KeySize: 4, ValueSize: 4, MaxEntries: ringSlots},
		"slot_owner": {Type: ebpf.Hash, KeySize: 4, ValueSize: 8, MaxEntries: ringSlots},
		"slot_cgid":  {Type: ebpf.Array, KeySize: 4, ValueSize: 8, MaxEntries: ringSlots},
	}
})

// ringSpec is a ring buffer of rings.
func ringSpec() *ebpf.MapSpec {
	return &ebpf.MapSpec{Name: "guard_ring", Type: ebpf.RingBuf, MaxEntries: ringbufSz}
}

// guardObjs are guard.c's maps and the file program's instances: loaded by this process, or
// opened from the pins.
type guardObjs struct {
	maps map[string]*ebpf.Map
	dir  string // the pins ("": this process's own objects)

	mu    sync.Mutex
	files map[uint32]*ebpf.Program // the file-denial program of each slot
}

func (o *guardObjs) pinned() bool { return o.dir != "" }

func (o *guardObjs) close() {
	for _, m := range o.maps {
		m.Close()
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, p := range o.files {
		p.Close()
	}
}

// fileProgram returns slot's instance of the file-denial program: opened from its pin, or
// loaded (and pinned). fresh asks for an instance of this process's own, unpinned.
func (o *guardObjs) fileProgram(slot uint32, fresh bool) (*ebpf.Program, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if p := o.files[slot]; p != nil && !fresh {
		return p, nil
	}
	if o.pinned() && !fresh {
		p, err := ebpf.LoadPinnedProgram(filePin(o.dir, slot), nil)
		if err == nil && p.Type() == ebpf.TracePoint {
			o.files[slot] = p
			return p, nil
		}
		if err == nil {
			p.Close()
		}
		if err == nil || !errors.Is(err, os.ErrNotExist) {
			os.Remove(filePin(o.dir, slot)) // unusable: replaced below
		}
	}
	p, err := o.loadFileProgram()
	if err != nil {
		return nil, err
	}
	if fresh {
		return p, nil
	}
	if o.pinned() {
		// The slot is this run's: nobody else pins this name meanwhile. Unpinned (the
		// directory was removed by another build), it serves this process all the same.
		_ = p.Pin(filePin(o.dir, slot))
	}
	o.files[slot] = p
	return p, nil
}

// loadFileProgram loads another instance of the file-denial program on o's maps.
func (o *guardObjs) loadFileProgram() (*ebpf.Program, error) {
	shared, err := guardSpec()
	if err != nil {
		return nil, fmt.Errorf("parse guard BPF object: %w", err)
	}
	spec := shared.Copy()
	for name := range spec.Programs {
		if name != fileProgram {
			delete(spec.Programs, name)
		}
	}
	opts := relocatedOptions(spec)
	opts.MapReplacements = map[string]*ebpf.Map{}
	for name := range spec.Maps {
		m := o.maps[name]
		if m == nil {
			return nil, fmt.Errorf("BUG: guard.c map %s is not kept", name)
		}
		opts.MapReplacements[name] = m
	}
	coll, err := ebpf.NewCollectionWithOptions(spec, opts)
	if err != nil {
		return nil, fmt.Errorf("load guard BPF programs: %w", err)
	}
	defer coll.Close()
	return coll.DetachProgram(fileProgram), nil
}

// openGuard opens the pinned programs, or loads them (and pins them when it can).
func openGuard() (*guardObjs, error) {
	dir, err := pinDir()
	if err == nil {
		o, err := openPinned(dir)
		if err == nil {
			phase.Mark("guard: open pins")
			return o, nil
		}
		if !errors.Is(err, errNoPins) {
			// Unusable (a pin missing or not what it must be): never again. (A run that
			// opened it before keeps what it holds.)
			os.RemoveAll(dir)
		}
	}
	o, err := loadGuard()
	if err != nil {
		return nil, err
	}
	phase.Mark("guard: load")
	if dir != "" && publish(o, dir) == nil {
		o.dir = dir
	}
	return o, nil
}

// pinKey digests what the pins depend on (see the comment at the top).
var pinKey = sync.OnceValues(func() (string, error) {
	h := sha256.New()
	h.Write([]byte(pinLayout + "\x00"))
	obj := bpf.GuardDigest()
	h.Write(obj[:])
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/cilium/ebpf" {
				h.Write([]byte(d.Path + " " + d.Version + " " + d.Sum + "\x00"))
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(fileOps())) {
		nr := arch64Number(name)
		fmt.Fprintf(h, "%s=%d:%d\x00", name, nr, fileOps()[name])
	}
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return "", err
	}
	h.Write(u.Release[:])
	h.Write(u.Version[:])
	h.Write(u.Machine[:])
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil || len(boot) < 32 {
		return "", fmt.Errorf("no boot id: %v", err)
	}
	h.Write(boot)
	return hex.EncodeToString(h.Sum(nil)), nil
})

// pinDir is this binary's pin directory on this boot, or an error when there is no bpffs at
// pinRoot's parent and none can be mounted there (the run then goes unpinned).
func pinDir() (string, error) {
	if err := kernrun.EnsureBPFFS(filepath.Dir(pinRoot)); err != nil {
		return "", err
	}
	key, err := pinKey()
	if err != nil {
		return "", err
	}
	return filepath.Join(pinRoot, "guard-"+key[:32]), nil
}

func mapPin(dir, name string) string { return filepath.Join(dir, "map_"+pinName(name)) }

// pinName spells a map name for bpffs, which refuses dots (".bss" is "dot_bss").
func pinName(name string) string {
	if rest, ok := strings.CutPrefix(name, "."); ok {
		return "dot_" + rest
	}
	return name
}

func mapName(pin string) string {
	if rest, ok := strings.CutPrefix(pin, "dot_"); ok {
		return "." + rest
	}
	return pin
}
func filePin(dir string, slot uint32) string {
	return filepath.Join(dir, fmt.Sprintf("prog_%s_%d", fileProgram, slot))
}

// openPinned opens every pin of dir and checks it. os.ErrNotExist when dir is not there.
// errNoPins: the pin directory is not there (yet).
var errNoPins = errors.New("no guard pins")

func openPinned(dir string) (*guardObjs, error) {
	if _, err := os.Stat(dir); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, errNoPins
		}
		return nil, err
	}
	o := &guardObjs{maps: map[string]*ebpf.Map{}, dir: dir, files: map[uint32]*ebpf.Program{}}
	if err := o.openPins(); err != nil {
		o.close()
		return nil, fmt.Errorf("guard pins %s: %w", dir, err)
	}
	return o, nil
}

// openPins opens every map pin of o.dir (another instance of the file program is loaded on
// them) and checks those user space uses; the slots' file programs are opened when taken
// (fileProgram).
func (o *guardObjs) openPins() error {
	dir := o.dir
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		pin, ok := strings.CutPrefix(e.Name(), "map_")
		if !ok {
			continue
		}
		m, err := ebpf.LoadPinnedMap(filepath.Join(dir, e.Name()), nil)
		if err != nil {
			return err
		}
		o.maps[mapName(pin)] = m
	}
	for name, want := range guardMaps() {
		m := o.maps[name]
		if m == nil {
			return fmt.Errorf("map %s: %w", name, os.ErrNotExist)
		}
		if err := want.Compatible(m); err != nil {
			return fmt.Errorf("map %s: %w", name, err)
		}
	}
	return nil
}

// loadGuard parses guard.c, loads its program (the file-denial program, as slot 0's) and fills
// its syscall table.
func loadGuard() (*guardObjs, error) {
	shared, err := guardSpec()
	if err != nil {
		return nil, fmt.Errorf("parse guard BPF object: %w", err)
	}
	spec := shared.Copy()
	coll, err := ebpf.NewCollectionWithOptions(spec, relocatedOptions(spec))
	if err != nil {
		return nil, fmt.Errorf("load guard BPF programs: %w", err)
	}
	defer coll.Close() // what o does not take
	if err := fillFops(coll.Maps["fops"]); err != nil {
		return nil, err
	}
	o := &guardObjs{maps: map[string]*ebpf.Map{}, files: map[uint32]*ebpf.Program{}}
	o.files[0] = coll.DetachProgram(fileProgram)
	for name := range spec.Maps {
		o.maps[name] = coll.DetachMap(name)
	}
	for name := range guardMaps() {
		if o.maps[name] == nil {
			o.close()
			return nil, fmt.Errorf("BUG: guard.c has no map %s", name)
		}
	}
	if o.files[0] == nil {
		o.close()
		return nil, fmt.Errorf("BUG: guard.c has no program %s", fileProgram)
	}
	return o, nil
}

// relocatedOptions applies the CO-RE relocations of spec's programs. The kernel's own types are
// the only relocation targets guard.c needs (task, file, dentry, mount): relocated from the
// fixups stored for this kernel (kernrun.CoreFixups, file "guard-*"), or against the kernel's
// BTF parsed once and shared by every run of this process (and then stored). A program left
// with relocations is relocated by the loader, against the same BTF.
func relocatedOptions(spec *ebpf.CollectionSpec) ebpf.CollectionOptions {
	var opts ebpf.CollectionOptions
	fix, err := guardFixups()
	if err == nil && fix.Apply(spec) {
		return opts
	}
	k, err := kernelBTF()
	if err != nil {
		return opts // the loader reports what it cannot relocate
	}
	if !fix.Relocate(spec, k) { // a nil fix (no boot id) stores nothing
		opts.Programs.KernelTypes = k
	}
	return opts
}

var pinSeq struct {
	sync.Mutex
	n int
}

// publish pins o's objects under dir: into a temporary directory first, renamed to dir when
// complete (another run may have published meanwhile: then o stays unpinned). It removes the
// pin directories of other builds and boots.
func publish(o *guardObjs, dir string) error {
	if err := os.Mkdir(pinRoot, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	pinSeq.Lock()
	pinSeq.n++
	tmp := filepath.Join(pinRoot, fmt.Sprintf("tmp-%d-%d-%d", os.Getpid(), pinSeq.n, time.Now().UnixNano()))
	pinSeq.Unlock()
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return err
	}
	err := func() error {
		for slot, p := range o.files {
			if err := p.Pin(filePin(tmp, slot)); err != nil {
				return err
			}
		}
		for name, m := range o.maps {
			if err := m.Pin(mapPin(tmp, name)); err != nil {
				return err
			}
		}
		return unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, dir, unix.RENAME_NOREPLACE)
	}()
	if err != nil {
		os.RemoveAll(tmp)
		return err
	}
	// Pins of other builds or boots (and temporary directories older than a minute: a run
	// killed while publishing).
	ents, _ := os.ReadDir(pinRoot)
	for _, e := range ents {
		p := filepath.Join(pinRoot, e.Name())
		switch {
		case p == dir:
		case strings.HasPrefix(e.Name(), "guard-"):
			os.RemoveAll(p)
		case strings.HasPrefix(e.Name(), "tmp-"):
			if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > time.Minute {
				os.RemoveAll(p)
			}
		}
	}
	return nil
}

// collectDead removes the entries of runs whose cgroup is gone (killed before they could
// remove them) from the shared maps, and frees the slots whose owner is gone (see
// slotown_linux.go: never one whose owner may be alive, in any pid namespace). Safe with
// runs starting meanwhile: the entries are listed before the live cgroups, and a run creates its
// cgroup before its entries.
func (o *guardObjs) collectDead() {
	runs, owners := o.maps["runs"], o.maps["slot_owner"]
	var slot uint32
	var v uint64
	it := owners.Iterate()
	taken := map[uint32]uint64{}
	for it.Next(&slot, &v) {
		taken[slot] = v
	}
	for s, v := range taken {
		// Under the slot's lock (free: no owner holds it), and only the entry seen.
		fd, _ := o.tryLockSlot(s)
		if fd < 0 {
			continue
		}
		var now uint64
		if ownerGone(v) && owners.Lookup(s, &now) == nil && now == v {
			owners.Delete(s)
		}
		unix.Close(fd)
	}
	seen := map[uint64]bool{}
	var id uint64
	var cfg bpf.GuardRunCfg
	it = runs.Iterate()
	for it.Next(&id, &cfg) {
		seen[id] = true
	}
	if len(seen) == 0 {
		return
	}
	live := liveRunCgroups()
	if live == nil {
		return
	}
	for id := range seen {
		if !live[id] {
			runs.Delete(id)
		}
	}
}

// liveRunCgroups are the cgroup ids of the run directories kernrun made (of any sysprof
// process), nil when they cannot be listed.
func liveRunCgroups() map[uint64]bool {
	mnt, err := kernrun.Cgroup2Mount()
	if err != nil {
		return nil
	}
	dirs, err := filepath.Glob(filepath.Join(mnt, "sysprof", "run-*"))
	if err != nil {
		return nil
	}
	live := map[uint64]bool{}
	for _, d := range dirs {
		var st unix.Stat_t
		if unix.Stat(d, &st) == nil {
			live[st.Ino] = true
		}
	}
	return live
}

// arch64Number is the native number of a syscall in fileOps (-1 when the table lacks it).
func arch64Number(name string) int {
	if nr, ok := bpf.NativeArch.SyscallNames[name]; ok {
		return nr
	}
	return -1
}
