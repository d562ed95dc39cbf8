package sandbox

import (
	"debug/elf"
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

// elfInterpreter returns the PT_INTERP of an ELF file, or "" (not ELF, static, unreadable).
func elfInterpreter(path string) string {
	f, err := elf.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP || p.Filesz == 0 || p.Filesz > 4096 {
			continue
		}
		b := make([]byte, p.Filesz)
		if _, err := p.ReadAt(b, 0); err != nil {
			return ""
		}
		s := strings.TrimRight(string(b), "\x00")
		if filepath.IsAbs(s) {
			return s
		}
	}
	return ""
}
