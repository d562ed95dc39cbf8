package kernrun

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/cilium/ebpf/btf"

	"github.com/sysprof/sysprof/bpf"
	"github.com/sysprof/sysprof/internal/testutil"
)

// TestCoreFixups: fixups computed against the kernel's BTF and stored give, applied to a fresh
// copy of the object, the same instructions; a stale or foreign file is not applied.
func TestCoreFixups(t *testing.T) {
	kernel, err := btf.LoadKernelSpec()
	testutil.RequireNoErr(t, "the kernel's BTF", err)
	old := CoreFixupDir
	CoreFixupDir = t.TempDir()
	t.Cleanup(func() { CoreFixupDir = old })

	parsed, err := bpf.LoadLearn()
	if err != nil {
		t.Fatal(err)
	}
	cf, err := NewCoreFixups("learn", parsed)
	testutil.RequireNoErr(t, "the kernel's identity (boot id)", err)
	if cf.Apply(parsed.Copy()) {
		t.Fatal("Apply reported success with nothing stored")
	}
	relocated := parsed.Copy()
	if !cf.Relocate(relocated, kernel) {
		t.Fatal("Relocate could not relocate every program on its own")
	}
	if hasRelocations(relocated) {
		t.Fatal("relocations left after Relocate")
	}
	applied := parsed.Copy()
	if !cf.Apply(applied) {
		t.Fatal("Apply did not use the stored fixups")
	}
	for name, p := range relocated.Programs {
		q := applied.Programs[name]
		if len(p.Instructions) != len(q.Instructions) {
			t.Fatalf("%s: %d instructions relocated, %d applied", name, len(p.Instructions), len(q.Instructions))
		}
		for i := range p.Instructions {
			a, b := p.Instructions[i], q.Instructions[i]
			if a.OpCode != b.OpCode || a.Dst != b.Dst || a.Src != b.Src || a.Offset != b.Offset || a.Constant != b.Constant {
				t.Fatalf("%s instruction %d: relocated %v, applied %v", name, i, a, b)
			}
		}
	}

	// Another object's file under this name, or a damaged one, is not applied.
	other, _ := NewCoreFixups("other", parsed)
	if err := os.Rename(cf.path(), other.path()); err != nil {
		t.Fatal(err)
	}
	if cf.Apply(parsed.Copy()) {
		t.Error("Apply used a missing file")
	}
	if err := os.WriteFile(cf.path(), []byte(`{"key":"`+cf.key+`","programs":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	fresh := parsed.Copy()
	if cf.Apply(fresh) || !hasRelocations(fresh) {
		t.Error("Apply used a file without the programs' fixups, or changed the spec anyway")
	}
	if m, _ := filepath.Glob(filepath.Join(CoreFixupDir, ".learn-*")); len(m) != 0 {
		t.Errorf("temporary files left: %q", m)
	}
}
