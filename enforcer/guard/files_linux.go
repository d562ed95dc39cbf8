package guard

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/bpf"
	"github.com/sysprof/sysprof/internal/kernrun"
	"github.com/sysprof/sysprof/paths"
	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
	"github.com/sysprof/sysprof/seccomp"
)

// fileOps maps the x86_64 path syscalls to what guard.c reads of their arguments. Numbers come
// from go-seccomp-bpf's table when the guard loads. Built on first use (not in the init stage).
var fileOps = sync.OnceValue(func() map[string]bpf.GuardFileOp {
	return map[string]bpf.GuardFileOp{
		"open": bpf.GuardFileOpFOP_OPEN, "openat": bpf.GuardFileOpFOP_OPENAT, "openat2": bpf.GuardFileOpFOP_OPENAT2,
		"creat": bpf.GuardFileOpFOP_CREAT, "execve": bpf.GuardFileOpFOP_EXECVE, "execveat": bpf.GuardFileOpFOP_EXECVEAT,
		"mkdir": bpf.GuardFileOpFOP_PATH, "mknod": bpf.GuardFileOpFOP_PATH, "unlink": bpf.GuardFileOpFOP_PATH,
		"rmdir": bpf.GuardFileOpFOP_PATH, "truncate": bpf.GuardFileOpFOP_PATH, "chmod": bpf.GuardFileOpFOP_PATH,
		"chown": bpf.GuardFileOpFOP_PATH, "lchown": bpf.GuardFileOpFOP_PATH,
		"mkdirat": bpf.GuardFileOpFOP_PATHAT, "mknodat": bpf.GuardFileOpFOP_PATHAT, "unlinkat": bpf.GuardFileOpFOP_PATHAT,
		"fchmodat": bpf.GuardFileOpFOP_PATHAT, "fchmodat2": bpf.GuardFileOpFOP_PATHAT, "fchownat": bpf.GuardFileOpFOP_PATHAT,
		"utimensat": bpf.GuardFileOpFOP_PATHAT, "setxattr": bpf.GuardFileOpFOP_PATH, "lsetxattr": bpf.GuardFileOpFOP_PATH,
		"removexattr": bpf.GuardFileOpFOP_PATH, "lremovexattr": bpf.GuardFileOpFOP_PATH,
		"rename": bpf.GuardFileOpFOP_TWO, "link": bpf.GuardFileOpFOP_TWO,
		"renameat": bpf.GuardFileOpFOP_TWOAT, "renameat2": bpf.GuardFileOpFOP_TWOAT, "linkat": bpf.GuardFileOpFOP_TWOAT,
		"symlink": bpf.GuardFileOpFOP_SYMLINK, "symlinkat": bpf.GuardFileOpFOP_SYMLINKAT,
		"mmap": bpf.GuardFileOpFOP_MMAP, "connect": bpf.GuardFileOpFOP_CONNECT,
		"clone3": bpf.GuardFileOpFOP_CLONE3,
	}
})

// The room guard.c has for a run's hidden paths: hiddenSlots prefixes of at most hiddenBytes.
var (
	hiddenSlots = len(bpf.GuardRunCfg{}.Hidden)
	hiddenBytes = 8 * len(bpf.GuardRunCfg{}.Hidden[0].W)
)

// hiddenPrefixes are the byte prefixes guard.c compares ENOENT paths with: every hidden path
// starts with one of them. guard.c has room for hiddenSlots prefixes of hiddenBytes each, so
// a longer path is cut, and while there are too many, the two with the longest common prefix
// are replaced by it ($HOME/.aws and $HOME/.azure by "$HOME/.a"). A coarser prefix only sends
// more events: fileDenials keeps the ENOENTs under a hidden path (paths.CoveredBy), so no
// hidden path goes unreported, however many the sandbox hides.
func hiddenPrefixes(hidden []string) []string {
	var out []string
	for _, h := range hidden {
		if len(h) > hiddenBytes {
			h = h[:hiddenBytes]
		}
		if strings.HasPrefix(h, "/") { // guard.c compares absolute paths only
			out = append(out, h)
		}
	}
	slices.Sort(out)
	out = dropCovered(slices.Compact(out))
	for len(out) > hiddenSlots {
		best, bestLen := 0, -1
		for i := 0; i+1 < len(out); i++ {
			if n := commonPrefix(out[i], out[i+1]); n > bestLen {
				best, bestLen = i, n
			}
		}
		out[best] = out[best][:bestLen] // at least "/"
		out = slices.Delete(out, best+1, best+2)
		slices.Sort(out)
		out = dropCovered(out)
	}
	return out
}

