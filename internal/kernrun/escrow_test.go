package kernrun

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/testutil"
)

// An fd given to a holder is taken back as another reference to the same file, and the file
// that describes the holder round-trips.
func TestEscrowRoundTrip(t *testing.T) {
	testutil.RequireRoot(t) // pidfd_getfd of another process
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	h, nums, err := StartHolder(exec.Command("sleep", "30"), []int{int(w.Fd())})
	testutil.RequireNoErr(t, "start a holder", err)
	defer unix.Kill(h.Pid, unix.SIGKILL)
	if len(nums) != 1 || nums[0] != 3 || !h.Alive() {
		t.Fatalf("holder %+v with fds %v", h, nums)
	}
	e := Escrow{Dir: t.TempDir()}
	type rec struct {
		Holder
		FDs []int `json:"fds"`
	}
	if err := e.Publish("a.json", rec{h, nums}); err != nil {
		t.Fatal(err)
	}
	var got rec
	if err := e.Read("a.json", &got); err != nil || got.Holder != h || !slices.Equal(got.FDs, nums) {
		t.Fatalf("read back %+v %v, want %+v %v", got, err, h, nums)
	}
	if files := e.Files("*.json"); !slices.Equal(files, []string{"a.json"}) {
		t.Errorf("files %v", files)
	}
	pidfd, fds, err := Take(got.Holder, got.FDs)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(pidfd)
	if _, err := unix.Write(fds[0], []byte("x")); err != nil {
		t.Fatal(err)
	}
	unix.Close(fds[0])
	b := make([]byte, 1)
	if n, err := r.Read(b); n != 1 || err != nil || b[0] != 'x' {
		t.Errorf("the taken fd is not the pipe's write end: %d %v %q", n, err, b)
	}
}

// A holder whose pid now names another process (another start time), or that is gone, gives
// nothing: a reused pid must not hand out a stranger's fds.
func TestEscrowTakeChecksTheHolder(t *testing.T) {
	testutil.RequireRoot(t)
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	h, nums, err := StartHolder(exec.Command("sleep", "30"), []int{int(devnull.Fd())})
	testutil.RequireNoErr(t, "start a holder", err)
	defer unix.Kill(h.Pid, unix.SIGKILL)
	stranger := h
	stranger.Start++ // the same pid, another process
	if pidfd, fds, err := Take(stranger, nums); err == nil {
		unix.Close(pidfd)
		for _, fd := range fds {
			unix.Close(fd)
		}
		t.Error("took fds from a process that is not the holder")
	}
	unix.Kill(h.Pid, unix.SIGKILL)
	for i := 0; i < 500 && h.Alive(); i++ {
		unix.Nanosleep(&unix.Timespec{Nsec: 10e6}, nil)
	}
	if _, _, err := Take(h, nums); err == nil {
		t.Error("took fds from a holder that is gone")
	}
}

// GetFDs takes all the fds or none, and names the one it could not take.
func TestGetFDs(t *testing.T) {
	pidfd, err := unix.PidfdOpen(os.Getpid(), 0)
	testutil.RequireNoErr(t, "pidfd_open", err)
	defer unix.Close(pidfd)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	fds, err := GetFDs(pidfd, []int{int(r.Fd())})
	testutil.RequireNoErr(t, "pidfd_getfd of this process", err)
	var a, b unix.Stat_t
	if len(fds) != 1 || unix.Fstat(fds[0], &a) != nil || unix.Fstat(int(r.Fd()), &b) != nil || a.Ino != b.Ino {
		t.Fatalf("GetFDs = %v: not the pipe", fds)
	}
	unix.Close(fds[0])
	bad := 1 << 20 // beyond any open fd
	if fds, err := GetFDs(pidfd, []int{int(r.Fd()), bad}); err == nil || fds != nil || !strings.Contains(err.Error(), "fd 1048576") {
		t.Errorf("GetFDs with a closed fd = %v, %v; want nothing and an error naming it", fds, err)
	}
}

// Rewrite replaces a published record in place, leaving nothing of a longer old one, and
// never creates a file or writes through a link (those are Publish's or nobody's).
func TestEscrowRewrite(t *testing.T) {
	e := Escrow{Dir: t.TempDir()}
	type rec struct {
		Names []string `json:"names"`
		Pid   int      `json:"pid"`
	}
	long := rec{Names: []string{"openat", "execve", "unlinkat", "renameat2", "mkdirat"}, Pid: 1}
	if err := e.Publish("s", long); err != nil {
		t.Fatal(err)
	}
	st0, _ := os.Stat(filepath.Join(e.Dir, "s"))
	short := rec{Names: []string{"openat"}, Pid: 2}
	if err := e.Rewrite("s", short); err != nil {
		t.Fatal(err)
	}
	var got rec
	if err := e.Read("s", &got); err != nil || got.Pid != 2 || !slices.Equal(got.Names, short.Names) {
		t.Fatalf("read back %+v (%v), want %+v", got, err, short)
	}
	if st1, _ := os.Stat(filepath.Join(e.Dir, "s")); st0 == nil || st1 == nil || !os.SameFile(st0, st1) {
		t.Error("Rewrite replaced the file instead of writing into it")
	}
	if err := e.Rewrite("missing", short); err == nil {
		t.Error("Rewrite created a file")
	}
	if _, err := os.Stat(filepath.Join(e.Dir, "missing")); err == nil {
		t.Error("Rewrite left a new file")
	}
	target := filepath.Join(t.TempDir(), "target")
	os.WriteFile(target, []byte("keep"), 0o600)
	os.Symlink(target, filepath.Join(e.Dir, "link"))
	if err := e.Rewrite("link", short); err == nil {
		t.Error("Rewrite wrote through a symlink")
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Errorf("the symlink's target was written: %q", b)
	}
	open := filepath.Join(e.Dir, "open")
	os.WriteFile(open, []byte("{}"), 0o666)
	os.Chmod(open, 0o666)
	if err := e.Rewrite("open", short); err == nil {
		t.Error("Rewrite wrote into a file others may write")
	}
}
