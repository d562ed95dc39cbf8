package enforcer

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/enforcer/initstage"
	"github.com/sysprof/sysprof/internal/kernrun"
)

// The init program's memfd kept between runs. Writing ~3 MB into a new memfd costs every run
// ~2–4 ms of CPU on the critical path (one shmem page allocation and memcg charge per 4 KB:
// BENCHMARKS.md). So the first run hands a copy of its sealed memfd to a keeper process (the
// init program itself, started from that memfd with initstage.KeepArg: it holds the fd and
// nothing else, in a session of its own, stdio on /dev/null, no environment) and publishes it
// in an escrow file; a run that starts while the keeper lingers takes its own reference
// (pidfd_getfd) and uses it only when it is exactly the program this binary embeds: a memfd
// sealed against write, shrink, grow and further seals (so what was checked is what runs),
// executable, of the program's size, and either bytes.Equal to it or, without reading it,
// known to be it: the escrow lies in a directory every sandbox hides (keepTrusted: root's
// /run/sysprof, where the binary hashes enforce trusts live too), it names this very memfd
// (device and inode, as fstat of the fd taken says) and this sysprof binary as one whose
// program it holds (exeKey: device, inode, size, mtime and ctime of /proc/self/exe; the binary
// that wrote it, stated before and after the write, or one that compared it byte for byte:
// ctime cannot be set from user space). Reading and comparing 2.7 MB cost
// ~1.7 ms of CPU a run. Anything else (no keeper, another build's program, a forged or
// unsealed memfd) and the run makes its own memfd as before. Each run that takes it touches
// the escrow file: the keeper stays until keepFor after its modification time, then
// withdraws the file and exits.

// keepFor is how long the keeper stays after the last run that took its memfd (an agent's or
// a person's next command): long enough that its start (~2.5 ms of CPU) is paid once for many
// runs; meanwhile it costs one idle process and the 2.7 MB it holds.
var keepFor = 10 * time.Second

// keepLayout names keptInit's layout (a build that writes it differently never matches).
const keepLayout = "v2"

// keptInit is the escrow file of a kept memfd (the keeper reads it too).
type keptInit = initstage.Kept

func holderOf(k keptInit) kernrun.Holder { return kernrun.Holder{Pid: k.Pid, Start: k.Start} }

// keepDir is where kept memfds are published: root's under /run, an ordinary user's under
// XDG_RUNTIME_DIR (their own, 0700); "" keeps nothing.
var keepDir = func() string {
	if os.Geteuid() == 0 {
		return "/run/sysprof/init-keep"
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
		return filepath.Join(d, "sysprof", "init-keep")
	}
	return ""
}

// keepName names the escrow file of a program of size n (one keeper per size; a build whose
// program differs at the same size replaces it).
func keepName(n int) string { return keepLayout + "-" + strconv.Itoa(n) }

// keepTrusted reports whether an escrow in dir can vouch for its memfd (see the top): only
// in the directory of sysprof's own state that every sandbox hides (binHashDir: a command
// cannot plant a record there); an ordinary user's escrow under XDG_RUNTIME_DIR is not, so
// its memfd is compared byte for byte. A seam for tests.
var keepTrusted = func(dir string) bool {
	d := binHashDir()
	return d != "" && strings.HasPrefix(dir, d+"/")
}

// exeKey names the sysprof binary this process runs (and so the program it embeds): device,
// inode, size, modification and change time of /proc/self/exe; "" when it cannot tell.
func exeKey() string {
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/exe", &st); err != nil {
		return ""
	}
	return fmt.Sprintf("%d:%d:%d:%d.%d:%d.%d", st.Dev, st.Ino, st.Size, st.Mtim.Sec, st.Mtim.Nsec, st.Ctim.Sec, st.Ctim.Nsec)
}