// dropCovered removes from sorted prefixes those another one of them starts (the byte prefix
// sorts first, and what it starts follows it).
func dropCovered(sorted []string) []string {
	out := sorted[:0]
	for _, p := range sorted {
		if len(out) > 0 && strings.HasPrefix(p, out[len(out)-1]) {
			continue
		}
		out = append(out, p)
	}
	return out
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// fillFops fills guard.c's syscall table: which x86_64 numbers are path syscalls and what the
// program reads of their arguments. Every run's the same (a syscall the filter refuses answers
// EPERM before it reaches a path, and EPERM is taken only from mmap), so it is filled at load.
func fillFops(fops *ebpf.Map) error {
	for name, op := range fileOps() {
		nr, ok := bpf.NativeArch.SyscallNames[name]
		if !ok {
			continue // a legacy call this architecture lacks (open on aarch64)
		}
		if err := fops.Put(uint32(nr), uint32(op)); err != nil {
			return fmt.Errorf("fill fops: %w", err)
		}
	}
	return nil
}

// tpLink is the file-denial program on one syscall exit tracepoint, with the slot as the
// cookie (kernrun.AttachTracepoint).
type tpLink = kernrun.TracepointLink

// lingerFor is how long a helper process keeps a finished run's tracepoint perf events open.
//
// Opening the first perf event of a syscall tracepoint registers it; closing the last one
// unregisters it, and that waits for RCU grace periods under the kernel's global event_mutex
// (tens of ms per tracepoint on these VMs). A run starting meanwhile waits for that mutex for
// every tracepoint it opens. So a helper process keeps the perf events (without the program)
// for a moment: a run that starts meanwhile (back-to-back runs, steps of a gate) opens its own
// while they are still registered, which costs nothing, and the helper's closes then
// unregister nothing either. Only the last run's helper pays, when nobody waits. The price:
// while a syscall tracepoint is registered every syscall on the host takes the kernel's
// syscall-work path (+8-17 ns each here), so the moment is short (closing without it kept
// them registered for a grace period or two per tracepoint anyway). With pins the helper keeps
// the program attached as well, for a run that takes the slot over (warm_linux.go): then
// neither run attaches nor detaches anything. One second, as learn's warm helper: a person
// typing commands ~0.7 s apart takes the slot over too (250 ms left each such run to attach
// cold, under the kernel's mutex, and to start a new helper at its end: 74 -> 59 ms median
// wall, BENCHMARKS.md), and the host's tax still ends a second after the last run.
var lingerFor = time.Second

// fileNames are the path syscalls whose exit tracepoints the run needs: those the command may
// execute (every one in audit mode: the supervisor lets refused calls continue).
func (g *Guard) fileNames() []string {
	var names []string
	for _, name := range slices.Sorted(maps.Keys(fileOps())) {
		if _, ok := bpf.NativeArch.SyscallNames[name]; !ok {
			continue
		}
		if g.cfg.Audit || g.cfg.MayExecute == nil || g.cfg.MayExecute(name) {
			names = append(names, name)
		}
	}
	return names
}

// attachFiles attaches the slot's file-denial program to the exit tracepoint of each of
// g.names this kernel has, with the slot as the attach cookie (nothing to do when the run took
// over a warm slot: see warm_linux.go). Each attached tracepoint costs every process on
// the host a little on that syscall, and the run's teardown a little more. Attached
// concurrently: each perf_event_open of a tracepoint takes the kernel's event_mutex.
func (g *Guard) attachFiles() error {
	if g.warm {
		return nil
	}
	names := g.names
	prog, err := g.objs.fileProgram(uint32(g.slot), false)
	if err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		err := g.attachTracepoints(names, prog)
		if err == nil || attempt > 0 || !errors.Is(err, unix.EEXIST) {
			return err
		}
		// The slot's program is still attached elsewhere (its owner's helper was killed
		// before it detached it): this run takes an instance of its own.
		closeTracepoints(g.tps, nil)
		g.tps = nil
		if prog, err = g.objs.fileProgram(uint32(g.slot), true); err != nil {
			return err
		}
		g.ownFile = prog
	}
}

