package sandbox

import (
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
)

func TestInterpreterRules(t *testing.T) {
	interp := elfInterpreter("/usr/bin/true")
	if interp == "" {
		testutil.RequireNoErr(t, "a dynamically linked /usr/bin/true", testutil.NotAvailable("it has no ELF interpreter"))
	}
	resolved, err := filepath.EvalSymlinks(interp)
	if err != nil {
		t.Fatal(err)
	}
	// A directory of binaries implies its interpreter once.
	added, notes := interpreterRules([]pathRule{{Path: "/usr/bin", Role: "exec", Access: rightsExec}}, rightsExec)
	if len(added) != 1 || added[0].Path != resolved || added[0].Access != rightsExec || len(notes) != 1 {
		t.Errorf("exec /usr/bin: added %+v notes %q, want %s", added, notes, resolved)
	}
	// Already executable under another rule: nothing added.
	added, _ = interpreterRules([]pathRule{
		{Path: "/usr/bin/true", Role: "exec", Access: rightsExec},
		{Path: filepath.Dir(resolved), Role: "exec", Access: rightsExec},
	}, rightsExec)
	if len(added) != 0 {
		t.Errorf("interpreter already allowed: added %+v", added)
	}
	// Read rules never imply exec; non-ELF files are ignored.
	added, _ = interpreterRules([]pathRule{
		{Path: "/usr/bin/true", Role: "read", Access: rightsRead},
		{Path: "/etc/passwd", Role: "exec", Access: rightsExec},
	}, rightsExec)
	if len(added) != 0 {
		t.Errorf("added %+v for read rules and non-ELF", added)
	}
}

// elfInterpreter reads PT_INTERP as debug/elf does, for every file of the host's binary and
// library directories (64- and 32-bit, static and dynamic, scripts, shared objects).
func TestElfInterpreterAgreesWithDebugElf(t *testing.T) {
	want := func(path string) string {
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
			if s := strings.TrimRight(string(b), "\x00"); filepath.IsAbs(s) {
				return s
			}
		}
		return ""
	}
	files, dynamic := 0, 0
	for _, dir := range []string{"/usr/bin", "/usr/sbin", "/usr/lib/x86_64-linux-gnu", "/usr/lib/i386-linux-gnu", "/usr/lib/go/pkg/tool"} {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if !e.Type().IsRegular() {
				continue
			}
			p := filepath.Join(dir, e.Name())
			w := want(p)
			if got := elfInterpreter(p); got != w {
				t.Errorf("%s: %q, debug/elf reads %q", p, got, w)
			}
			files++
			if w != "" {
				dynamic++
			}
		}
	}
	if dynamic == 0 {
		t.Errorf("no dynamically linked binary among %d files", files)
	}
}

// The same for made-up 32-bit little-endian and 64-bit big-endian files (none on this host).
func TestElfInterpreterOtherClasses(t *testing.T) {
	const interp = "/lib/ld-test.so.1\x00"
	for _, tc := range []struct {
		name  string
		class byte
		bo    binary.ByteOrder
	}{{"elf32 le", 1, binary.LittleEndian}, {"elf64 be", 2, binary.BigEndian}} {
		t.Run(tc.name, func(t *testing.T) {
			ehsize, phentsize := 52, 32
			if tc.class == 2 {
				ehsize, phentsize = 64, 56
			}
			b := make([]byte, ehsize+2*phentsize+len(interp))
			copy(b, "\x7fELF")
			b[4], b[5], b[6] = tc.class, 1, 1
			if tc.bo == binary.BigEndian {
				b[5] = 2
			}
			tc.bo.PutUint16(b[16:], uint16(elf.ET_EXEC))
			tc.bo.PutUint32(b[20:], 1)
			off := ehsize + 2*phentsize
			ph := b[ehsize:]
			if tc.class == 1 {
				tc.bo.PutUint32(b[0x1c:], uint32(ehsize))
				tc.bo.PutUint16(b[0x28:], uint16(ehsize))
				tc.bo.PutUint16(b[0x2a:], uint16(phentsize))
				tc.bo.PutUint16(b[0x2c:], 2)
				tc.bo.PutUint32(ph, uint32(elf.PT_NOTE))
				ph = ph[phentsize:]
				tc.bo.PutUint32(ph, uint32(elf.PT_INTERP))
				tc.bo.PutUint32(ph[4:], uint32(off))
				tc.bo.PutUint32(ph[16:], uint32(len(interp)))
			} else {
				tc.bo.PutUint64(b[0x20:], uint64(ehsize))
				tc.bo.PutUint16(b[0x34:], uint16(ehsize))
				tc.bo.PutUint16(b[0x36:], uint16(phentsize))
				tc.bo.PutUint16(b[0x38:], 2)
				tc.bo.PutUint32(ph, uint32(elf.PT_NOTE))
				ph = ph[phentsize:]
				tc.bo.PutUint32(ph, uint32(elf.PT_INTERP))
				tc.bo.PutUint64(ph[8:], uint64(off))
				tc.bo.PutUint64(ph[32:], uint64(len(interp)))
			}
			copy(b[off:], interp)
			path := filepath.Join(t.TempDir(), "bin")
			if err := os.WriteFile(path, b, 0o755); err != nil {
				t.Fatal(err)
			}
			f, err := elf.Open(path)
			if err != nil {
				t.Fatalf("debug/elf does not read the test file: %v", err)
			}
			f.Close()
			if got := elfInterpreter(path); got != "/lib/ld-test.so.1" {
				t.Errorf("got %q", got)
			}
		})
	}
}
