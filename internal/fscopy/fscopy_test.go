package fscopy

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// A sparse file of 64 GiB with two small data extents copies as itself: the same bytes, the
// same size, and about the blocks of its data (a plain copy writes 64 GiB of zeros).
func TestDataKeepsHoles(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
	f, err := os.Create(src)
	if err != nil {
		t.Fatal(err)
	}
	const size = 64 << 30
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	head, mid := []byte("head"), bytes.Repeat([]byte("m"), 3<<20)
	if _, err := f.WriteAt(head, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(mid, 7<<30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	in, err := unix.Open(src, unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(in)
	out, err := unix.Open(dst, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(out)
	if err := Data(out, in); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(out, &st); err != nil {
		t.Fatal(err)
	}
	if st.Size != size {
		t.Errorf("size %d, want %d", st.Size, size)
	}
	if used := st.Blocks * 512; used > 16<<20 {
		t.Errorf("the copy allocates %d bytes for %d of data: holes were written", used, len(head)+len(mid))
	}
	rd, err := unix.Open(dst, unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(rd)
	out = rd
	got := make([]byte, len(mid))
	if _, err := unix.Pread(out, got, 7<<30); err != nil || !bytes.Equal(got, mid) {
		t.Errorf("the data extent did not copy: %v", err)
	}
	if _, err := unix.Pread(out, got[:4], 0); err != nil || string(got[:4]) != "head" {
		t.Errorf("the first extent did not copy: %q %v", got[:4], err)
	}
	if _, err := unix.Pread(out, got[:4], 5<<30); err != nil || !bytes.Equal(got[:4], make([]byte, 4)) {
		t.Errorf("a hole does not read as zeros: %v", err)
	}
}
