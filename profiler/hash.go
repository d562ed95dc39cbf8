package profiler

import (
	"maps"
	"sync"

	"github.com/sysprof/sysprof/internal/binhash"
)

// hasher computes the sha256 of executables in the background while the run goes on (a binary
// may be gone by the end: build scripts, temp test binaries), so the ring buffer reader never
// waits for a 30 MB compiler to be read. Sums come from binhash's cache (enforce's too) when the
// file is unchanged: hashing cc1 again each run was ~16% of sysprof's CPU in a learn of
// `cc -O0 -c` (perf); new ones are added to it when the run ends.
type hasher struct {
	mu    sync.Mutex
	queue chan string
	seen  map[string]bool
	sums  map[string]string // path -> hex sum
	wg    sync.WaitGroup
	cache *sumCache
}

// sumCache is binhash's cache file as one run uses it: read once, searched by key, written back
// with the run's new sums.
type sumCache struct {
	path  string
	once  sync.Once
	raw   []byte
	mu    sync.Mutex
	fresh map[string]string // key -> sum hashed in this run
	used  map[string]string // key -> sum of every binary of this run
}

// binHashPath is the cache file learn uses (a seam for tests); "" disables it.
var binHashPath = binhash.DefaultPath

func newHasher() *hasher {
	h := &hasher{queue: make(chan string, 4096), seen: map[string]bool{}, sums: map[string]string{},
		cache: &sumCache{path: binHashPath(), fresh: map[string]string{}, used: map[string]string{}}}
	for range 2 {
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			for p := range h.queue {
				s := h.cache.sum(p)
				h.mu.Lock()
				h.sums[p] = s
				h.mu.Unlock()
			}
		}()
	}
	return h
}

// add queues path once; when the queue is full the sum is computed at the end instead.
func (h *hasher) add(path string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.seen[path] {
		return
	}
	h.seen[path] = true
	select {
	case h.queue <- path:
	default:
	}
}

// finish waits for the queued sums.
func (h *hasher) finish() {
	close(h.queue)
	h.wg.Wait()
}

// sum returns the hex sha256 of path, "" if it cannot be read. Call after finish.
func (h *hasher) sum(path string) string {
	h.mu.Lock()
	s, ok := h.sums[path]
	h.mu.Unlock()
	if ok {
		return s
	}
	s = h.cache.sum(path)
	h.mu.Lock()
	h.sums[path] = s
	h.mu.Unlock()
	return s
}

// save writes the run's new sums into the cache file, if there are any. Call once the sums are
// all taken.
func (h *hasher) save() { h.cache.save() }

// sum is path's sha256 ("" if it cannot be read): from this process's sums or the cache file
// when its key (dev, inode, size, mtime, ctime) is there, else read and hashed.
func (c *sumCache) sum(path string) string {
	c.once.Do(func() { c.raw = binhash.Read(c.path) })
	key, s, hashed, err := binhash.Sum(path, nil, func(key string) (string, bool) {
		hashCacheMu.Lock()
		s, ok := hashCache[key]
		hashCacheMu.Unlock()
		if ok {
			return s, true
		}
		return binhash.Find(c.raw, key)
	})
	if err != nil {
		return ""
	}
	c.mu.Lock()
	c.used[key] = s
	if hashed {
		c.fresh[key] = s
	}
	c.mu.Unlock()
	hashCacheMu.Lock()
	if len(hashCache) > binhash.Max {
		clear(hashCache)
	}
	hashCache[key] = s
	hashCacheMu.Unlock()
	return s
}

func (c *sumCache) save() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.fresh) == 0 || c.path == "" {
		return
	}
	m := binhash.Parse(c.raw)
	maps.Copy(m, c.fresh)
	if len(m) > binhash.Max {
		m = c.used // start over with this run's
	}
	binhash.Save(c.path, m)
	clear(c.fresh)
}

// hashCache holds the sums this process computed or read, by binhash key (learn --runs N).
var (
	hashCacheMu sync.Mutex
	hashCache   = map[string]string{}
)