func (g *Guard) attachTracepoints(names []string, prog *ebpf.Program) error {
	tps := make([]tpLink, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tps[i], errs[i] = kernrun.AttachTracepoint("syscalls", "sys_exit_"+name, prog, uint64(g.slot))
		}()
	}
	wg.Wait()
	for _, tp := range tps {
		if tp.Perf >= 0 {
			g.tps = append(g.tps, tp)
		}
	}
	return errors.Join(errs...)
}

// closeTracepoints detaches the run's file program and closes the perf events, and reports
// whether a helper releases the run's slot afterwards.
func (g *Guard) closeTracepoints() bool {
	rel := &slotRelease{owners: g.objs.maps["slot_owner"], cgids: g.objs.maps["slot_cgid"], slot: uint32(g.slot), names: g.names, lock: g.slotLock}
	if g.objs.pinned() {
		rel.warm = warmPath(g.objs.dir, rel.slot)
	}
	if g.ownFile != nil {
		rel.owners, rel.warm = nil, "" // the slot's program was never attached by this run: free it at once
	}
	var handed bool
	if g.keeper != nil {
		// A slot taken over: back to its helper when it is still there (nothing to start).
		if handed = g.keeper.giveBack(rel.owners, rel.cgids); handed {
			for _, tp := range g.tps {
				unix.Close(tp.Link)
				unix.Close(tp.Perf)
			}
		}
		g.keeper = nil
	}
	if !handed {
		handed = closeTracepoints(g.tps, rel)
	}
	if g.ownFile != nil {
		g.ownFile.Close()
		g.ownFile = nil
	}
	return handed && rel.owners != nil
}

// slotRelease is the slot a helper frees once it has detached the slot's program; with warm,
// the helper publishes the slot there first (see warm_linux.go).
type slotRelease struct {
	owners, cgids *ebpf.Map
	slot          uint32
	warm          string   // the slot's warm file ("": not published)
	names         []string // the syscalls asked for
	lock          int      // the fd holding the slot's lock (-1: none), the helper's too
}

// closeTracepoints detaches the program and closes the perf events without waiting for the
// kernel: both are handed to a helper process (see Helper), which then releases the slot
// (rel, when not nil). Detaching a program from a perf event waits for an RCU tasks-trace grace
// period (~35 ms here), closing the last perf event of a tracepoint for more (see lingerFor);
// the program filters on this run's cgroup, empty by then, until the helper has detached it.
// It reports whether the helper took them.
func closeTracepoints(tps []tpLink, rel *slotRelease) bool {
	var links, perf []int
	for _, tp := range tps {
		links = append(links, tp.Link)
		perf = append(perf, tp.Perf)
	}
	if len(perf) == 0 {
		return false
	}
	if rel != nil && rel.cgids != nil {
		// The run is over: its slot's program reports for nobody until the next owner.
		_ = rel.cgids.Update(rel.slot, uint64(0), ebpf.UpdateAny)
	}
	if handOff(links, perf, rel) {
		return true
	}
	// Without the helper: detach here (concurrently: one grace period), then close the perf
	// events the old way.
	closeConcurrently(links)
	kernrun.ClosePerfEvents(perf)
	return false
}

// closeConcurrently closes fds at once (closing a link waits for a grace period).
func closeConcurrently(fds []int) {
	var wg sync.WaitGroup
	for _, fd := range fds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			unix.Close(fd)
		}()
	}
	wg.Wait()
}

// HelperArg is the hidden first argument that makes sysprof's main the helper that detaches a
// finished run's file-denial program, releases its slot and keeps its perf events open for
// lingerFor: the init dispatcher (enforcer.MaybeInit) runs os.Exit(Helper(os.Args[2:])) then.
const HelperArg = "__sysprof_linger__"

