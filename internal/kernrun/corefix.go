package kernrun

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/cilium/ebpf"
	ebpfasm "github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/btf"
	"golang.org/x/sys/unix"
)

// CO-RE fixups of a BPF object, remembered per kernel.
//
// Relocating an object's programs against the running kernel needs the kernel's BTF: parsing
// it and matching the types costs ~20 ms of CPU. The result depends only on the kernel and on
// the object, so it is computed once and kept in a root-only file under CoreFixupDir, named after
// the object ("learn", "guard": the objects never share a file) and keyed by a digest of the
// kernel's identity (boot id, release, version, build-id notes, size of its BTF), of the name and
// of the object's instructions and relocations. A later run applies the stored instruction fields
// and loads without the kernel's BTF (as long as its programs need the BTF for nothing else: no
// tp_btf, fentry or kfuncs). The verifier checks the programs either way; a missing, unreadable or
// mismatching file only means the slow path. Used by profiler (learn.c) and enforcer (guard.c).

// CoreFixupDir holds the fixup files (tmpfs: gone with the kernel that booted).
var CoreFixupDir = "/run/sysprof"

// SwapCoreFixupDir sets CoreFixupDir to dir and returns what restores it (for tests:
// t.Cleanup(kernrun.SwapCoreFixupDir(t.TempDir()))).
func SwapCoreFixupDir(dir string) (restore func()) {
	old := CoreFixupDir
	CoreFixupDir = dir
	return func() { CoreFixupDir = old }
}

const coreFixupVersion = "sysprof-core-fixups-v1 cilium/ebpf v0.22.0"

// coreFix is one relocated instruction: its index in the program and its fields afterwards.
type coreFix struct {
	I     int    `json:"i"`
	Op    uint32 `json:"op"`
	Dst   uint8  `json:"dst"`
	Src   uint8  `json:"src"`
	Off   int16  `json:"off"`
	Const int64  `json:"c"`
}

type coreFixupFile struct {
	Key      string               `json:"key"`
	Programs map[string][]coreFix `json:"programs"`
}

// runningKernelID digests what identifies the running kernel's types. The kernel's BTF cannot
// change while it runs, so the boot id pins it (reading the ~5 MB BTF to checksum it cost ~1-2 ms
// per run); release, version, build-id notes and the BTF's size only guard against a stale file
// in a /run that outlived a boot.
var runningKernelID = sync.OnceValues(func() ([]byte, error) {
	h := sha256.New()
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return nil, err
	}
	h.Write(u.Release[:])
	h.Write(u.Version[:])
	h.Write(u.Machine[:])
	if notes, err := os.ReadFile("/sys/kernel/notes"); err == nil {
		h.Write(notes)
	}
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil || len(boot) < 32 {
		return nil, fmt.Errorf("no boot id: %v", err)
	}
	h.Write(boot)
	st, err := os.Stat("/sys/kernel/btf/vmlinux")
	if err != nil {
		return nil, err
	}
	h.Write(binary.LittleEndian.AppendUint64(nil, uint64(st.Size())))
	return h.Sum(nil), nil
})

// CoreFixups are the stored CO-RE fixups of one object (name, e.g. "learn") on this kernel. Its
// methods may be called from several goroutines.
type CoreFixups struct {
	name, key string
	parsed    *ebpf.CollectionSpec // the object as parsed: Relocate completes the stored set from it

	mu    sync.Mutex
	dir   string               // where known came from (CoreFixupDir then)
	known map[string][]coreFix // the fixups read or computed by this process, nil if none yet
}

// NewCoreFixups names the fixups of spec's programs (as parsed: before any relocation) on this
// kernel; the key digests their instructions and relocations. spec is kept, and must not be
// changed afterwards (runs relocate copies of it).
func NewCoreFixups(name string, spec *ebpf.CollectionSpec) (*CoreFixups, error) {
	kid, err := runningKernelID()
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	h.Write([]byte(coreFixupVersion))
	h.Write(kid)
	h.Write([]byte(name))
	names := make([]string, 0, len(spec.Programs))
	for n := range spec.Programs {
		names = append(names, n)
	}
	slices.Sort(names)
	var buf []byte
	for _, n := range names {
		p := spec.Programs[n]
		buf = fmt.Appendf(buf[:0], "\x00prog %s %d\x00", n, len(p.Instructions))
		for i := range p.Instructions {
			ins := &p.Instructions[i]
			buf = binary.LittleEndian.AppendUint32(buf, uint32(ins.OpCode))
			buf = append(buf, uint8(ins.Dst), uint8(ins.Src))
			buf = binary.LittleEndian.AppendUint16(buf, uint16(ins.Offset))
			buf = binary.LittleEndian.AppendUint64(buf, uint64(ins.Constant))
			if r := btf.CORERelocationMetadata(ins); r != nil {
				buf = fmt.Appendf(buf, "relo %s\x00", r)
			}
		}
		h.Write(buf)
	}
	return &CoreFixups{name: name, key: hex.EncodeToString(h.Sum(nil)), parsed: spec}, nil
}

func (cf *CoreFixups) path() string {
	return filepath.Join(CoreFixupDir, cf.name+"-"+cf.key[:32]+".json")
}

// fixups are the stored fixups: read from the file once per process (and directory), or what
// Relocate computed; nil when there are none (then the file is read again next time).
func (cf *CoreFixups) fixups() map[string][]coreFix {
	cf.mu.Lock()
	defer cf.mu.Unlock()
	if cf.known != nil && cf.dir == CoreFixupDir {
		return cf.known
	}
	b, err := os.ReadFile(cf.path())
	if err != nil {
		return nil
	}
	var stored coreFixupFile
	if json.Unmarshal(b, &stored) != nil || stored.Key != cf.key || stored.Programs == nil {
		return nil
	}
	cf.known, cf.dir = stored.Programs, CoreFixupDir
	return cf.known
}

