package enforcer

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"

	"github.com/sysprof/sysprof/internal/binhash"
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
var binHashCache = binhash.DefaultPath

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
const binHashMax = binhash.Max

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

// binHash is binhash.Sum with the test seam binHashOpened.
func binHash(path string, cached func(key string) (string, bool)) (key, sum string, hashed bool, err error) {
	return binhash.Sum(path, binHashOpened, cached)
}

func readBinHashes(path string) []byte                  { return binhash.Read(path) }
func findBinHash(raw []byte, key string) (string, bool) { return binhash.Find(raw, key) }
func parseBinHashes(raw []byte) map[string]string       { return binhash.Parse(raw) }
func saveBinHashes(path string, m map[string]string)    { binhash.Save(path, m) }
