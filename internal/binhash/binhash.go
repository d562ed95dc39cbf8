// Package binhash is the sha256 of executables and the one cache of them, shared by learn (the
// sums it records) and enforce (the sums it checks): cached by dev/inode/size/mtime/ctime (ctime
// cannot be set from user space) in a small file, so an unchanged binary costs an open and an
// fstat, not a read of its bytes (a 30 MB compiler: ~20 ms of CPU). The key and the sum come
// from one open file (a stat and a separate open would let a swap between them file the sum of
// one file under the key of another). Only a cache file this user wrote and nobody else may
// write is read, and enforce hides its directory in every sandbox, so a command cannot plant
// entries for a binary it swapped.
package binhash

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Max bounds the cache file: past it, a writer starts over with what it used.
const Max = 4096

// DefaultPath is the cache file: root's under /run/sysprof, an ordinary user's in the user
// cache directory; "" when there is none.
func DefaultPath() string {
	if os.Geteuid() == 0 {
		return "/run/sysprof/binhash"
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "sysprof", "binhash")
	}
	return ""
}

// Key is the cache key of path with st.
func Key(path string, st *syscall.Stat_t) string {
	return fmt.Sprintf("%d %d %d %d.%d %d.%d %s", st.Dev, st.Ino, st.Size, st.Mtim.Sec, st.Mtim.Nsec, st.Ctim.Sec, st.Ctim.Nsec, path)
}

// Sum opens path once and returns its cache key and sha256, from cached when the key is there
// (hashed false) or hashed from the same open file. opened, when not nil, runs once the file is
// open and before its key and content are read (a test's seam). Raw syscalls: os.File's poller
// registration and blocking-mode switch tripled the cost of an unchanged binary.
func Sum(path string, opened func(string), cached func(key string) (string, bool)) (key, sum string, hashed bool, err error) {
	// O_NONBLOCK: a FIFO planted at the path must not hang the run (a regular file ignores it).
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return "", "", false, err
	}
	defer syscall.Close(fd)
	if opened != nil {
		opened(path)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return "", "", false, err
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return "", "", false, fmt.Errorf("%s: not a regular file", path)
	}
	key = Key(path, &st)
	if sum, ok := cached(key); ok {
		return key, sum, false, nil
	}
	sum, err = hashReader(fdReader(fd))
	return key, sum, err == nil, err
}

// fdReader reads a file descriptor it does not own.
type fdReader int

func (r fdReader) Read(b []byte) (int, error) {
	for {
		n, err := syscall.Read(int(r), b)
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return 0, err
		case n == 0 && len(b) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

func hashReader(r io.Reader) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Read reads the cache file of "sha256 key" lines; a missing file, or one another user wrote
// or others may write, is an empty cache.
func Read(path string) []byte {
	if path == "" {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	// Only a file this user wrote and nobody else may write counts.
	fi, err := f.Stat()
	if err != nil {
		return nil
	} else if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Geteuid() || st.Mode&0o022 != 0 {
		return nil
	}
	// One buffer of the file's size (io.ReadAll's doublings cost more than the search).
	b := make([]byte, fi.Size())
	n, err := io.ReadFull(f, b)
	if err != nil && err != io.ErrUnexpectedEOF {
		return nil
	}
	return b[:n]
}

// Find returns the sha256 of the line of raw whose key is key (the last such line, as Parse
// keeps it).
func Find(raw []byte, key string) (string, bool) {
	needle := []byte(" " + key + "\n")
	for end := len(raw); end > 0; {
		i := bytes.LastIndex(raw[:end], needle)
		if i < 0 {
			return "", false
		}
		if i >= 64 && (i == 64 || raw[i-65] == '\n') && !bytes.ContainsAny(raw[i-64:i], " \n") {
			return string(raw[i-64 : i]), true
		}
		end = i + len(needle) - 1
	}
	return "", false
}

// Parse reads "sha256 key" lines; a damaged line is left out.
func Parse(raw []byte) map[string]string {
	m := map[string]string{}
	for line := range strings.Lines(string(raw)) {
		if sum, key, ok := strings.Cut(strings.TrimSuffix(line, "\n"), " "); ok && len(sum) == 64 {
			m[key] = sum
		}
	}
	return m
}

// Save writes the cache atomically (temp file + rename); failing to is harmless (the next run
// hashes again).
func Save(path string, m map[string]string) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return
	}
	var b strings.Builder
	for k, v := range m {
		b.WriteString(v + " " + k + "\n")
	}
	tmp := path + ".tmp." + strconv.Itoa(os.Getpid())
	if err := os.WriteFile(tmp, []byte(b.String()), 0o600); err != nil {
		return
	}
	if os.Rename(tmp, path) != nil {
		os.Remove(tmp)
	}
}
