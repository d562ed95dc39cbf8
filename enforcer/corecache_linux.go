package enforcer

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

// CO-RE fixups of guard.c, remembered per kernel.
//
// Relocating guard.c's programs against the running kernel needs the kernel's BTF: parsing it
// and matching the types costs ~20 ms of CPU per run, more than everything else in enforce's
// startup. The result depends only on the kernel and on the object, so it is computed once and
// kept in a root-only file under coreCacheDir, keyed by a digest of the kernel's identity
// (boot id, release, version, build-id notes, size of its BTF) and of the programs'
// instructions and relocations. A later run applies the stored instruction fields and loads
// without the kernel's BTF. The verifier checks the programs either way; a missing,
// unreadable or mismatching file only means the slow path.

// coreCacheDir holds the fixup files (tmpfs: gone with the kernel that booted).
var coreCacheDir = "/run/sysprof"

const coreCacheVersion = "sysprof-core-fixups-v1 cilium/ebpf v0.22.0"

// coreFix is one relocated instruction: its index in the program and its fields afterwards.
type coreFix struct {
	I     int    `json:"i"`
	Op    uint32 `json:"op"`
	Dst   uint8  `json:"dst"`
	Src   uint8  `json:"src"`
	Off   int16  `json:"off"`
	Const int64  `json:"c"`
}

type coreFile struct {
	Key      string               `json:"key"`
	Programs map[string][]coreFix `json:"programs"`
}

// kernelID digests what identifies the running kernel's types. The kernel's BTF cannot change
// while it runs, so the boot id pins it (reading the ~5 MB BTF to checksum it cost ~1-2 ms
// per run); release, version, build-id notes and the BTF's size only guard against a stale
// file in a /run that outlived a boot.
var kernelID = sync.OnceValues(func() ([]byte, error) {
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

// coreKey is the digest of the kernel and of spec's programs (instructions and relocations).
func coreKey(spec *ebpf.CollectionSpec) (string, error) {
	kid, err := kernelID()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write([]byte(coreCacheVersion))
	h.Write(kid)
	var buf []byte
	for _, name := range sortedKeys(spec.Programs) {
		p := spec.Programs[name]
		buf = fmt.Appendf(buf[:0], "\x00prog %s %d\x00", name, len(p.Instructions))
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
	return hex.EncodeToString(h.Sum(nil)), nil
}

// coreMu guards the Programs of guardCore's value (filled in by the first run that computes them).
var coreMu sync.Mutex

// guardCore is the key and stored fixups of the guard object on this kernel (Programs nil when
// nothing is stored yet).
var guardCore = sync.OnceValues(func() (*coreFile, error) {
	spec, err := guardSpec()
	if err != nil {
		return nil, err
	}
	key, err := coreKey(spec)
	if err != nil {
		return nil, err
	}
	cf := &coreFile{Key: key}
	b, err := os.ReadFile(filepath.Join(coreCacheDir, "guard-"+key[:32]+".json"))
	if err != nil {
		return cf, nil
	}
	var stored coreFile
	if json.Unmarshal(b, &stored) == nil && stored.Key == key {
		cf.Programs = stored.Programs
	}
	return cf, nil
})

func (cf *coreFile) stored() bool {
	coreMu.Lock()
	defer coreMu.Unlock()
	return cf.Programs != nil
}

// relocate applies the CO-RE relocations of spec's programs: from the stored fixups when there
// are, else against the kernel's BTF (and stores them). It reports whether a program is left
// with relocations for the loader (then it needs the kernel's BTF as usual).
func relocate(spec *ebpf.CollectionSpec) (left bool) {
	cf, err := guardCore()
	if err != nil {
		return true
	}
	coreMu.Lock()
	stored := cf.Programs
	coreMu.Unlock()
	if stored != nil {
		for name, p := range spec.Programs {
			if !applyStored(p, stored[name]) {
				left = true
			}
		}
		return left
	}
	kernel, err := kernelBTF()
	if err != nil {
		return true
	}
	computed := map[string][]coreFix{}
	for _, name := range sortedKeys(spec.Programs) {
		p := spec.Programs[name]
		fixes, err := relocateProgram(p, kernel)
		if err != nil {
			left = true
			continue
		}
		computed[name] = fixes
	}
	// Store only a complete set (the programs a run does not attach were deleted from spec):
	// compute the others on the shared spec's copies.
	if shared, err := guardSpec(); err == nil {
		for name, p := range shared.Programs {
			if _, ok := computed[name]; ok {
				continue
			}
			fixes, err := relocateProgram(p.Copy(), kernel)
			if err != nil {
				return left
			}
			computed[name] = fixes
		}
	}
	coreMu.Lock()
	cf.Programs = computed
	coreMu.Unlock()
	storeCore(&coreFile{Key: cf.Key, Programs: computed})
	return left
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

// applyStored writes stored fixes into p's relocated instructions, after checking that they
// name exactly the instructions that carry a relocation; it touches nothing otherwise.
func applyStored(p *ebpf.ProgramSpec, fixes []coreFix) bool {
	if fixes == nil {
		return false
	}
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
	if j != len(fixes) {
		return false
	}
	for _, f := range fixes {
		ins := &p.Instructions[f.I]
		ins.OpCode, ins.Dst, ins.Src = ebpfasm.OpCode(f.Op), ebpfasm.Register(f.Dst), ebpfasm.Register(f.Src)
		ins.Offset, ins.Constant = f.Off, f.Const
		*ins = btf.WithCORERelocationMetadata(*ins, nil)
	}
	return true
}

// storeCore writes cf for later runs (atomically; errors only cost the next run the slow path).
func storeCore(cf *coreFile) {
	b, err := json.Marshal(cf)
	if err != nil {
		return
	}
	if err := os.MkdirAll(coreCacheDir, 0o700); err != nil {
		return
	}
	tmp, err := os.CreateTemp(coreCacheDir, ".guard-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	name := filepath.Join(coreCacheDir, "guard-"+cf.Key[:32]+".json")
	if werr != nil || cerr != nil || os.Rename(tmp.Name(), name) != nil {
		os.Remove(tmp.Name())
	}
	// Files of other sysprof builds stay: two builds in use would otherwise undo each other's
	// (they are ~10 kB, and /run is emptied at boot).
}