// takeKept returns this process's own fd (close-on-exec, above the init stage's inherited
// ones) of a kept memfd holding exactly data, and moves its keeper's deadline on (touches the
// file); ok false when there is none to use (then nothing is left open). key names the binary
// data comes from (exeKey; "": the memfd is compared byte for byte).
func takeKept(dir, data, key string) (fd int, ok bool) {
	if dir == "" {
		return -1, false
	}
	unlock, err := kernrun.LockDir(dir, false)
	if err != nil {
		return -1, false // nothing kept
	}
	defer unlock()
	e, name := kernrun.Escrow{Dir: dir}, keepName(len(data))
	var k keptInit
	if e.Read(name, &k) != nil {
		e.Remove(name)
		return -1, false
	}
	pidfd, fds, err := kernrun.Take(holderOf(k), []int{k.FD})
	if err != nil {
		e.Remove(name) // its keeper is gone
		return -1, false
	}
	unix.Close(pidfd)
	fd, err = unix.FcntlInt(uintptr(fds[0]), unix.F_DUPFD_CLOEXEC, 100)
	unix.Close(fds[0])
	if err != nil {
		return -1, false
	}
	var known *keptInit // the escrow vouches for the memfd's content
	trusted := key != "" && keepTrusted(dir)
	if trusted && slices.Contains(k.Exes, key) {
		known = &k
	}
	if err := sameProgram(fd, data, known); err != nil {
		unix.Close(fd)
		e.Remove(name) // the keeper exits when it finds the file gone
		return -1, false
	}
	if trusted && known == nil && k.Ino != 0 && len(k.Exes) < maxKeptExes {
		// Compared byte for byte: this binary's next runs need not (another sysprof binary
		// with the same program wrote it; the record names both).
		k.Exes = append(k.Exes, key)
		if e.Rewrite(name, k) == nil {
			return fd, true // rewritten: its modification time moved on
		}
	}
	now := time.Now()
	_ = os.Chtimes(filepath.Join(dir, name), now, now)
	return fd, true
}

// maxKeptExes bounds the binaries a kept memfd's record names (two or three builds sharing
// one program is a test machine's case).
const maxKeptExes = 8

// sameProgram checks that fd can stand for the program data: sealed so that it cannot change
// after this check (write, shrink, grow, seal), an executable regular file of data's size, and
// holding exactly data: compared, or, when known (a trusted escrow's record of a memfd the
// same binary wrote), the very memfd it names.
func sameProgram(fd int, data string, known *keptInit) error {
	seals, err := unix.FcntlInt(uintptr(fd), unix.F_GET_SEALS, 0)
	if err != nil {
		return fmt.Errorf("not a sealable memfd: %w", err)
	}
	want := unix.F_SEAL_WRITE | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_SEAL
	if seals&want != want {
		return fmt.Errorf("memfd seals %#x, want %#x", seals, want)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Mode&0o111 == 0 {
		return fmt.Errorf("memfd mode %#o: not an executable file", st.Mode)
	}
	if st.Size != int64(len(data)) {
		return fmt.Errorf("memfd of %d bytes, want %d", st.Size, len(data))
	}
	if known != nil && known.Ino != 0 && st.Dev == known.Dev && st.Ino == known.Ino {
		return nil // sealed since this binary wrote it
	}
	// Read in chunks through one small buffer: cheaper than mapping 3 MB (and unmapping it).
	buf := make([]byte, min(len(data), 128<<10))
	prog := unsafe.Slice(unsafe.StringData(data), len(data))
	for off := 0; off < len(data); {
		n, err := unix.Pread(fd, buf[:min(len(buf), len(data)-off)], int64(off))
		if err != nil {
			return fmt.Errorf("read the memfd: %w", err)
		}
		if n == 0 || !bytes.Equal(buf[:n], prog[off:off+n]) {
			return errors.New("memfd holds another program")
		}
		off += n
	}
	return nil
}

// keepProgram starts a keeper of fd (a sealed memfd of n bytes: the init program, which is its
// own keeper) and publishes it in dir, unless one is published already. key names the binary
// whose program was written into fd (exeKey before the write; "": none); it is recorded only
// when the binary is still the same. Errors leave nothing published (a keeper that finds no
// file of its own exits after keepFor).
func keepProgram(dir string, fd, n int, key string) error {
	if dir == "" {
		return nil
	}
	unlock, err := kernrun.LockDir(dir, true)
	if err != nil {
		return fmt.Errorf("keep the init program: %w", err)
	}
	defer unlock()
	e, name := kernrun.Escrow{Dir: dir}, keepName(n)
	var k keptInit
	if e.Read(name, &k) == nil && holderOf(k).Alive() {
		return nil // another run's keeper (this run could not use it: it is replaced next time)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("keep the init program: %w", err)
	}
	// No environment (the caller's may hold secrets) and no hold on the caller's directory.
	cmd := &exec.Cmd{Path: procFDPath(fd), Args: []string{"sysprof-keep-init", initstage.KeepArg, dir, name,
		strconv.FormatInt(keepFor.Milliseconds(), 10)}, Env: []string{}, Dir: "/"}
	h, nums, err := kernrun.StartHolder(cmd, []int{fd})
	if err != nil {
		return fmt.Errorf("keep the init program: %w", err)
	}
	k = keptInit{Pid: h.Pid, Start: h.Start, FD: nums[0], Dev: st.Dev, Ino: st.Ino}
	if key != "" && key == exeKey() {
		k.Exes = []string{key}
	}
	if err := e.Publish(name, k); err != nil {
		_ = cmd.Process.Kill()
		return fmt.Errorf("keep the init program: %w", err)
	}
	return nil
}

// procFDPath is the path that execs fd.
func procFDPath(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }
