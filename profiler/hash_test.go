package profiler

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sysprof/sysprof/internal/binhash"
)

// A binary's sum comes from the cache file when its key is there, is written into it when it
// was hashed, and a changed file (a new ctime) is hashed again, never taken from the cache.
func TestHasherUsesTheBinaryHashCache(t *testing.T) {
	dir := t.TempDir()
	old := binHashPath
	binHashPath = func() string { return filepath.Join(dir, "cache", "binhash") }
	defer func() { binHashPath = old }()
	defer func() { hashCacheMu.Lock(); clear(hashCache); hashCacheMu.Unlock() }()
	bin := filepath.Join(dir, "tool")
	if err := os.WriteFile(bin, []byte("first"), 0o755); err != nil {
		t.Fatal(err)
	}
	sum := func() string {
		hashCacheMu.Lock()
		clear(hashCache) // a new process
		hashCacheMu.Unlock()
		h := newHasher()
		h.add(bin)
		h.finish()
		s := h.sum(bin)
		h.save()
		return s
	}
	first := sum()
	raw := binhash.Read(binHashPath())
	if !strings.Contains(string(raw), first+" ") {
		t.Fatalf("the cache file does not hold the sum %s: %q", first, raw)
	}
	// A planted sum under the file's key is what the next run reads: the cache is used.
	planted := strings.Repeat("a", 64)
	binhash.Save(binHashPath(), map[string]string{strings.TrimPrefix(strings.TrimSpace(string(raw)), first+" "): planted})
	if got := sum(); got != planted {
		t.Errorf("an unchanged binary was hashed again (%s), not taken from the cache (%s)", got, planted)
	}
	// Changed content: a new key, hashed again.
	if err := os.WriteFile(bin, []byte("second"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := sum(); got == planted || got == first || got == "" {
		t.Errorf("a changed binary's sum %q came from the cache", got)
	}
}
