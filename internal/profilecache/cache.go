// Package profilecache keeps what policy.Parse made of a profile's bytes, so that enforce's
// start does not parse and validate the same profile again (YAML, the JSON Schema, the
// semantic checks: ~1.5-2 ms of every run here). It owns that cache and nothing else: the
// profile format and its validation stay package policy's.
//
// An entry is keyed by a SHA-256 of the profile's exact bytes and of this executable (its
// version and identity: device, inode, size and modification time of /proc/self/exe), so an
// edited profile or another sysprof binary never meets an old entry. The cache is never
// trusted blindly: its directory and entries must belong to this user and be private to it
// (0700 and 0600, no symlink followed, one link), an entry names its key and carries the
// SHA-256 of its content, and it decodes strictly (internal/wire: the types of this very
// binary, lengths bounded, no byte cut or left over); anything else is a miss and the profile
// is parsed. Root's cache is /var/cache/sysprof/profiles whatever the
// environment says; another user's is $XDG_CACHE_HOME/sysprof/profiles (~/.cache/...).
package profilecache

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/wire"
	"github.com/sysprof/sysprof/policy"
)

// maxEntries bounds the cache: a write that finds more removes the oldest half.
const maxEntries = 256

// Dir is where this user's cache lives ("" when there is none).
func Dir() string {
	if os.Geteuid() == 0 {
		return "/var/cache/sysprof/profiles"
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return filepath.Join(d, "sysprof", "profiles")
}

// Load is policy.Load through the cache in Dir (see the package doc); version is the
// binary's version string.
func Load(path, version string) (*policy.Profile, error) {
	return load(Dir(), path, version)
}

func load(dir, path, version string) (*policy.Profile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load profile: %w", err)
	}
	key, ok := keyOf(data, version)
	if !ok || dir == "" {
		return policy.Parse(path, data)
	}
	if p := read(dir, key); p != nil {
		return p, nil
	}
	p, err := policy.Parse(path, data)
	if err != nil {
		return nil, err
	}
	_ = write(dir, key, p) // a cache that cannot be written is only slower
	return p, nil
}

// keyOf is the hex SHA-256 of version, this executable's identity and data.
func keyOf(data []byte, version string) (string, bool) {
	var st unix.Stat_t
	if unix.Stat("/proc/self/exe", &st) != nil {
		return "", false
	}
	h := sha256.New()
	fmt.Fprintf(h, "sysprof profile cache v2\x00%s\x00%d:%d:%d:%d.%d\x00", version, st.Dev, st.Ino, st.Size, st.Mtim.Sec, st.Mtim.Nsec)
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil)), true
}

// An entry is the key, a newline, the hex SHA-256 of the rest, a newline, and the profile in
// internal/wire's encoding (not JSON: its decoder's reflection cost ~0.5 ms a run).

// read returns the entry for key, or nil when there is none or it is not to be trusted.
func read(dir, key string) *policy.Profile {
	dfd, err := openPrivateDir(dir)
	if err != nil {
		return nil
	}
	defer unix.Close(dfd)
	fd, err := unix.Openat(dfd, key, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil
	}
	f := os.NewFile(uintptr(fd), key)
	defer f.Close()
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || !private(&st, unix.S_IFREG) || st.Nlink != 1 || st.Size > 16<<20 {
		return nil
	}
	b := make([]byte, st.Size)
	if n, err := f.ReadAt(b, 0); err != nil || n != len(b) {
		return nil
	}
	gotKey, rest, ok := bytes.Cut(b, []byte("\n"))
	if !ok || string(gotKey) != key {
		return nil
	}
	sum, body, ok := bytes.Cut(rest, []byte("\n"))
	if !ok {
		return nil
	}
	want := sha256.Sum256(body)
	if string(sum) != hex.EncodeToString(want[:]) {
		return nil
	}
	var p policy.Profile
	if wire.Unmarshal(body, &p) != nil {
		return nil
	}
	return &p
}

// write stores p under key: a private temporary file renamed into place.
func write(dir, key string, p *policy.Profile) error {
	body, err := wire.Marshal(p)
	if err != nil {
		return err
	}
	// Only what decodes back to exactly p is kept (a field the encoding would lose, an
	// unexported one, is never cached).
	var back policy.Profile
	if err := wire.Unmarshal(body, &back); err != nil || !reflect.DeepEqual(&back, p) {
		return errors.New("profile does not survive its encoding: not cached")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	dfd, err := openPrivateDir(dir)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	prune(dfd)
	sum := sha256.Sum256(body)
	entry := slices.Concat([]byte(key+"\n"+hex.EncodeToString(sum[:])+"\n"), body)
	tmp := ".tmp-" + strconv.Itoa(os.Getpid()) + "-" + key[:16]
	fd, err := unix.Openat(dfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, err = f.Write(entry)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = unix.Renameat(dfd, tmp, dfd, key)
	}
	if err != nil {
		_ = unix.Unlinkat(dfd, tmp, 0)
	}
	return err
}

// openPrivateDir opens dir when it is a directory of this user's, closed to everyone else.
func openPrivateDir(dir string) (int, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || !private(&st, unix.S_IFDIR) {
		unix.Close(fd)
		return -1, errors.New("profile cache directory not private to this user")
	}
	return fd, nil
}

// private reports whether st is of kind and this user's own, with no right for anyone else.
func private(st *unix.Stat_t, kind uint32) bool {
	return st.Mode&unix.S_IFMT == kind && int(st.Uid) == os.Geteuid() && st.Mode&0o077 == 0
}

// prune removes the oldest half of the entries when there are more than maxEntries.
func prune(dfd int) {
	dup, err := unix.Dup(dfd) // the File closes its own fd
	if err != nil {
		return
	}
	d := os.NewFile(uintptr(dup), "cache")
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil || len(names) <= maxEntries {
		return
	}
	type entry struct {
		name string
		mod  int64
	}
	var es []entry
	for _, n := range names {
		var st unix.Stat_t
		if unix.Fstatat(dfd, n, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
			es = append(es, entry{n, st.Mtim.Sec})
		}
	}
	slices.SortFunc(es, func(a, b entry) int { return int(a.mod - b.mod) })
	for _, e := range es[:len(es)/2] {
		_ = unix.Unlinkat(dfd, e.name, 0)
	}
}