// handOff starts the helper with the links, the perf events and the slot map (and closes them
// here), and makes the helper the slot's owner. It reports false when it did not touch them.
func handOff(links, perf []int, rel *slotRelease) bool {
	fds := slices.Concat(links, perf)
	slot, warm, lock := -1, "-", -1
	if rel != nil && rel.owners != nil {
		fds = append(fds, rel.owners.FD())
		slot = int(rel.slot)
		if rel.warm != "" {
			warm = rel.warm
		}
		if rel.lock >= 0 {
			// The helper holds the slot's lock while it owns the slot (slotown_linux.go).
			lock = 3 + len(fds)
			fds = append(fds, rel.lock)
		}
	}
	cmd := &exec.Cmd{
		Path: "/proc/self/exe",
		Args: []string{"sysprof-linger", HelperArg, strconv.Itoa(len(links)), strconv.Itoa(len(perf)), strconv.Itoa(slot),
			strconv.FormatInt(lingerFor.Milliseconds(), 10), warm, strconv.Itoa(lock)},
	}
	h, nums, err := kernrun.StartHolder(cmd, fds)
	if err != nil {
		return false // the caller still owns links and perf
	}
	if slot >= 0 {
		// The helper owns the slot now (collectDead frees it once the helper is gone), and
		// a run starting while it lingers may take the slot over (published under the lock).
		var unlock func()
		if warm != "-" {
			unlock, err = lockWarm(true)
		}
		_ = rel.owners.Update(uint32(slot), ownerValue(h.Pid, lock >= 0), ebpf.UpdateExist)
		if unlock != nil {
			w := WarmSlot{Holder: h, Slot: uint32(slot), Names: rel.names, PidNS: pidNS(),
				Links: nums[:len(links)], Perfs: nums[len(links) : len(links)+len(perf)]}
			if lock >= 0 {
				w.Lock = nums[len(nums)-1]
			}
			publishWarm(warm, w)
			unlock()
		}
	}
	for _, fd := range slices.Concat(links, perf) {
		unix.Close(fd) // the helper holds them
	}
	return true
}

// Helper is the helper's main (see handOff): from fd 3, nlinks links (closed at once and
// concurrently: each waits for a grace period), nperf perf events (kept open for the given
// milliseconds, by `sleep` when there is one, and closed at exit), and when slot >= 0 the
// slot_owner map, whose entry for slot is deleted once the links are closed. With a warm file
// (not "-") the slot is published there: the helper keeps the links too, for a run that takes
// the slot over (lingerWarm). The last argument is the fd that holds the slot's lock (-1:
// none), closed once the slot is released.
func Helper(args []string) int {
	if len(args) != 6 {
		return 2
	}
	warm := args[4]
	lock, err := strconv.Atoi(args[5])
	if err != nil || lock < -1 {
		return 2
	}
	var n [4]int
	for i, a := range args[:4] {
		v, err := strconv.Atoi(a)
		if err != nil || v < -1 || v > 1<<20 {
			return 2
		}
		n[i] = v
	}
	nlinks, nperf, slot, ms := n[0], n[1], n[2], n[3]
	var links, perf []int
	for fd := 3; fd < 3+nlinks; fd++ {
		links = append(links, fd)
	}
	for fd := 3 + nlinks; fd < 3+nlinks+nperf; fd++ {
		perf = append(perf, fd)
	}
	if warm != "-" && slot >= 0 && filepath.IsAbs(warm) {
		warmDir = filepath.Dir(warm) // the parent's (tests have their own)
		owners, err := ebpf.NewMapFromFD(3 + nlinks + nperf)
		if err == nil {
			lingerWarm(warm, links, perf, owners, uint32(slot), ms, lock >= 0)
			return 0
		}
	}
	closeConcurrently(links)
	if slot >= 0 {
		if owners, err := ebpf.NewMapFromFD(3 + nlinks + nperf); err == nil {
			var pid uint64
			if owners.Lookup(uint32(slot), &pid) == nil && pid == ownerValue(os.Getpid(), lock >= 0) {
				owners.Delete(uint32(slot))
			}
			owners.Close()
		}
	}
	if lock >= 0 {
		unix.Close(lock) // after the entry is gone: the slot is free
	}
	// The perf events outlive the exec: a small process keeps them for the rest of the time.
	secs := strconv.FormatFloat(float64(ms)/1000, 'f', 3, 64)
	if sleep, err := exec.LookPath("sleep"); err == nil {
		syscall.Exec(sleep, []string{"sleep", secs}, nil)
	}
	time.Sleep(time.Duration(ms) * time.Millisecond)
	return 0
}

// tail reads the variable part of an event.
type tail struct{ b []byte }

func newTail(b []byte) *tail { return &tail{b} }

func (t *tail) take(n int) []byte {
	n = min(n, len(t.b))
	out := t.b[:n]
	t.b = t.b[n:]
	return out
}

