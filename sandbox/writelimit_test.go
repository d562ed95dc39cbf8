package sandbox

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/testutil"
)

// TestBoundStageFlush: a bounded upper layer refuses what goes beyond its bytes and inodes
// (ENOSPC) and FlushBoundStages copies what fitted into the host's upper layer (a whiteout, an
// opaque directory's xattr, hard and symbolic links, modes and times kept) and says which bound
// was reached. Detached mounts only: nothing of the host's tree changes.
func TestBoundStageFlush(t *testing.T) {
	testutil.RequireRoot(t)
	dir := t.TempDir()
	s := Stage{Path: filepath.Join(dir, "lower"), Upper: filepath.Join(dir, "top", "upper"), Work: filepath.Join(dir, "top", "work"), Size: 1 << 20, Files: 16}
	for _, d := range []string{s.Path, s.Upper, s.Work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ovl, err := unix.Fsopen("overlay", unix.FSOPEN_CLOEXEC)
	testutil.RequireNoErr(t, "fsopen overlay", err)
	defer unix.Close(ovl)
	boundStages = nil
	t.Cleanup(func() { boundStages = nil })
	testutil.RequireNoErr(t, "a bounded upper layer (Linux 6.13)", boundUpper(ovl, s))
	b := boundStages[0]
	defer func() {
		for _, fd := range []int{b.tmpfs, b.disk, b.top, b.lock} {
			unix.Close(fd)
		}
	}()
	up, err := unix.Openat(b.tmpfs, "upper", unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(up)
	// What an overlay leaves in its upper layer: a file, a hard link, a symlink, a whiteout,
	// an opaque directory.
	write := func(name string, n int) error {
		fd, err := unix.Openat(up, name, unix.O_WRONLY|unix.O_CREAT|unix.O_CLOEXEC, 0o640)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		for n > 0 {
			k, err := unix.Write(fd, make([]byte, min(n, 64<<10)))
			if err != nil {
				return err
			}
			n -= k
		}
		return nil
	}
	if err := write("a", 4096); err != nil {
		t.Fatal(err)
	}
	if err := unix.Linkat(up, "a", up, "a2", 0); err != nil {
		t.Fatal(err)
	}
	if err := unix.Symlinkat("a", up, "l"); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mknodat(up, "gone", unix.S_IFCHR, 0); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkdirat(up, "d", 0o750); err != nil {
		t.Fatal(err)
	}
	if err := unix.Setxattr(filepath.Join("/proc/self/fd", strconv.Itoa(up), "d"), "user.overlay.opaque", []byte("y"), 0); err != nil {
		t.Fatal(err)
	}
	if err := write("big", 2<<20); err != unix.ENOSPC {
		t.Fatalf("a write past the bound: %v, want ENOSPC", err)
	}
	if err := FlushBoundStages(); err != nil {
		t.Fatal(err)
	}
	var st, st2 unix.Stat_t
	if err := unix.Lstat(filepath.Join(s.Upper, "a"), &st); err != nil || st.Size != 4096 || st.Mode&0o777 != 0o640 {
		t.Errorf("a: %+v %v", st, err)
	}
	if err := unix.Lstat(filepath.Join(s.Upper, "a2"), &st2); err != nil || st2.Ino != st.Ino {
		t.Errorf("a2 is not a hard link of a: %v", err)
	}
	if l, err := os.Readlink(filepath.Join(s.Upper, "l")); err != nil || l != "a" {
		t.Errorf("l: %q %v", l, err)
	}
	if err := unix.Lstat(filepath.Join(s.Upper, "gone"), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR || st.Rdev != 0 {
		t.Errorf("gone is not a whiteout: %+v %v", st, err)
	}
	buf := make([]byte, 8)
	if n, err := unix.Getxattr(filepath.Join(s.Upper, "d"), "user.overlay.opaque", buf); err != nil || string(buf[:n]) != "y" {
		t.Errorf("d lost its opaque xattr: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "top", LimitFile)); err != nil || !strings.Contains(string(b), `"bytesFull":true`) {
		t.Errorf("limit file: %s %v", b, err)
	}
}

// What bounding one stage adds to a run's start (BENCHMARKS.md, "Write limits"): the tmpfs,
// its two directories handed to the overlay, the clone of the host's layer directory; and the
// copy-out of an empty upper layer at the end.
func BenchmarkBoundUpper(b *testing.B) {
	testutil.RequireRoot(b)
	dir := b.TempDir()
	s := Stage{Path: filepath.Join(dir, "lower"), Upper: filepath.Join(dir, "top", "upper"), Work: filepath.Join(dir, "top", "work"), Size: 64 << 20, Files: 4096}
	for _, d := range []string{s.Path, s.Upper, s.Work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		ovl, err := unix.Fsopen("overlay", unix.FSOPEN_CLOEXEC)
		if err != nil {
			b.Fatal(err)
		}
		boundStages = nil
		if err := boundUpper(ovl, s); err != nil {
			b.Fatal(err)
		}
		if err := FlushBoundStages(); err != nil {
			b.Fatal(err)
		}
		b.StopTimer() // closing a detached mount waits for RCU: at the run's end, not its start
		for _, bs := range boundStages {
			unix.Close(bs.tmpfs)
			unix.Close(bs.disk)
			unix.Close(bs.top)
			unix.Close(bs.lock)
		}
		unix.Close(ovl)
		b.StartTimer()
	}
	boundStages = nil
}
