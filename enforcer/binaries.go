package enforcer

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
)

// Binaries. A profile records the sha256 of every binary learn saw run; enforce compares each
// with the file at that path now (symlinks followed: a link swapped to another file counts as
// changed) and reports the ones that differ, or refuses them with Options.VerifyBinaries.
// An interpreter's script is not a binary here: it is checked only when learn recorded it as
// one. Hashes are cached by dev/inode/size/mtime/ctime (ctime cannot be set from user space)
// in a small file, so an unchanged set costs an open and fstat per binary. The key and the hash
// come from one open file (a stat and a separate open would let a swap between them file the
// hash of one file under the key of another), and the cache's directory is hidden in every
// sandbox (withBase: binHashDir), so the command cannot plant entries for a binary it swapped.

// binHashCache is the cache file; empty disables it (a seam for tests).
var binHashCache = func() string {
	if os.Geteuid() == 0 {
		return "/run/sysprof/binhash"
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "sysprof", "binhash")
	}
	return ""
}

// binHashDir returns the cache's directory, created (0700) when missing so that the sandbox can
// hide it before the command could create it with entries of its own; "" when there is none.
func binHashDir() string {
	p := binHashCache()
	if p == "" {
		return ""
	}
	d := filepath.Dir(p)
	if err := os.MkdirAll(d, 0o700); err != nil {
		return ""
	}
	return d
}

// binHashOpened runs once a binary is open and before its key and content are read (a seam
// for tests: a swap of the path there must not change what is checked).
var binHashOpened = func(path string) {}

// binHashMax bounds the cache file: past it, the cache starts over.
const binHashMax = 4096

// BinaryError is Run's refusal of a changed binary under Options.VerifyBinaries (exit 125).
type BinaryError struct{ Changed []report.ChangedBinary }

func (e *BinaryError) Error() string {
	var names []string
	for _, c := range e.Changed {
		names = append(names, c.Path)
	}
	return fmt.Sprintf("binary changed since learn: %s (sha256 differs from the profile's): check it, then re-learn or drop --verify-binaries", strings.Join(names, ", "))
}

// checkBinaries returns the profile's binaries whose content differs from the learned sha256.
// Binaries that do not exist here, or without a hash, are skipped.
func checkBinaries(p *policy.Profile, env Env) []report.ChangedBinary {
	if len(p.Binaries) == 0 {
		return nil
	}
	cachePath := binHashCache()
	// The file is searched for this profile's keys, not parsed whole (a shared cache of 1,000
	// entries cost ~1.4 ms a run as a map); it is parsed only to write a new hash into it.
	raw := readBinHashes(cachePath)
	var fresh map[string]string
	used := map[string]string{}
	var out []report.ChangedBinary
	for _, b := range p.Binaries {
		if b.SHA256 == "" {
			continue
		}
		path, err := expand(b.Path, env)
		if err != nil {
			continue
		}
		key, sum, hashed, err := binHash(path, func(key string) (string, bool) { return findBinHash(raw, key) })
		if err != nil {
			continue
		}
		if hashed {
			if fresh == nil {
				fresh = map[string]string{}
			}
			fresh[key] = sum
		}
		used[key] = sum
		if !strings.EqualFold(sum, b.SHA256) {
			file, _ := filepath.EvalSymlinks(path)
			out = append(out, report.ChangedBinary{Path: b.Path, File: file, Learned: b.SHA256, Now: sum})
		}
	}
	if fresh != nil && cachePath != "" {
		cache := parseBinHashes(raw)
		maps.Copy(cache, fresh)
		if len(cache) > binHashMax {
			cache = used // start over with this profile's
		}
		saveBinHashes(cachePath, cache)
	}
	return out
}

func binKey(path string, st *syscall.Stat_t) string {
	return fmt.Sprintf("%d %d %d %d.%d %d.%d %s", st.Dev, st.Ino, st.Size, st.Mtim.Sec, st.Mtim.Nsec, st.Ctim.Sec, st.Ctim.Nsec, path)
}

// binHash opens path once and returns its cache key and sha256, from cache when the key is
// there (hashed false) or hashed from the same open file. Raw syscalls: os.File's poller
// registration and blocking-mode switch tripled the cost of an unchanged binary.
func binHash(path string, cached func(key string) (string, bool)) (key, sum string, hashed bool, err error) {
	// O_NONBLOCK: a FIFO planted at the path must not hang the run (a regular file ignores it).
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return "", "", false, err
	}
	defer syscall.Close(fd)
	binHashOpened(path)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return "", "", false, err
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return "", "", false, fmt.Errorf("%s: not a regular file", path)
	}
	key = binKey(path, &st)
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

func hashFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	return hashReader(f)
}

func hashReader(r io.Reader) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// readBinHashes reads the cache file of "sha256 key" lines; a missing file, or one another
// user wrote or others may write, is an empty cache.
func readBinHashes(path string) []byte {
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

// findBinHash returns the sha256 of the line of raw whose key is key (the last such line, as
// parseBinHashes keeps it).
func findBinHash(raw []byte, key string) (string, bool) {
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

// parseBinHashes reads "sha256 key" lines; a damaged line is left out.
func parseBinHashes(raw []byte) map[string]string {
	m := map[string]string{}
	for line := range strings.Lines(string(raw)) {
		if sum, key, ok := strings.Cut(strings.TrimSuffix(line, "\n"), " "); ok && len(sum) == 64 {
			m[key] = sum
		}
	}
	return m
}

// saveBinHashes writes the cache atomically (temp file + rename); failing to is harmless (the
// next run hashes again).
func saveBinHashes(path string, m map[string]string) {
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