// components reads n bytes of NUL-terminated path components, leaf first, as an absolute path
// ("" when n is 0).
func (t *tail) components(n int) string {
	if n == 0 {
		return ""
	}
	parts := strings.Split(strings.TrimRight(string(t.take(n)), "\x00"), "\x00")
	slices.Reverse(parts)
	return "/" + strings.Join(parts, "/")
}

// str reads a NUL-terminated string of n bytes (NUL included).
func (t *tail) str(n int) string {
	return string(bytes.TrimRight(t.take(n), "\x00"))
}

// resolvePath is the path p names relative to base (its dirfd's path, or the cwd's). An
// empty p with a base is the descriptor's own file (AT_EMPTY_PATH: execveat of an fd).
func resolvePath(p, base string) string {
	if p == "" {
		return base
	}
	if filepath.IsAbs(p) || base == "" {
		return filepath.Clean(p)
	}
	return filepath.Join(base, p)
}

var errnoNames = map[int32]string{-int32(unix.EACCES): "EACCES", -int32(unix.EROFS): "EROFS", -int32(unix.EXDEV): "EXDEV",
	-int32(unix.ENOENT): "ENOENT", -int32(unix.EPERM): "EPERM", -int32(unix.EBUSY): "EBUSY"}

// fileDenials turns a file event into the denials it stands for (a rename is two: the old
// name's directory loses an entry, the new one gains one), without their parent chain: parents
// gives it (see who).
func (g *Guard) fileDenials(ev *bpf.GuardGuardEvent, exe, pexe string, t *tail) (ds []report.Denial, parents func() []string) {
	switch bpf.GuardFileOp(ev.Fop) {
	case bpf.GuardFileOpFOP_CONNECT:
		return g.connectDenials(ev, exe, pexe, t)
	case bpf.GuardFileOpFOP_CLONE3:
		return g.clone3Denials(ev, exe, pexe)
	}
	p1 := t.str(int(ev.PathLen))
	b1 := t.components(int(ev.BaseLen))
	p2 := t.str(int(ev.Path2Len))
	b2 := t.components(int(ev.Base2Len))
	path1, path2 := resolvePath(p1, b1), resolvePath(p2, b2)
	name := bpf.NativeArch.SyscallNumbers[int(ev.Nr)]
	var hits []hit
	switch bpf.GuardFileOp(ev.Fop) {
	case bpf.GuardFileOpFOP_OPEN, bpf.GuardFileOpFOP_OPENAT, bpf.GuardFileOpFOP_OPENAT2, bpf.GuardFileOpFOP_CREAT:
		hits = append(hits, hit{path1, openAccess(ev.Flags, path1)})
	case bpf.GuardFileOpFOP_EXECVE, bpf.GuardFileOpFOP_EXECVEAT:
		if p1 == "" {
			path1 = b1 // AT_EMPTY_PATH: the descriptor's file (fexecve of a memfd)
		}
		hits = append(hits, hit{path1, "exec"})
	case bpf.GuardFileOpFOP_PATH, bpf.GuardFileOpFOP_PATHAT:
		acc := "write"
		switch name {
		case "mkdir", "mkdirat", "mknod", "mknodat":
			acc = "create"
		case "unlink", "unlinkat", "rmdir":
			acc = "delete"
		}
		hits = append(hits, hit{path1, acc})
	case bpf.GuardFileOpFOP_TWO, bpf.GuardFileOpFOP_TWOAT:
		if strings.HasPrefix(name, "rename") {
			hits = append(hits, hit{path1, "delete"})
		} else if (ev.Ret == -int32(unix.EXDEV) || ev.Ret == -int32(unix.ENOENT)) && paths.CoveredBy(path1, g.cfg.Hidden) {
			// A hard link of a hidden secret (its cover is a mount of its own: EXDEV; in a
			// hidden directory: ENOENT) is an attempt to read it.
			hits = append(hits, hit{path1, "read"})
		}
		hits = append(hits, hit{path2, "create"})
	case bpf.GuardFileOpFOP_SYMLINK, bpf.GuardFileOpFOP_SYMLINKAT:
		hits = append(hits, hit{path2, "create"})
	case bpf.GuardFileOpFOP_MMAP:
		// An executable mapping of a file on a noexec mount (ld.so ./evil, LD_PRELOAD): the
		// file is named by its descriptor's path.
		hits = append(hits, hit{b1, "exec"})
	}
	errName := errnoNames[ev.Ret]
	if errName == "" {
		errName = fmt.Sprintf("errno %d", -ev.Ret)
	}
	if ev.Ret == -int32(unix.EXDEV) && g.crossMount(hits) {
		return nil, nil
	}
	if (name == "link" || name == "linkat") && g.linkProbe(ev.Ret, path1, path2) {
		return nil, nil
	}
	// An EBUSY, or an EXDEV at a cover, names the cover it met: the rename's other end is fine.
	coversOnly := ev.Ret == -int32(unix.EBUSY) ||
		ev.Ret == -int32(unix.EXDEV) && slices.ContainsFunc(hits, func(h hit) bool { return h.path != "" && g.coverBusy(h.path) })
	who, parents := g.who(ev, exe, pexe)
	var out []report.Denial
	for _, h := range hits {
		if h.path == "" {
			continue
		}
		if ev.Ret == -int32(unix.ENOENT) {
			if !paths.CoveredBy(h.path, g.cfg.Hidden) {
				continue // not there, not hidden: the tool looking around
			}
		} else if coversOnly {
			if !g.coverBusy(h.path) {
				continue // the other end of the rename, or a mount point of the sandbox's own
			}
			if ev.Ret == -int32(unix.EBUSY) && (name == "rmdir" || name == "unlinkat") && nonEmptyDir(h.path) {
				continue // ENOTEMPTY without the cover: git stash's rmdir of .git's parents
			}
		} else if ev.Ret == -int32(unix.EACCES) && g.landlockAllows(h.access, h.path) && !g.coveredSecret(h.path) {
			// Landlock allows it: file permissions refused it, not the sandbox. A hidden or
			// masked file's cover refuses by its own mode (a write to a masked .git/config in a
			// staged work tree): that is the sandbox's.
			continue
		} else if h.access != "read" && h.access != "list" && h.access != "exec" && paths.BytecodeCache(h.path) {
			continue // python goes on without its bytecode cache where it cannot write it
		}
		d := report.Denial{Kind: report.KindFile, Path: h.path, Access: h.access, Syscall: name,
			First: time.Now().UTC(), Count: 1, Exe: who}
		d.What = fmt.Sprintf("%s %s (%s: %s)", h.path, h.access, name, errName)
		if ev.PathTrunc != 0 {
			d.What += " (path truncated)"
		}
		section := map[string]string{"read": "read", "list": "list", "exec": "exec"}[h.access]
		if section == "" {
			section = "write"
		}
		portable := g.portable(h.path)
		d.Suggest = fmt.Sprintf("filesystem.%s: + %s", section, portable)
		if h.access == "exec" && (fdPath(h.path) || strings.HasPrefix(h.path, "/memfd:")) {
			// A file run by descriptor or mapped: a memfd the supervisor made non-executable
			// (no exec rule can name it); what lets it run is the learned memfd_create rule.
			d.Suggest = "syscalls.args: memfd_create arg 1: + 0x10"
		}
		if g.cfg.FileRisk != nil {
			d.Risk = g.cfg.FileRisk(h.access, portable)
		}
		out = append(out, d)
	}
	return out, parents
}

