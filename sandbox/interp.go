package sandbox

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// maxScanPerDir bounds how many files of one Exec directory are read for their ELF interpreter.
const maxScanPerDir = 512

// interpreterRules returns exec rules for the ELF interpreters (PT_INTERP, e.g.
// /lib64/ld-linux-x86-64.so.2) of the plan's Exec paths that are not already executable under
// another Exec rule. The kernel opens the interpreter of a dynamically linked binary as an exec,
// and Landlock checks EXECUTE on it: without this rule every dynamically linked binary the plan
// allows fails with EACCES. The libraries the interpreter then maps need only read_file. A learn
// run never sees the interpreter (only the binary is execve'd), so the profile cannot list it.
// For an Exec directory, up to maxScanPerDir of its files are looked at.
func interpreterRules(rules []pathRule, access uint64) (added []pathRule, notes []string) {
	var execRoots []string
	for _, r := range rules {
		if r.Access&fsExecute != 0 {
			execRoots = append(execRoots, r.Path)
		}
	}
	seen := map[string]bool{}
	consider := func(bin string) {
		interp := elfInterpreter(bin)
		if interp == "" || seen[interp] {
			return
		}
		seen[interp] = true
		resolved, err := filepath.EvalSymlinks(interp)
		if err != nil {
			return // the exec will fail with ENOENT, as on the host
		}
		if under(interp, execRoots) || under(resolved, execRoots) {
			return
		}
		added = append(added, pathRule{Path: resolved, Role: "exec", Access: access})
		notes = append(notes, "exec "+resolved+": ELF interpreter of "+bin)
	}
	for _, r := range rules {
		if r.Access&fsExecute == 0 {
			continue
		}
		st, err := os.Stat(r.Path)
		if err != nil {
			continue
		}
		if !st.IsDir() {
			consider(r.Path)
			continue
		}
		d, err := os.Open(r.Path)
		if err != nil {
			continue
		}
		ents, _ := d.ReadDir(maxScanPerDir)
		d.Close()
		for _, e := range ents {
			if e.Type().IsRegular() {
				consider(filepath.Join(r.Path, e.Name()))
			}
		}
	}
	slices.SortFunc(added, func(a, b pathRule) int { return strings.Compare(a.Path, b.Path) })
	slices.Sort(notes)
	return added, notes
}

// elfInterpreter returns the PT_INTERP of an ELF file, or "" (not ELF, static, unreadable). It
// reads the program headers itself: debug/elf (with DWARF and its decompressors) was ~0.3 MB of
// the init program, which is copied into a memfd and started on every run.
func elfInterpreter(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	var h [64]byte
	if _, err := f.ReadAt(h[:], 0); err != nil || string(h[:4]) != "\x7fELF" {
		return ""
	}
	var bo binary.ByteOrder
	switch h[5] { // EI_DATA
	case 1:
		bo = binary.LittleEndian
	case 2:
		bo = binary.BigEndian
	default:
		return ""
	}
	// Where the program headers are, and where a header keeps its type, offset and size.
	var phoff, entsize, num, offAt, szAt uint64
	var word func([]byte) uint64
	switch h[4] { // EI_CLASS
	case 1:
		phoff, entsize, num = uint64(bo.Uint32(h[0x1c:])), uint64(bo.Uint16(h[0x2a:])), uint64(bo.Uint16(h[0x2c:]))
		offAt, szAt, word = 4, 16, func(b []byte) uint64 { return uint64(bo.Uint32(b)) }
	case 2:
		phoff, entsize, num = bo.Uint64(h[0x20:]), uint64(bo.Uint16(h[0x36:])), uint64(bo.Uint16(h[0x38:]))
		offAt, szAt, word = 8, 32, bo.Uint64
	default:
		return ""
	}
	if entsize < szAt+8 || entsize > 256 || num == 0 || num >= 0xffff {
		return "" // 0xffff: the count is elsewhere (PN_XNUM), never so for an executable's few
	}
	phdrs := make([]byte, entsize*num)
	if _, err := f.ReadAt(phdrs, int64(phoff)); err != nil {
		return ""
	}
	const ptInterp = 3
	for i := uint64(0); i < num; i++ {
		p := phdrs[i*entsize : (i+1)*entsize]
		if bo.Uint32(p) != ptInterp {
			continue
		}
		off, size := word(p[offAt:]), word(p[szAt:])
		if size == 0 || size > 4096 {
			continue
		}
		b := make([]byte, size)
		if _, err := f.ReadAt(b, int64(off)); err != nil {
			return ""
		}
		s := strings.TrimRight(string(b), "\x00")
		if filepath.IsAbs(s) {
			return s
		}
	}
	return ""
}
