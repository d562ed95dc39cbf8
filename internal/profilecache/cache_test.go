package profilecache

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
)

// profiles are every profile of the repository that parses: shipped, golden and CI ones.
func profiles(t *testing.T) []string {
	root := testutil.RepoRoot()
	var out []string
	for _, glob := range []string{"profiles/*.yaml", "testdata/policy/*.yaml", ".ci/profiles/*.yaml"} {
		m, _ := filepath.Glob(filepath.Join(root, glob))
		out = append(out, m...)
	}
	if len(out) < 10 {
		t.Fatalf("only %d profiles found", len(out))
	}
	return out
}

// What comes out of the cache is exactly what policy.Parse made of the same bytes.
func TestCachedProfileIsTheParsedOne(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	for _, path := range profiles(t) {
		want, err := policy.Load(path)
		if err != nil {
			continue // a fixture of an invalid profile
		}
		for _, round := range []string{"miss", "hit"} {
			got, err := load(dir, path, "test")
			if err != nil {
				t.Fatalf("%s (%s): %v", path, round, err)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("%s (%s): cached profile differs from the parsed one (-parsed +cached):\n%s", path, round, d)
			}
		}
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) == 0 {
		t.Fatal("nothing was cached")
	}
}

// An invalid profile is refused as policy.Load refuses it, and never cached.
func TestInvalidProfileIsNotCached(t *testing.T) {
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "cache")
	path := filepath.Join(tmp, "bad.yaml")
	testutil.WriteFile(t, path, "apiVersion: sysprof.dev/v1\nkind: Profile\nsyscalls:\n  allow:\n    - {name: opennat}\n", 0o644)
	if _, err := load(dir, path, "test"); err == nil {
		t.Fatal("an unknown syscall loaded")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("cache holds %d entries after a refused profile", len(ents))
	}
}

// A forged entry (the right key and checksum, a wider profile) is used only where nobody but
// this user could have written it: never from a file or directory others may write, another
// user's file, a symlink or a hard link; a corrupt entry is never used.
func TestForgedEntryIsNotTrusted(t *testing.T) {
	tmp := t.TempDir()
	path := filepath.Join(tmp, "true.yaml")
	testutil.WriteFile(t, path, trueProfile, 0o644)
	data, _ := os.ReadFile(path)
	key, ok := keyOf(data, "test")
	if !ok {
		t.Fatal("no key")
	}
	forged, err := policy.Parse(path, data)
	if err != nil {
		t.Fatal(err)
	}
	forged.Syscalls.Allow = append(forged.Syscalls.Allow, policy.Syscall{Name: "ptrace"})
	widened := func(p *policy.Profile) bool {
		return slices.ContainsFunc(p.Syscalls.Allow, func(r policy.Syscall) bool { return r.Name == "ptrace" })
	}
	for _, tc := range []struct {
		name    string
		spoil   func(t *testing.T, dir, entry string)
		trusted bool
	}{
		{"private entry (the control)", func(*testing.T, string, string) {}, true},
		{"entry others may read and write", func(t *testing.T, _, e string) { chmod(t, e, 0o666) }, false},
		{"directory others may write", func(t *testing.T, d, _ string) { chmod(t, d, 0o777) }, false},
		{"corrupt entry (still decodes)", func(t *testing.T, _, e string) {
			b, _ := os.ReadFile(e)
			testutil.WriteFile(t, e, strings.Replace(string(b), "exit_group", "exit_grouq", 1), 0o600)
		}, false},
		{"symlinked entry", func(t *testing.T, d, e string) {
			real := filepath.Join(d, "elsewhere")
			if err := os.Rename(e, real); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(real, e); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"hard-linked entry", func(t *testing.T, d, e string) {
			if err := os.Link(e, filepath.Join(d, "second")); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"another user's entry", func(t *testing.T, _, e string) {
			testutil.RequireRoot(t) // only root can give a file away
			if err := os.Chown(e, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "cache")
			if err := write(dir, key, forged); err != nil {
				t.Fatal(err)
			}
			tc.spoil(t, dir, filepath.Join(dir, key))
			got, err := load(dir, path, "test")
			if err != nil {
				t.Fatal(err)
			}
			if widened(got) != tc.trusted {
				t.Errorf("forged entry used: %v, want %v", widened(got), tc.trusted)
			}
		})
	}
}

// Another binary (version) or an edited profile never meets an old entry.
func TestKeyCoversVersionAndBytes(t *testing.T) {
	a, _ := keyOf([]byte("x"), "v1")
	b, _ := keyOf([]byte("x"), "v2")
	c, _ := keyOf([]byte("x "), "v1")
	if a == b || a == c {
		t.Errorf("keys collide: %s %s %s", a, b, c)
	}
}

func chmod(t *testing.T, p string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

const trueProfile = `apiVersion: sysprof.dev/v1
kind: Profile
metadata:
  name: "true"
syscalls:
  architectures: [x86_64]
  allow:
    - {name: exit_group}
    - {name: execve}
`