// coveredSecret reports a path the sandbox hides or shows masked (a .git/config without its
// token): its cover is the sandbox's, whatever error it answers.
func (g *Guard) coveredSecret(path string) bool {
	return paths.CoveredBy(path, g.cfg.Hidden) || slices.Contains(g.cfg.Masked, path)
}

// coverBusy reports whether an EBUSY rename or removal (or an EXDEV one) met path as one of the
// sandbox's covers:
// a protected path bound read-only inside a writable tree (git's config.lock renamed over
// .git/config), or a hidden path's cover. Other mount points (the private /tmp, an output
// directory bound over itself) are the run's own layout, not a refusal to record.
func (g *Guard) coverBusy(path string) bool {
	return paths.CoveredBy(path, g.cfg.Hidden) || paths.CoveredBy(path, g.cfg.Covers) || slices.Contains(g.cfg.BoundProtected, path)
}

// nonEmptyDir reports a directory that has an entry: removing it fails whatever covers it.
func nonEmptyDir(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	names, _ := f.Readdirnames(1)
	return len(names) > 0
}

// fdPath reports a path that names an open descriptor (/proc/<pid>/fd/N, /dev/fd/N).
func fdPath(p string) bool {
	if strings.HasPrefix(p, "/dev/fd/") {
		return true
	}
	rest, ok := strings.CutPrefix(p, "/proc/")
	if !ok {
		return false
	}
	_, fd, ok := strings.Cut(rest, "/fd/")
	return ok && fd != "" && !strings.Contains(fd, "/")
}

