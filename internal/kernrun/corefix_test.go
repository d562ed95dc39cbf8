package kernrun

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"

	"github.com/sysprof/sysprof/bpf"
	"github.com/sysprof/sysprof/internal/testutil"
)

// withFixupDir points CoreFixupDir at a directory of the test's own.
func withFixupDir(t *testing.T) {
	t.Cleanup(SwapCoreFixupDir(t.TempDir()))
}

// kernelBTF is the running kernel's BTF (the test fails under CI=true without it).
func kernelBTF(t *testing.T) *btf.Spec {
	t.Helper()
	kernel, err := btf.LoadKernelSpec()
	testutil.RequireNoErr(t, "the kernel's BTF", err)
	return kernel
}

var objects = map[string]func() (*ebpf.CollectionSpec, error){"learn": bpf.LoadLearn, "guard": bpf.LoadGuard}

// fixupsOf is the object name ("learn", "guard") as parsed and its fixups' name.
func fixupsOf(t *testing.T, name string) (*ebpf.CollectionSpec, *CoreFixups) {
	t.Helper()
	parsed, err := objects[name]()
	if err != nil {
		t.Fatal(err)
	}
	cf, err := NewCoreFixups(name, parsed)
	testutil.RequireNoErr(t, "the kernel's identity (boot id)", err)
	return parsed, cf
}

// applyAfresh applies name's stored fixups to a copy of parsed as a new process would, and
// reports whether it did; a copy changed without them fails t.
func applyAfresh(t *testing.T, name string, parsed *ebpf.CollectionSpec) bool {
	t.Helper()
	spec := parsed.Copy()
	fresh, _ := NewCoreFixups(name, parsed)
	ok := fresh.Apply(spec)
	if !ok && !hasRelocations(spec) {
		t.Error("Apply changed the spec without applying the fixups")
	}
	return ok
}

// sameInstructions fails t unless a and b have the same programs with the same instructions.
func sameInstructions(t *testing.T, a, b *ebpf.CollectionSpec) {
	t.Helper()
	if len(a.Programs) != len(b.Programs) {
		t.Fatalf("%d programs, %d programs", len(a.Programs), len(b.Programs))
	}
	for name, p := range a.Programs {
		q := b.Programs[name]
		if q == nil || len(p.Instructions) != len(q.Instructions) {
			t.Fatalf("%s: %d instructions, other %v", name, len(p.Instructions), q)
		}
		for i := range p.Instructions {
			x, y := p.Instructions[i], q.Instructions[i]
			if x.OpCode != y.OpCode || x.Dst != y.Dst || x.Src != y.Src || x.Offset != y.Offset || x.Constant != y.Constant {
				t.Fatalf("%s instruction %d: %v, other %v", name, i, x, y)
			}
		}
	}
}

// TestCoreFixups: fixups computed against the kernel's BTF and stored give, applied to a fresh
// copy of the object, the same instructions (in this process and in a later one); a stale or
// foreign file is not applied. For both objects that use it.
func TestCoreFixups(t *testing.T) {
	kernel := kernelBTF(t)
	for name := range objects {
		t.Run(name, func(t *testing.T) {
			withFixupDir(t)
			parsed, cf := fixupsOf(t, name)
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
			if !hasRelocations(parsed) {
				t.Fatal("Relocate changed the parsed object")
			}
			applied := parsed.Copy()
			if !cf.Apply(applied) {
				t.Fatal("Apply did not use the fixups it computed")
			}
			sameInstructions(t, relocated, applied)

			// A later process reads them from the file.
			later, _ := NewCoreFixups(name, parsed)
			applied = parsed.Copy()
			if !later.Apply(applied) {
				t.Fatal("Apply did not use the stored fixups")
			}
			sameInstructions(t, relocated, applied)

			// Another object's file under this name, or a damaged one, is not applied.
			other, _ := NewCoreFixups("other", parsed)
			if err := os.Rename(cf.path(), other.path()); err != nil {
				t.Fatal(err)
			}
			if applyAfresh(t, name, parsed) {
				t.Error("Apply used a missing file")
			}
			if err := os.WriteFile(cf.path(), []byte(`{"key":"`+cf.key+`","programs":{}}`), 0o600); err != nil {
				t.Fatal(err)
			}
			if applyAfresh(t, name, parsed) {
				t.Error("Apply used a file without the programs' fixups")
			}
			if m, _ := filepath.Glob(filepath.Join(CoreFixupDir, "."+name+"-*")); len(m) != 0 {
				t.Errorf("temporary files left: %q", m)
			}
		})
	}
}

