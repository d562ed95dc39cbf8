package guard

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/sysprof/sysprof/internal/kernrun"
	"github.com/sysprof/sysprof/internal/testutil"
)

// TestGuardCoreFixupsStored: the first load of guard.c on a kernel relocates it against the
// kernel's BTF and stores the fixups (in a file of the guard object's own); later loads, of all
// programs or of the file program alone, apply them and load without the kernel's BTF. A
// damaged file only means relocating again. (The fixups themselves: kernrun's tests.)
func TestGuardCoreFixupsStored(t *testing.T) {
	testutil.RequireRoot(t)
	t.Cleanup(kernrun.SwapCoreFixupDir(t.TempDir()))
	_, err := guardFixups()
	testutil.RequireNoErr(t, "the kernel's identity (boot id)", err)
	stored := func() []string {
		m, _ := filepath.Glob(filepath.Join(kernrun.CoreFixupDir, "guard-*.json"))
		return m
	}

	for i := range 2 {
		o, err := loadGuard()
		if err != nil {
			t.Fatalf("load %d: %v", i+1, err)
		}
		p, err := o.loadFileProgram()
		if err != nil || p == nil {
			t.Errorf("load %d: another file program: %v", i+1, err)
		} else {
			p.Close()
		}
		o.close()
		if m := stored(); len(m) != 1 {
			t.Errorf("after load %d: stored fixups %q, want one file", i+1, m)
		}
	}
	shared, err := guardSpec()
	if err != nil {
		t.Fatal(err)
	}
	if opts := relocatedOptions(shared.Copy()); opts.Programs.KernelTypes != nil {
		t.Error("the stored fixups were not applied: the loader got the kernel's BTF")
	}

	// A damaged file (in another directory, so that this process reads it): relocated again,
	// loads all the same, and the file is repaired.
	damaged := stored()[0]
	kernrun.CoreFixupDir = t.TempDir()
	if err := os.WriteFile(filepath.Join(kernrun.CoreFixupDir, filepath.Base(damaged)), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	o, err := loadGuard()
	if err != nil {
		t.Fatalf("load with a damaged file: %v", err)
	}
	o.close()
	if b, err := os.ReadFile(filepath.Join(kernrun.CoreFixupDir, filepath.Base(damaged))); err != nil || len(b) < 2 {
		t.Errorf("the damaged file was not replaced: %q, %v", b, err)
	}
}