// Apply writes the stored fixups into spec's programs (all of the object's, or some of them). It
// reports whether it did: only when the stored fixups name exactly the relocated instructions of
// every program of spec (or when no program has relocations); otherwise spec is left untouched.
func (cf *CoreFixups) Apply(spec *ebpf.CollectionSpec) bool {
	if !hasRelocations(spec) {
		return true
	}
	stored := cf.fixups()
	if stored == nil {
		return false
	}
	for name, p := range spec.Programs {
		if !fixesMatch(p, stored[name]) {
			return false
		}
	}
	for name, p := range spec.Programs {
		applyFixes(p, stored[name])
	}
	return true
}

// Relocate relocates spec's programs (all of the object's, or some of them) against kernel in
// place and stores the fixups of all of the object's programs for Apply (a nil cf stores
// nothing). A program it cannot relocate on its own (a relocation against a local type id)
// keeps its relocations for the loader, and nothing is stored; it reports whether every program
// of spec was relocated.
func (cf *CoreFixups) Relocate(spec *ebpf.CollectionSpec, kernel *btf.Spec) bool {
	computed := map[string][]coreFix{}
	all := true
	for name, p := range spec.Programs {
		fixes, err := relocateProgram(p, kernel)
		if err != nil {
			all = false
			continue
		}
		computed[name] = fixes
	}
	if !all || cf == nil {
		return all
	}
	// Store only a complete set: the programs spec lacks (a run that loads only some) are
	// relocated on copies of the parsed object.
	for name, p := range cf.parsed.Programs {
		if _, ok := computed[name]; ok {
			continue
		}
		fixes, err := relocateProgram(p.Copy(), kernel)
		if err != nil {
			return all
		}
		computed[name] = fixes
	}
	cf.mu.Lock()
	cf.known, cf.dir = computed, CoreFixupDir
	cf.mu.Unlock()
	cf.store(&coreFixupFile{Key: cf.key, Programs: computed})
	return all
}

func hasRelocations(spec *ebpf.CollectionSpec) bool {
	for _, p := range spec.Programs {
		for i := range p.Instructions {
			if btf.CORERelocationMetadata(&p.Instructions[i]) != nil {
				return true
			}
		}
	}
	return false
}

// relocateProgram applies p's relocations against kernel in place and returns them as fixes.
// It fails, touching nothing, when a relocation needs the program's own BTF (a local type id).
func relocateProgram(p *ebpf.ProgramSpec, kernel *btf.Spec) ([]coreFix, error) {
	var relos []*btf.CORERelocation
	var idx []int
	for i := range p.Instructions {
		if r := btf.CORERelocationMetadata(&p.Instructions[i]); r != nil {
			relos = append(relos, r)
			idx = append(idx, i)
		}
	}
	fixes := []coreFix{}
	if len(relos) == 0 {
		return fixes, nil
	}
	bo := p.ByteOrder
	if bo == nil {
		bo = binary.NativeEndian
	}
	var b btf.Builder
	fixups, err := btf.CORERelocate(relos, []*btf.Spec{kernel}, bo, b.Add)
	if err != nil {
		return nil, err
	}
	if !b.Empty() {
		return nil, errors.New("relocation against a local type id")
	}
	insns := slices.Clone(p.Instructions)
	for j, i := range idx {
		ins := &insns[i]
		if err := fixups[j].Apply(ins); err != nil {
			return nil, err
		}
		*ins = btf.WithCORERelocationMetadata(*ins, nil)
		fixes = append(fixes, coreFix{I: i, Op: uint32(ins.OpCode), Dst: uint8(ins.Dst), Src: uint8(ins.Src),
			Off: ins.Offset, Const: ins.Constant})
	}
	p.Instructions = insns
	return fixes, nil
}

// fixesMatch reports whether fixes name exactly the instructions of p that carry a relocation.
func fixesMatch(p *ebpf.ProgramSpec, fixes []coreFix) bool {
	j := 0
	for i := range p.Instructions {
		if btf.CORERelocationMetadata(&p.Instructions[i]) == nil {
			continue
		}
		if j >= len(fixes) || fixes[j].I != i {
			return false
		}
		j++
	}
	return j == len(fixes)
}

// applyFixes writes fixes (checked with fixesMatch) into p's instructions.
func applyFixes(p *ebpf.ProgramSpec, fixes []coreFix) {
	for _, f := range fixes {
		ins := &p.Instructions[f.I]
		ins.OpCode, ins.Dst, ins.Src = ebpfasm.OpCode(f.Op), ebpfasm.Register(f.Dst), ebpfasm.Register(f.Src)
		ins.Offset, ins.Constant = f.Off, f.Const
		*ins = btf.WithCORERelocationMetadata(*ins, nil)
	}
}

// store writes f for later runs (atomically; errors only cost the next run the slow path).
func (cf *CoreFixups) store(f *coreFixupFile) {
	b, err := json.Marshal(f)
	if err != nil {
		return
	}
	if err := os.MkdirAll(CoreFixupDir, 0o700); err != nil {
		return
	}
	tmp, err := os.CreateTemp(CoreFixupDir, "."+cf.name+"-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if werr != nil || cerr != nil || os.Rename(tmp.Name(), cf.path()) != nil {
		os.Remove(tmp.Name())
	}
	// Files of other sysprof builds stay: two builds in use would otherwise undo each other's
	// (they are ~10 kB, and /run is emptied at boot).
}

// KernelID digests what identifies the running kernel and this boot of it (see runningKernelID),
// for other objects kept per boot.
func KernelID() ([]byte, error) { return runningKernelID() }