// connectDenials turns a failed connect into its denial: a host unix socket the sandbox covers
// (its cover refuses the connection, or a covered directory has no such entry), a TCP port
// Landlock refused (no network rule names it: DNS over TCP, a port scan), or an address the
// sandbox's empty network namespace has no route to. Other failed unix connects are the tool
// looking for a daemon that is not there: nothing.
func (g *Guard) connectDenials(ev *bpf.GuardGuardEvent, exe, pexe string, t *tail) ([]report.Denial, func() []string) {
	raw := t.take(int(ev.PathLen))
	errName := unix.ErrnoName(syscall.Errno(-ev.Ret))
	d := report.Denial{Kind: report.KindNetwork, Syscall: "connect", First: time.Now().UTC(), Count: 1}
	switch ev.Flags {
	case unix.AF_UNIX:
		p := resolvePath(string(bytes.TrimRight(raw, "\x00")), t.components(int(ev.BaseLen)))
		if p == "" || !g.coveredSocket(p) {
			return nil, nil
		}
		d.Endpoint = "unix:" + p
		d.What = fmt.Sprintf("connect unix:%s (%s: a host socket the sandbox covers)", p, errName)
		d.Suggest = "network.connect: + unix:" + g.portable(p)
	case unix.AF_INET, unix.AF_INET6:
		ap, ok := sockaddrAddrPort(raw)
		if !ok || ap.Port() == 0 {
			// Port 0 reaches nothing: glibc's getaddrinfo connects a UDP socket to each address
			// of a name (port 0, nothing sent) to sort them (RFC 6724), a lookup, not egress.
			return nil, nil
		}
		if ev.Ret == -int32(unix.ENETUNREACH) && g.cfg.Landlock != nil && g.cfg.Landlock.RestrictTCP && ap.Port() != 53 {
			// Landlock refuses a TCP connect before routing (EACCES): this is a datagram
			// socket's, which sends nothing (getaddrinfo's probe, port included); a datagram
			// sent goes unrecorded either way (the report says so).
			return nil, nil
		}
		d.Endpoint = ap.String()
		if ev.Ret == -int32(unix.ENETUNREACH) {
			d.What = fmt.Sprintf("connect %s (ENETUNREACH: the profile has no network)", d.Endpoint)
		} else {
			d.Proto = "tcp"
			d.What = fmt.Sprintf("connect %s tcp (EACCES: no network rule names port %d)", d.Endpoint, ap.Port())
		}
		if ap.Port() == 53 {
			d.What += ": DNS past sysprof's stub"
		}
		d.Suggest = fmt.Sprintf("network.connect: + %s tcp", d.Endpoint)
	default:
		return nil, nil
	}
	if ev.PathTrunc != 0 {
		d.What += " (path truncated)"
	}
	d.Risk, _ = policy.EndpointRisk(policy.SectionConnect, policy.Endpoint{Endpoint: strings.TrimPrefix(d.Suggest, "network.connect: + "), Proto: d.Proto}, true)
	if d.Risk == policy.RiskNone {
		d.Risk = report.RiskHigh
	}
	var parents func() []string
	d.Exe, parents = g.who(ev, exe, pexe)
	return []report.Denial{d}, parents
}

// clone3Denials turns a clone3 the filter answered ENOSYS while it asked for namespaces (guard.c
// reads its flags at exit, where seccomp could not) into a denial. The suggestion is clone's
// rule: libc falls back to clone(2), whose namespace flags the filter checks.
func (g *Guard) clone3Denials(ev *bpf.GuardGuardEvent, exe, pexe string) ([]report.Denial, func() []string) {
	ns := ev.Flags & seccomp.NamespaceFlags
	if ns == 0 {
		return nil, nil
	}
	gr := policy.ArgGrant("clone", 0, ns)
	d := report.Denial{Kind: report.KindSyscall, Syscall: "clone3", Arch: bpf.NativeArch.Name, First: time.Now().UTC(), Count: 1,
		What: "clone3(" + policy.FormatArg("clone", 0, ns) + ") (ENOSYS: new namespaces)", Change: &gr, Suggest: gr.String()}
	d.Risk, _ = policy.GrantRisk(nil, gr)
	var parents func() []string
	d.Exe, parents = g.who(ev, exe, pexe)
	return []report.Denial{d}, parents
}

