package enforcer

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/internal/kernrun"
	"github.com/sysprof/sysprof/internal/phase"
)

// initProgram is what spawnStage executes: the embedded init program (initProgramData) in a
// sealed memfd (/proc/self/fd/N; N stays open for the process's life, close-on-exec), or
// /proc/self/exe (sysprof itself, MaybeInit) when the build has none or the memfd cannot be
// made here. The program is small: its start costs ~2.5 ms less than sysprof's own
// (BENCHMARKS.md).
var initProgram = programFrom(func() string { return initProgramData }, exeKey)

// programFrom makes the memfd of the program data returns, once (a seam for tests): a kept
// one when a keeper holds exactly this program (initkeep_linux.go), else a new one, which it
// then hands to a keeper for the next runs. key names the binary data comes from (exeKey;
// nil or "": a kept memfd is compared byte for byte).
func programFrom(data func() string, key func() string) func() string {
	return sync.OnceValue(func() string {
		prog := data()
		if prog == "" {
			return "/proc/self/exe"
		}
		start := time.Now()
		dir := keepDir()
		var k string
		if key != nil {
			k = key()
		}
		if fd, ok := takeKept(dir, prog, k); ok {
			phase.Since("init program: kept memfd", start)
			return fmt.Sprintf("/proc/self/fd/%d", fd)
		}
		fd, err := sealedMemfd(kernrun.InitProgramName, prog)
		if err != nil {
			return "/proc/self/exe"
		}
		phase.Since("init program: sealed memfd", start)
		keep := func() {
			if err := keepProgram(dir, fd, len(prog), k); err != nil && phase.On() {
				fmt.Fprintln(os.Stderr, "sysprof:", err)
			}
		}
		pendingKeep.Store(&keep)
		return fmt.Sprintf("/proc/self/fd/%d", fd)
	})
}

// pendingKeep hands a new memfd to a keeper (keepProgram); startKeeper runs it once, in the
// background, when the init stage has been started.
var pendingKeep atomic.Pointer[func()]

func startKeeper() {
	if f := pendingKeep.Swap(nil); f != nil {
		go (*f)()
	}
}

// sealedMemfd copies data into a new memfd and seals it: no write, resize or further seal can
// change it (F_SEAL_WRITE, F_SEAL_SHRINK, F_SEAL_GROW, F_SEAL_SEAL; F_SEAL_EXEC where the
// kernel has it), so what runs is what sysprof carries. Its fd is close-on-exec and above the
// init stage's inherited ones (a child's ExtraFiles are dup2'ed onto 3-6 before the exec that
// names this fd). Requires Linux 3.17 (memfd_create, sealing).
func sealedMemfd(name, data string) (int, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING|unix.MFD_EXEC)
	if err == unix.EINVAL { // before Linux 6.3 (MFD_EXEC): executable by default
		fd, err = unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	}
	if err != nil {
		return -1, fmt.Errorf("memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), name)
	// Straight from the binary's read-only data (no copy on the way: ~3 MB).
	if _, err := f.Write(unsafe.Slice(unsafe.StringData(data), len(data))); err != nil {
		f.Close()
		return -1, fmt.Errorf("write %s memfd: %w", name, err)
	}
	seals := unix.F_SEAL_WRITE | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals|unix.F_SEAL_EXEC); err != nil {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals); err != nil {
			f.Close()
			return -1, fmt.Errorf("seal %s memfd: %w", name, err)
		}
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SEAL); err != nil {
		f.Close()
		return -1, fmt.Errorf("seal %s memfd: %w", name, err)
	}
	high, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 100)
	f.Close()
	if err != nil {
		return -1, fmt.Errorf("move %s memfd: %w", name, err)
	}
	return high, nil
}
