package profiler

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"sync"
	"time"
)

// hasher computes the sha256 of executables in the background while the run goes on (a binary
// may be gone by the end: build scripts, temp test binaries), so the ring buffer reader never
// waits for a 30 MB compiler to be read. Results are cached by path, size and mtime.
type hasher struct {
	mu    sync.Mutex
	queue chan string
	seen  map[string]bool
	sums  map[string]string // path -> hex sum
	wg    sync.WaitGroup
}

type fileID struct {
	path  string
	size  int64
	mtime time.Time
}

var (
	hashCacheMu sync.Mutex
	hashCache   = map[fileID]string{}
)

func newHasher() *hasher {
	h := &hasher{queue: make(chan string, 4096), seen: map[string]bool{}, sums: map[string]string{}}
	for range 2 {
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			for p := range h.queue {
				s := hashFile(p)
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
	s = hashFile(path)
	h.mu.Lock()
	h.sums[path] = s
	h.mu.Unlock()
	return s
}

func hashFile(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return ""
	}
	id := fileID{path, st.Size(), st.ModTime()}
	hashCacheMu.Lock()
	s, ok := hashCache[id]
	hashCacheMu.Unlock()
	if ok {
		return s
	}
	d := sha256.New()
	if _, err := io.Copy(d, f); err != nil {
		return ""
	}
	s = hex.EncodeToString(d.Sum(nil))
	hashCacheMu.Lock()
	if len(hashCache) > 4096 {
		clear(hashCache)
	}
	hashCache[id] = s
	hashCacheMu.Unlock()
	return s
}
