package enforcer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/sysprof/sysprof/internal/binhash"
	"github.com/sysprof/sysprof/internal/testutil"
	"github.com/sysprof/sysprof/policy"
)

const binCheckEnv = "SYSPROF_TEST_BIN_CHECK" // run binariesCheck as nobody

// TestChangedBinaryReported: a binary swapped after learning is reported, and refused with
// VerifyBinaries, while an unchanged one runs with no warning (as root and as nobody).
func TestChangedBinaryReported(t *testing.T) {
	testutil.RequireRoot(t)
	base, err := os.MkdirTemp("", "sysprof-bin-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(base)
	os.Chmod(base, 0o755)
	self, _ := os.Executable()
	bin := filepath.Join(base, "enforcer.test")
	if err := copyFile(self, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	victim := testutil.BuildC(t, "escape/escape.c")
	for _, who := range []string{"root", "nobody"} {
		t.Run(who, func(t *testing.T) {
			dir := filepath.Join(base, who)
			os.MkdirAll(dir, 0o755)
			os.Chown(dir, 65534, 65534)
			if err := copyFile(victim, filepath.Join(dir, "tool"), 0o755); err != nil {
				t.Fatal(err)
			}
			os.Chown(filepath.Join(dir, "tool"), 65534, 65534)
			if who == "root" {
				if err := binariesCheck(dir); err != nil {
					t.Error(err)
				}
				return
			}
			cmd := exec.Command(bin)
			cmd.Env = append(os.Environ(), binCheckEnv+"="+dir, "HOME="+dir)
			cmd.Dir = dir
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("as nobody: %v\n%s", err, out)
			}
		})
	}
}

// binariesCheck learns dir/tool's hash, runs it unchanged (no warning), checks that the command
// can neither read nor write the hash cache although its parent is writable, swaps the tool's
// content and runs it again (warned and reported), then with VerifyBinaries (refused, not run).
func binariesCheck(dir string) error {
	old := binHashCache
	cacheFile := filepath.Join(dir, ".cache", "sysprof", "binhash") // where an ordinary user's is: $HOME/.cache
	binHashCache = func() string { return cacheFile }
	defer func() { binHashCache = old }()
	tool := filepath.Join(dir, "tool")
	sum, err := hashFile(tool)
	if err != nil {
		return err
	}
	ld, _ := filepath.EvalSymlinks("/lib64/ld-linux-x86-64.so.2")
	p := victimProfile()
	p.Filesystem = policy.Filesystem{
		Read:  []policy.PathRule{{Path: "/usr"}, {Path: "/etc"}, {Path: dir}},
		Write: []policy.PathRule{{Path: "/dev/null"}},
		Exec:  []policy.PathRule{{Path: tool}, {Path: ld}},
	}
	p.Binaries = []policy.Binary{{Path: tool, SHA256: sum}}
	run := func(verify bool, args ...string) (string, int, error, []string) {
		var out strings.Builder
		if len(args) == 0 {
			args = []string{"ok"}
		}
		rep, code, err := Run(context.Background(), Options{Profile: p, Command: append([]string{tool}, args...), Dir: dir,
			Stdout: &out, Stderr: &out, VerifyBinaries: verify, Vars: map[string]string{"HOME": dir}})
		var changed []string
		if rep != nil {
			for _, c := range rep.ChangedBinaries {
				changed = append(changed, c.Path)
			}
		}
		return out.String(), code, err, changed
	}
	var errs []error
	// Unchanged, twice (the second from the cache): runs, no warning, no entry.
	for i := range 2 {
		if out, code, err, changed := run(true); err != nil || code != 0 || out != "ok\n" || len(changed) > 0 {
			errs = append(errs, fmt.Errorf("unchanged binary (run %d): exit %d err %v changed %v output %q", i, code, err, changed, out))
		}
	}
	// The cache cannot be forged from inside, even with its parent ($HOME/.cache) writable:
	// the command's write to it fails and the host's file is unchanged, while a write next to
	// it works (benign control).
	if err := os.MkdirAll(filepath.Join(dir, ".cache"), 0o755); err != nil {
		return err
	}
	p.Filesystem.Write = append(p.Filesystem.Write, policy.PathRule{Path: "$HOME/.cache"})
	before, err := os.ReadFile(cacheFile)
	if err != nil {
		return fmt.Errorf("the cache was not written by the unchanged runs: %w", err)
	}
	out, code, err, _ := run(false, "write="+cacheFile, "cat="+cacheFile, "write="+filepath.Join(dir, ".cache", "other"))
	after, _ := os.ReadFile(cacheFile)
	if lines := strings.Split(out, "\n"); err != nil || code != 0 || len(lines) < 3 || lines[0] == "write: ok" || lines[1] != "cat: []" && !strings.HasPrefix(lines[1], "cat: E") ||
		lines[2] != "write: ok" || string(after) != string(before) {
		errs = append(errs, fmt.Errorf("hash cache from inside: exit %d err %v output %q (cache changed: %v): want it unwritable and unreadable, the file next to it writable", code, err, out, string(after) != string(before)))
	}
	p.Filesystem.Write = p.Filesystem.Write[:len(p.Filesystem.Write)-1]
	// Swapped after learning: same size and path, other content.
	b, _ := os.ReadFile(tool)
	b[len(b)-1] ^= 0xff
	if err := os.WriteFile(tool+".new", b, 0o755); err != nil {
		return err
	}
	if err := os.Rename(tool+".new", tool); err != nil {
		return err
	}
	out, code, err, changed := run(false)
	if err != nil || code != 0 || !strings.Contains(out, "warning: binary "+tool) || len(changed) != 1 {
		errs = append(errs, fmt.Errorf("swapped binary: exit %d err %v changed %v output %q: want it run, warned and reported", code, err, changed, out))
	}
	out, code, err, changed = run(true)
	var be *BinaryError
	if code != 125 || !errors.As(err, &be) || !strings.Contains(err.Error(), tool) || strings.Contains(out, "ok\n") || len(changed) != 1 {
		errs = append(errs, fmt.Errorf("swapped binary with VerifyBinaries: exit %d err %v output %q: want refused (125) naming it", code, err, out))
	}
	return errors.Join(errs...)
}

// BenchmarkCheckBinariesCached is the per-run cost of the sha256 check when nothing changed
// (every hash from the cache file): go test ./enforcer -run '^$' -bench CheckBinariesCached
func BenchmarkCheckBinariesCached(b *testing.B) {
	dir := b.TempDir()
	old := binHashCache
	binHashCache = func() string { return filepath.Join(dir, "binhash") }
	defer func() { binHashCache = old }()
	p := &policy.Profile{}
	for _, bin := range []string{"/usr/bin/make", "/usr/bin/gcc", "/usr/bin/git", "/bin/bash", "/usr/bin/ld", "/usr/bin/as", "/usr/bin/cc", "/bin/sh"} {
		if sum, err := hashFile(bin); err == nil {
			p.Binaries = append(p.Binaries, policy.Binary{Path: bin, SHA256: sum})
		}
	}
	checkBinaries(p, Env{}) // fills the cache
	b.ResetTimer()
	for range b.N {
		if c := checkBinaries(p, Env{}); len(c) > 0 {
			b.Fatal(c)
		}
	}
	b.ReportMetric(float64(len(p.Binaries)), "binaries")
}

// TestBinaryHashOneOpen: a binary's cache key and hash come from one open file. Here the
// profile's path is a symlink that is switched from a changed binary to the learned one right
// after the check opened it (the window between a stat and a second open): the changed binary
// must still be reported, and the cache must not file the learned hash under its key.
func TestBinaryHashOneOpen(t *testing.T) {
	dir := t.TempDir()
	old, oldHook := binHashCache, binHashOpened
	binHashCache = func() string { return filepath.Join(dir, "cache", "binhash") }
	defer func() { binHashCache, binHashOpened = old, oldHook }()
	good, evil, link := filepath.Join(dir, "good"), filepath.Join(dir, "evil"), filepath.Join(dir, "tool")
	os.WriteFile(good, []byte("learned binary\n"), 0o755)
	os.WriteFile(evil, []byte("swapped binary\n"), 0o755)
	sum, err := hashFile(good)
	if err != nil {
		t.Fatal(err)
	}
	p := &policy.Profile{Binaries: []policy.Binary{{Path: link, SHA256: sum}}}
	if err := os.Symlink(evil, link); err != nil {
		t.Fatal(err)
	}
	retarget := func(to string) {
		os.Remove(link + ".new")
		if err := os.Symlink(to, link+".new"); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(link+".new", link); err != nil {
			t.Fatal(err)
		}
	}
	binHashOpened = func(string) { retarget(good) }
	if c := checkBinaries(p, Env{}); len(c) != 1 {
		t.Errorf("the changed binary switched for the learned one during the check: reported %+v, want it reported", c)
	}
	binHashOpened = func(string) {}
	retarget(evil)
	if c := checkBinaries(p, Env{}); len(c) != 1 {
		t.Errorf("the changed binary, checked again (from the cache): reported %+v, want it reported", c)
	}
	retarget(good)
	if c := checkBinaries(p, Env{}); len(c) != 0 {
		t.Errorf("the learned binary: reported %+v, want nothing (benign control)", c)
	}
}

// The cache is searched for a key, not parsed whole: the search finds exactly what parsing
// the file would (the last line of a key; never a sum that does not start its line, nor a key
// that only ends like the one asked for).
func TestFindBinHashAgreesWithParsing(t *testing.T) {
	sum := func(c byte) string { return strings.Repeat(string(c), 64) }
	key := "2049 1234 5678 1.2 3.4 /usr/bin/my tool"
	raw := sum('a') + " " + key + "\n" + // an older hash of the same key: the last valid line wins
		sum('e') + " " + key + "\n" +
		sum('b') + " 9 " + key + "\n" + // a key ending like it
		"x" + sum('c') + " " + key + "\n" + // a sum not starting its line (65 characters)
		sum('d')[:63] + " " + key + "\n" + // too short a sum
		sum('f') + " other key\n" +
		sum('g') + " 2049 1 2 3.4 5.6 /no newline"
	for _, k := range []string{key, "9 " + key, "other key", "my tool", "2049 1 2 3.4 5.6 /no newline", "absent"} {
		want, wantOK := parseBinHashes([]byte(raw))[k]
		if k == "2049 1 2 3.4 5.6 /no newline" {
			want, wantOK = "", false // a line cut short is no entry: the binary is hashed again
		}
		got, ok := findBinHash([]byte(raw), k)
		if got != want || ok != wantOK {
			t.Errorf("findBinHash(%q) = %q, %v; want %q, %v", k, got, ok, want, wantOK)
		}
	}
}

// hashFile is the sha256 of path, never from a cache.
func hashFile(path string) (string, error) {
	_, sum, _, err := binhash.Sum(path, nil, func(string) (string, bool) { return "", false })
	return sum, err
}
