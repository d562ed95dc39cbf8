package enforcer

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
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
// in a small file, so an unchanged set costs a stat per binary.

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
	cache := loadBinHashes(cachePath)
	dirty := false
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
		var st syscall.Stat_t
		if syscall.Stat(path, &st) != nil {
			continue
		}
		key := binKey(path, &st)
		sum, ok := cache[key]
		if !ok {
			if sum, err = hashFile(path); err != nil {
				continue
			}
			cache[key] = sum
			dirty = true
		}
		used[key] = sum
		if !strings.EqualFold(sum, b.SHA256) {
			file, _ := filepath.EvalSymlinks(path)
			out = append(out, report.ChangedBinary{Path: b.Path, File: file, Learned: b.SHA256, Now: sum})
		}
	}
	if len(cache) > binHashMax {
		cache = used // start over with this profile's
	}
	if dirty && cachePath != "" {
		saveBinHashes(cachePath, cache)
	}
	return out
}

func binKey(path string, st *syscall.Stat_t) string {
	return fmt.Sprintf("%d %d %d %d.%d %d.%d %s", st.Dev, st.Ino, st.Size, st.Mtim.Sec, st.Mtim.Nsec, st.Ctim.Sec, st.Ctim.Nsec, path)
}

func hashFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// loadBinHashes reads "sha256 key" lines; a missing or damaged file is an empty cache.
func loadBinHashes(path string) map[string]string {
	m := map[string]string{}
	if path == "" {
		return m
	}
	f, err := os.Open(path)
	if err != nil {
		return m
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if sum, key, ok := strings.Cut(sc.Text(), " "); ok && len(sum) == 64 {
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