// TestCoreFixupsNamesDoNotCollide: the learn and guard objects keep their fixups in files of
// their own, and neither applies the other's.
func TestCoreFixupsNamesDoNotCollide(t *testing.T) {
	kernel := kernelBTF(t)
	withFixupDir(t)
	learn, lf := fixupsOf(t, "learn")
	guard, gf := fixupsOf(t, "guard")
	if lf.path() == gf.path() {
		t.Fatalf("both objects store to %s", lf.path())
	}
	if !lf.Relocate(learn.Copy(), kernel) || !gf.Relocate(guard.Copy(), kernel) {
		t.Fatal("Relocate could not relocate every program on its own")
	}
	for _, pat := range []string{"learn-*.json", "guard-*.json"} {
		if m, _ := filepath.Glob(filepath.Join(CoreFixupDir, pat)); len(m) != 1 {
			t.Errorf("%s: %q, want one file", pat, m)
		}
	}
	// The guard's file under the learn object's name is not applied to it.
	if err := os.Rename(gf.path(), lf.path()); err != nil {
		t.Fatal(err)
	}
	if applyAfresh(t, "learn", learn) {
		t.Error("the learn object used the guard object's fixups")
	}
}

// TestCoreFixupsSomePrograms: a run that loads only some of the object's programs relocates
// them and stores the fixups of all of them, so that a run loading all of them (or others) later
// applies them; a program with no stored fixups is not applied. (The learn object: guard.c has
// one program.)
func TestCoreFixupsSomePrograms(t *testing.T) {
	kernel := kernelBTF(t)
	withFixupDir(t)
	parsed, cf := fixupsOf(t, "learn")
	one := parsed.Copy()
	var kept string
	for name := range one.Programs {
		if kept == "" {
			kept = name
			continue
		}
		delete(one.Programs, name)
	}
	if !cf.Relocate(one, kernel) || hasRelocations(one) {
		t.Fatal("Relocate of one program left relocations")
	}
	all := parsed.Copy()
	if fresh, _ := NewCoreFixups("learn", parsed); !fresh.Apply(all) || hasRelocations(all) {
		t.Fatal("the fixups stored by a run of one program do not serve all programs")
	}
	want := parsed.Copy()
	if !cf.Relocate(want, kernel) {
		t.Fatal("Relocate could not relocate every program on its own")
	}
	sameInstructions(t, want, all)

	// Stored fixups without one of the programs are not applied to it.
	withFixupDir(t)
	if !(*CoreFixups)(nil).Relocate(parsed.Copy(), kernel) {
		t.Fatal("Relocate without a name failed")
	}
	if m, _ := filepath.Glob(filepath.Join(CoreFixupDir, "*")); len(m) != 0 {
		t.Errorf("Relocate without a name stored %q", m)
	}
	partial := &CoreFixups{name: "learn", key: cf.key, parsed: parsed}
	fixes, err := relocateProgram(parsed.Programs[kept].Copy(), kernel)
	if err != nil {
		t.Fatal(err)
	}
	partial.store(&coreFixupFile{Key: cf.key, Programs: map[string][]coreFix{kept: fixes}})
	if one := parsed.Copy(); len(one.Programs) > 1 {
		for name := range one.Programs {
			if name != kept {
				delete(one.Programs, name)
			}
		}
		if fresh, _ := NewCoreFixups("learn", parsed); !fresh.Apply(one) {
			t.Error("Apply did not use the fixups of the one program it loads")
		}
	}
	if applyAfresh(t, "learn", parsed) {
		t.Error("Apply used fixups that lack programs")
	}
}

// TestCoreFixupsConcurrent: runs of one process apply and relocate at the same time (the
// enforcer loads the guard's programs from several goroutines). Meant for -race.
func TestCoreFixupsConcurrent(t *testing.T) {
	kernel := kernelBTF(t)
	withFixupDir(t)
	parsed, cf := fixupsOf(t, "guard")
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			spec := parsed.Copy()
			if !cf.Apply(spec) && !cf.Relocate(spec, kernel) {
				t.Error("neither applied nor relocated")
			}
		}()
	}
	wg.Wait()
	if spec := parsed.Copy(); !cf.Apply(spec) {
		t.Error("nothing stored after the runs")
	}
}
