package profilecache

import (
	"path/filepath"
	"testing"

	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
)

// BenchmarkLoad compares a cached load of a shipped profile with policy.Load (a first load in
// a process pays the schema's compilation on top: not measured here).
func BenchmarkLoad(b *testing.B) {
	path := filepath.Join(testutil.RepoRoot(), "profiles/go-build.yaml")
	dir := filepath.Join(b.TempDir(), "cache")
	if _, err := load(dir, path, "bench"); err != nil {
		b.Fatal(err)
	}
	b.Run("policy.Load", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := policy.Load(path); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := load(dir, path, "bench"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
