package sandbox

import (
	"fmt"
	"os"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/testutil"
)

// The stand-in for a memfd reads and writes like one and says memfd:NAME in /proc, but it can
// be mapped neither executable nor, later, made executable (mprotect); a real memfd can (the
// reason for the stand-in: this test fails against unix.MemfdCreate).
func TestNoExecMemfdCannotBeMappedExecutable(t *testing.T) {
	testutil.RequireRoot(t)
	mnt, err := NoExecTmpfs()
	testutil.RequireNoErr(t, "a detached tmpfs (fsmount)", err)
	defer unix.Close(mnt)
	fd, err := NoExecMemfd(mnt, "code/x", true)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if _, err := unix.Write(fd, make([]byte, 4096)); err != nil {
		t.Fatal(err)
	}
	link, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
	if err != nil || link != "/memfd:code_x (deleted)" {
		t.Errorf("its link reads %q (%v), want a memfd's", link, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&0o777 != 0o666 || st.Nlink != 0 {
		t.Errorf("mode %o, %d links (%v): want 0666 and unlinked", st.Mode&0o777, st.Nlink, err)
	}
	if m, err := unix.Mmap(fd, 0, 4096, unix.PROT_READ|unix.PROT_EXEC, unix.MAP_PRIVATE); err == nil {
		unix.Munmap(m)
		t.Error("mapped executable")
	}
	m, err := unix.Mmap(fd, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatalf("a plain shared mapping: %v", err)
	}
	defer unix.Munmap(m)
	if err := unix.Mprotect(m, unix.PROT_READ|unix.PROT_EXEC); err == nil {
		t.Error("made executable with mprotect")
	}
	if fd2, err := NoExecMemfd(mnt, "code/x", true); err != nil {
		t.Errorf("a second file of the same name: %v", err)
	} else {
		unix.Close(fd2)
	}
}
