package enforcer

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/enforcer/initstage"
	"github.com/sysprof/sysprof/internal/kernrun"
	"github.com/sysprof/sysprof/internal/testutil"
)

// useKeepDir points the keeper's escrow at a directory of the test's.
func useKeepDir(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "init-keep")
	saved := keepDir
	keepDir = func() string { return dir }
	t.Cleanup(func() { keepDir = saved })
	return dir
}

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

// The first run's memfd is kept by a keeper process (the init program itself); the next run
// execs that same memfd instead of writing its own.
func TestInitProgramKeptBetweenRuns(t *testing.T) {
	prog := filepath.Join(t.TempDir(), "sysprof-init")
	build := exec.Command("go", "build", "-o", prog, "./cmd/sysprof-init")
	build.Dir = testutil.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/sysprof-init: %v\n%s", err, out)
	}
	bin, err := os.ReadFile(prog)
	if err != nil {
		t.Fatal(err)
	}
	dir := useKeepDir(t)
	first := programFrom(func() string { return string(bin) }, nil)()
	if !strings.HasPrefix(first, "/proc/self/fd/") {
		t.Fatalf("first run's program %q: not a memfd", first)
	}
	startKeeper() // as spawnStage does
	e, name := kernrun.Escrow{Dir: dir}, keepName(len(bin))
	var k keptInit
	for i := 0; e.Read(name, &k) != nil; i++ { // the keeper starts beside the run
		if i == 500 {
			t.Fatal("no keeper published its memfd")
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Cleanup(func() { unix.Kill(k.Pid, unix.SIGKILL) })
	past := time.Now().Add(-time.Minute)
	if err := os.Chtimes(filepath.Join(dir, name), past, past); err != nil {
		t.Fatal(err)
	}
	published := past
	if !holderOf(k).Alive() {
		t.Fatalf("keeper %d is gone", k.Pid)
	}
	if exe, err := os.Readlink("/proc/" + strconv.Itoa(k.Pid) + "/exe"); err != nil || !strings.HasPrefix(exe, "/memfd:") {
		t.Errorf("keeper runs %q (%v), want the init program's memfd", exe, err)
	}
	if cwd, err := os.Readlink("/proc/" + strconv.Itoa(k.Pid) + "/cwd"); err != nil || cwd != "/" {
		t.Errorf("keeper's directory %q (%v), want / (it must not hold the caller's busy)", cwd, err)
	}
	if env, err := os.ReadFile("/proc/" + strconv.Itoa(k.Pid) + "/environ"); err != nil || len(env) != 0 {
		t.Errorf("keeper's environment %q (%v), want none (the caller's may hold secrets)", env, err)
	}
	second := programFrom(func() string { return string(bin) }, nil)()
	if second == first || !strings.HasPrefix(second, "/proc/self/fd/") {
		t.Fatalf("second run's program %q (first %q)", second, first)
	}
	if inode(t, second) != inode(t, first) {
		t.Errorf("second run made a memfd of its own: inode %d, kept %d", inode(t, second), inode(t, first))
	}
	fd, _ := strconv.Atoi(strings.TrimPrefix(second, "/proc/self/fd/"))
	if fd <= fdReplica {
		t.Errorf("kept memfd is fd %d: a child's inherited fds (3-%d) would replace it before its exec", fd, fdReplica)
	}
	if st, err := os.Stat(filepath.Join(dir, name)); err != nil || !st.ModTime().After(published) {
		t.Errorf("taking the memfd did not move the keeper's deadline on (touch its file): %v", err)
	}
}

// A kept memfd is used only when it is exactly the embedded program and cannot change any
// more: a published memfd that differs by a byte, is longer, or is not sealed is refused
// (and withdrawn), and the run makes its own.
func TestKeptInitProgramIsChecked(t *testing.T) {
	bin, err := os.ReadFile("/usr/bin/true")
	testutil.RequireNoErr(t, "/usr/bin/true", err)
	prog := string(bin)
	flipped := []byte(prog)
	flipped[len(flipped)/2] ^= 0xff
	sealed := func(data string) int {
		fd, err := sealedMemfd("sysprof-test", data)
		testutil.RequireNoErr(t, "sealed memfd", err)
		return fd
	}
	for _, tc := range []struct {
		name string
		fd   func() int
		use  bool
	}{
		{"the same program, sealed", func() int { return sealed(prog) }, true},
		{"one byte differs", func() int { return sealed(string(flipped)) }, false},
		{"longer", func() int { return sealed(prog + "\x00") }, false},
		{"not sealed", func() int {
			fd, err := unix.MemfdCreate("sysprof-test", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
			testutil.RequireNoErr(t, "memfd", err)
			if _, err := unix.Write(fd, bin); err != nil {
				t.Fatal(err)
			}
			return fd
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := useKeepDir(t)
			fd := tc.fd()
			defer unix.Close(fd)
			// This process is the "keeper" of the published memfd.
			start, _ := kernrun.ProcStart(os.Getpid())
			unlock, err := kernrun.LockDir(dir, true)
			if err != nil {
				t.Fatal(err)
			}
			e, name := kernrun.Escrow{Dir: dir}, keepName(len(prog))
			err = e.Publish(name, keptInit{Pid: os.Getpid(), Start: start, FD: fd})
			unlock()
			if err != nil {
				t.Fatal(err)
			}
			got, ok := takeKept(dir, prog, "")
			if ok {
				defer unix.Close(got)
			}
			if ok != tc.use {
				t.Fatalf("takeKept used the published memfd: %v, want %v", ok, tc.use)
			}
			var k keptInit
			if published := e.Read(name, &k) == nil; published != tc.use {
				t.Errorf("escrow file still published: %v, want %v", published, tc.use)
			}
		})
	}
}

// The keeper (package initstage, which cannot import kernrun) takes the escrow's own lock: it
// does not withdraw its file while a run holds the lock (and may be taking the memfd).
func TestKeeperTakesTheEscrowLock(t *testing.T) {
	dir := t.TempDir()
	unlock, err := kernrun.LockDir(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	name := keepName(1)
	if err := (kernrun.Escrow{Dir: dir}).Publish(name, keptInit{Pid: os.Getpid(), FD: 3}); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-time.Minute)
	if err := os.Chtimes(filepath.Join(dir, name), past, past); err != nil {
		t.Fatal(err)
	}
	done := make(chan int, 1)
	go func() { done <- initstage.Keep([]string{dir, name, "50"}) }()
	time.Sleep(300 * time.Millisecond) // the keeper woke long ago and waits for the lock
	if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
		t.Fatalf("the keeper withdrew its file while a run held the escrow's lock: %v", err)
	}
	unlock()
	<-done
	if _, err := os.Stat(filepath.Join(dir, name)); !os.IsNotExist(err) {
		t.Errorf("the keeper left its file behind once the lock was free: %v", err)
	}
}

// trustKeepDir makes the test's escrow directory one every sandbox hides (keepTrusted).
func trustKeepDir(t *testing.T, trusted bool) {
	saved := keepTrusted
	keepTrusted = func(string) bool { return trusted }
	t.Cleanup(func() { keepTrusted = saved })
}

// A kept memfd is used without reading it only when a trusted escrow names that very memfd
// (device and inode) and this very binary (exeKey) as the one that wrote it: a record of
// another binary, a record naming another memfd, or an escrow every sandbox does not hide (an
// ordinary user's) and the memfd is compared byte for byte, so that one holding another
// program is refused. Each case's memfd holds another program than the run's.
func TestKeptInitProgramIdentity(t *testing.T) {
	bin, err := os.ReadFile("/usr/bin/true")
	testutil.RequireNoErr(t, "/usr/bin/true", err)
	prog := string(bin)
	other := []byte(prog)
	other[len(other)/2] ^= 0xff
	key := exeKey()
	if key == "" {
		t.Fatal("exeKey: cannot stat /proc/self/exe")
	}
	for _, tc := range []struct {
		name     string
		trusted  bool
		data     string // what the memfd holds
		exe      string // the binary the record names
		otherIno bool   // the record names another memfd
		unsealed bool
		use      bool
	}{
		{"trusted record of this binary's memfd", true, prog, key, false, false, true},
		{"trusted record of another binary", true, string(other), key + "x", false, false, false},
		{"trusted record naming another memfd", true, string(other), key, true, false, false},
		{"trusted record of an unsealed memfd", true, prog, key, false, true, false},
		{"untrusted escrow", false, string(other), key, false, false, false},
		{"untrusted escrow, the same program", false, prog, key, false, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := useKeepDir(t)
			trustKeepDir(t, tc.trusted)
			fd, err := sealedMemfd("sysprof-test", tc.data)
			if tc.unsealed {
				fd, err = unix.MemfdCreate("sysprof-test", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING|unix.MFD_EXEC)
				if err == nil {
					_, err = unix.Write(fd, []byte(tc.data))
				}
			}
			testutil.RequireNoErr(t, "memfd", err)
			defer unix.Close(fd)
			var st unix.Stat_t
			if err := unix.Fstat(fd, &st); err != nil {
				t.Fatal(err)
			}
			if tc.otherIno {
				st.Ino++
			}
			start, _ := kernrun.ProcStart(os.Getpid())
			unlock, err := kernrun.LockDir(dir, true)
			if err != nil {
				t.Fatal(err)
			}
			e, name := kernrun.Escrow{Dir: dir}, keepName(len(prog))
			err = e.Publish(name, keptInit{Pid: os.Getpid(), Start: start, FD: fd, Exes: []string{tc.exe}, Dev: st.Dev, Ino: st.Ino})
			unlock()
			if err != nil {
				t.Fatal(err)
			}
			got, ok := takeKept(dir, prog, key)
			if ok {
				defer unix.Close(got)
			}
			if ok != tc.use {
				t.Fatalf("takeKept used the published memfd: %v, want %v", ok, tc.use)
			}
		})
	}
}