// coveredSocket reports whether p is a host unix socket the sandbox covers (or lies in a
// directory covered for its sockets), or a hidden path.
func (g *Guard) coveredSocket(p string) bool {
	if paths.CoveredBy(p, g.cfg.Hidden) {
		return true
	}
	return slices.ContainsFunc(g.cfg.Sockets, func(s string) bool {
		return paths.CoveredBy(p, []string{strings.TrimSuffix(s, "/")})
	})
}

// sockaddrAddrPort decodes a sockaddr_in or sockaddr_in6.
func sockaddrAddrPort(b []byte) (netip.AddrPort, bool) {
	if len(b) < 8 {
		return netip.AddrPort{}, false
	}
	port := binary.BigEndian.Uint16(b[2:4])
	switch binary.NativeEndian.Uint16(b) {
	case unix.AF_INET:
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), port), true
	case unix.AF_INET6:
		if len(b) < 24 {
			return netip.AddrPort{}, false
		}
		return netip.AddrPortFrom(netip.AddrFrom16([16]byte(b[8:24])).Unmap(), port), true
	}
	return netip.AddrPort{}, false
}

// hit is one path a refused call touched, with the access it needed.
type hit struct{ path, access string }

// openAccess names what an open with flags asked for.
func openAccess(flags uint64, path string) string {
	switch {
	case flags&unix.O_CREAT != 0:
		if _, err := os.Lstat(path); err != nil {
			return "create"
		}
		return "write"
	case flags&unix.O_ACCMODE != unix.O_RDONLY || flags&unix.O_TRUNC != 0:
		return "write"
	case flags&unix.O_DIRECTORY != 0:
		return "list"
	}
	return "read"
}

// landlockAllows reports whether the plan's Landlock rules grant access to path (then an
// EACCES came from somewhere else, such as file permissions).
func (g *Guard) landlockAllows(access, path string) bool {
	ll := g.cfg.Landlock
	if ll == nil {
		return false
	}
	// A Landlock rule covers everything beneath its path, "/" included (paths.Within; not
	// CoveredBy, whose "/" is the root directory only).
	in := func(rules []string) bool {
		return slices.ContainsFunc(rules, func(r string) bool { return r != "" && paths.Within(path, r) })
	}
	switch access {
	case "read":
		return in(ll.Read) || in(ll.Write) || in(ll.Devices)
	case "list":
		return in(ll.Read) || in(ll.Write) || in(ll.List)
	case "exec":
		return in(ll.Exec)
	}
	return in(ll.Write) || in(ll.Devices)
}

// crossMount reports whether an EXDEV link or rename had both ends writable under Landlock:
// then Landlock's refer check passed, and the error is the ordinary cross-mount one (the private
// /tmp and a bound work tree are different mounts), which tools handle by copying. An end at
// a protected or hidden path is not ordinary: its read-only bind is what refused (a file
// renamed into .git/hooks of a bound work tree).
func (g *Guard) crossMount(hits []hit) bool {
	for _, h := range hits {
		if h.path == "" || !g.landlockAllows("write", h.path) || g.coverBusy(h.path) {
			return false
		}
	}
	return len(hits) > 0
}

// linkProbe reports whether a failed hard link was a tool probing where it can hard-link: a
// file it may write, linked to a random per-run name (paths.GlobComponent) in a directory the
// sandbox keeps read-only. The link creates nothing and the tool goes on without it; it is
// sent there by the sandbox itself: the writable mounts are separate (EXDEV between them), so
// pnpm, placing its store, walks the project's file system from / (_tmp_<pid>_<hex>).
// Granting a write there is what must not be suggested.
func (g *Guard) linkProbe(ret int32, from, to string) bool {
	if ret != -int32(unix.EROFS) && ret != -int32(unix.EACCES) {
		return false
	}
	if from == "" || to == "" || !g.landlockAllows("write", from) {
		return false
	}
	base := filepath.Base(to)
	return paths.GlobComponent(base) != base
}

// portable writes path the way a profile would: with variables and per-run names as globs.
func (g *Guard) portable(path string) string { return paths.Portable(path, g.cfg.Vars) }