// keepProgram records the memfd's identity and the binary that wrote it, and keepTrusted
// trusts root's escrow under /run/sysprof (hidden in every sandbox) and nothing else.
func TestKeepRecordsIdentity(t *testing.T) {
	if d := binHashDir(); d != "" {
		if !keepTrusted(filepath.Join(d, "init-keep")) {
			t.Errorf("keepTrusted(%s/init-keep) = false", d)
		}
		if keepTrusted(d+"-x/init-keep") || keepTrusted(t.TempDir()) {
			t.Error("keepTrusted trusts a directory the sandbox does not hide")
		}
	}
	if os.Geteuid() == 0 && !keepTrusted(keepDir()) {
		t.Errorf("root's escrow %s is not trusted", keepDir())
	}
	prog := filepath.Join(t.TempDir(), "sysprof-init")
	build := exec.Command("go", "build", "-o", prog, "./cmd/sysprof-init")
	build.Dir = testutil.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/sysprof-init: %v\n%s", err, out)
	}
	bin, err := os.ReadFile(prog)
	if err != nil {
		t.Fatal(err)
	}
	dir := useKeepDir(t)
	fd, err := sealedMemfd("sysprof-test", string(bin))
	testutil.RequireNoErr(t, "sealed memfd", err)
	defer unix.Close(fd)
	for _, tc := range []struct{ key, want string }{{exeKey(), exeKey()}, {"stale", ""}} {
		if err := keepProgram(dir, fd, len(bin), tc.key); err != nil {
			t.Fatal(err)
		}
		var k keptInit
		if err := (kernrun.Escrow{Dir: dir}).Read(keepName(len(bin)), &k); err != nil {
			t.Fatal(err)
		}
		unix.Kill(k.Pid, unix.SIGKILL)
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			t.Fatal(err)
		}
		if want := []string{tc.want}; tc.want == "" && len(k.Exes) != 0 || tc.want != "" && !slices.Equal(k.Exes, want) || k.Dev != st.Dev || k.Ino != st.Ino {
			t.Errorf("record %+v for key %q: want exe %q, memfd %d:%d", k, tc.key, tc.want, st.Dev, st.Ino)
		}
		for i := 0; holderOf(k).Alive(); i++ {
			if i == 500 {
				t.Fatalf("keeper %d still there after SIGKILL", k.Pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// A binary that found another binary's record and compared the memfd byte for byte adds
// itself to the record (its next runs need not compare); one whose compare fails adds nothing.
func TestKeptRecordAddsAComparedBinary(t *testing.T) {
	bin, err := os.ReadFile("/usr/bin/true")
	testutil.RequireNoErr(t, "/usr/bin/true", err)
	prog := string(bin)
	key := exeKey()
	for _, same := range []bool{true, false} {
		dir := useKeepDir(t)
		trustKeepDir(t, true)
		data := prog
		if !same {
			data = prog[:len(prog)-1] + "x"
		}
		fd, err := sealedMemfd("sysprof-test", data)
		testutil.RequireNoErr(t, "sealed memfd", err)
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			t.Fatal(err)
		}
		start, _ := kernrun.ProcStart(os.Getpid())
		e, name := kernrun.Escrow{Dir: dir}, keepName(len(prog))
		unlock, err := kernrun.LockDir(dir, true)
		if err != nil {
			t.Fatal(err)
		}
		err = e.Publish(name, keptInit{Pid: os.Getpid(), Start: start, FD: fd, Exes: []string{"another"}, Dev: st.Dev, Ino: st.Ino})
		unlock()
		if err != nil {
			t.Fatal(err)
		}
		got, ok := takeKept(dir, prog, key)
		if ok {
			unix.Close(got)
		}
		var k keptInit
		rerr := e.Read(name, &k)
		switch {
		case ok != same:
			t.Errorf("same program %v: takeKept %v", same, ok)
		case same && (rerr != nil || !slices.Equal(k.Exes, []string{"another", key})):
			t.Errorf("record after a compare: %+v (%v), want this binary added", k, rerr)
		case !same && rerr == nil:
			t.Errorf("record of another program still published: %+v", k)
		}
		unix.Close(fd)
	}
}
