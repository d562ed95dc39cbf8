package enforcer

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/sysprof/sysprof/synth"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/bpf"
	"github.com/sysprof/sysprof/internal/kernrun"
	"github.com/sysprof/sysprof/report"
)

// fileOps maps the x86_64 path syscalls to what guard.c reads of their arguments. Numbers come
// from go-seccomp-bpf's table when the guard loads.
var fileOps = map[string]bpf.GuardFileOp{
	"open": bpf.GuardFileOpFOP_OPEN, "openat": bpf.GuardFileOpFOP_OPENAT, "openat2": bpf.GuardFileOpFOP_OPENAT2,
	"creat": bpf.GuardFileOpFOP_CREAT, "execve": bpf.GuardFileOpFOP_EXECVE, "execveat": bpf.GuardFileOpFOP_EXECVEAT,
	"mkdir": bpf.GuardFileOpFOP_PATH, "mknod": bpf.GuardFileOpFOP_PATH, "unlink": bpf.GuardFileOpFOP_PATH,
	"rmdir": bpf.GuardFileOpFOP_PATH, "truncate": bpf.GuardFileOpFOP_PATH, "chmod": bpf.GuardFileOpFOP_PATH,
	"chown": bpf.GuardFileOpFOP_PATH, "lchown": bpf.GuardFileOpFOP_PATH,
	"mkdirat": bpf.GuardFileOpFOP_PATHAT, "mknodat": bpf.GuardFileOpFOP_PATHAT, "unlinkat": bpf.GuardFileOpFOP_PATHAT,
	"fchmodat": bpf.GuardFileOpFOP_PATHAT, "fchmodat2": bpf.GuardFileOpFOP_PATHAT, "fchownat": bpf.GuardFileOpFOP_PATHAT,
	"utimensat": bpf.GuardFileOpFOP_PATHAT,
	"rename":    bpf.GuardFileOpFOP_TWO, "link": bpf.GuardFileOpFOP_TWO,
	"renameat": bpf.GuardFileOpFOP_TWOAT, "renameat2": bpf.GuardFileOpFOP_TWOAT, "linkat": bpf.GuardFileOpFOP_TWOAT,
	"symlink": bpf.GuardFileOpFOP_SYMLINK, "symlinkat": bpf.GuardFileOpFOP_SYMLINKAT,
}

// hiddenPrefixes are the hidden paths guard.c compares ENOENT paths with (at most 16, each at
// most 256 bytes: longer ones are left out, their ENOENTs go unreported).
func hiddenPrefixes(hidden []string) []string {
	var out []string
	for _, h := range hidden {
		if len(h) <= 256 && len(out) < 16 {
			out = append(out, h)
		}
	}
	return out
}

// mayExecute reports whether the run's seccomp filter can let the x86_64 syscall name reach the
// kernel (allowed, possibly under argument checks). One it always refuses is reported by the
// supervisor and never gets as far as Landlock or a read-only mount, so its exit tracepoint has
// nothing to observe. True when unsure (another host ABI, no compiled filter).
func (c *Compiled) mayExecute(name string) bool {
	if c == nil || c.spec == nil || len(c.spec.abis) == 0 {
		return true
	}
	a := c.spec.abis[0]
	if a.info == nil || a.info.Name != arch.X86_64.Name || !a.allowed {
		return true
	}
	nr, ok := arch.X86_64.SyscallNames[name]
	if !ok {
		return true
	}
	return a.rules[uint32(nr)] != nil
}

// attachFiles fills the syscall and hidden-path maps and attaches sys_exit_path to the exit
// tracepoint of each path syscall this kernel has and the command may execute: every one in
// audit mode (the supervisor lets refused calls continue), else those the filter allows. Each
// attached tracepoint costs every process on the host a little on that syscall, and startup
// ~0.2-1 ms of perf_event_open.
func (g *guard) attachFiles(hidden []string, c *Compiled) error {
	for name, op := range fileOps {
		nr, ok := arch.X86_64.SyscallNames[name]
		if !ok {
			return fmt.Errorf("BUG: no x86_64 number for %s", name)
		}
		if err := g.objs.Fops.Put(uint32(nr), uint32(op)); err != nil {
			return fmt.Errorf("fill fops: %w", err)
		}
	}
	for i, h := range hidden {
		var v bpf.GuardHiddenPath
		v.Len = uint32(len(h))
		var buf [256]byte
		copy(buf[:], h)
		for j := range v.W {
			v.W[j] = binary.NativeEndian.Uint64(buf[j*8:])
		}
		if err := g.objs.Hidden.Put(uint32(i), &v); err != nil {
			return fmt.Errorf("fill hidden: %w", err)
		}
	}
	if err := kernrun.EnsureTracefs(); err != nil {
		return err
	}
	// Attached concurrently: each perf_event_open of a tracepoint costs a millisecond or more
	// on this VM, and enforce's startup pays for all of them.
	names := sortedKeys(fileOps)
	fds := make([]int, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		fds[i] = -1
		if !g.audit && !c.mayExecute(name) {
			continue // refused by seccomp: reported by the supervisor
		}
		if !kernrun.TracepointExists("syscalls", "sys_exit_"+name) {
			continue // not on this kernel or arch
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			fd, err := kernrun.AttachTracepoint("syscalls", "sys_exit_"+name, g.objs.SysExitPath)
			if err != nil {
				err = fmt.Errorf("attach syscalls/sys_exit_%s: %w", name, err)
			}
			fds[i], errs[i] = fd, err
		}()
	}
	wg.Wait()
	for i := range names {
		if fds[i] >= 0 && errs[i] == nil {
			g.perfFDs = append(g.perfFDs, fds[i])
		}
	}
	return errors.Join(errs...)
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

func resolvePath(p, base string) string {
	if p == "" {
		return ""
	}
	if filepath.IsAbs(p) || base == "" {
		return filepath.Clean(p)
	}
	return filepath.Join(base, p)
}

var errnoNames = map[int32]string{-int32(unix.EACCES): "EACCES", -int32(unix.EROFS): "EROFS", -int32(unix.EXDEV): "EXDEV",
	-int32(unix.ENOENT): "ENOENT", -int32(unix.EPERM): "EPERM"}

// fileDenials turns a file event into the denials it stands for (a rename is two: the old
// name's directory loses an entry, the new one gains one).
func (g *guard) fileDenials(ev *bpf.GuardGuardEvent, exe, pexe string, t *tail) []report.Denial {
	p1 := t.str(int(ev.PathLen))
	b1 := t.components(int(ev.BaseLen))
	p2 := t.str(int(ev.Path2Len))
	b2 := t.components(int(ev.Base2Len))
	path1, path2 := resolvePath(p1, b1), resolvePath(p2, b2)
	name := arch.X86_64.SyscallNumbers[int(ev.Nr)]
	var hits []hit
	switch bpf.GuardFileOp(ev.Fop) {
	case bpf.GuardFileOpFOP_OPEN, bpf.GuardFileOpFOP_OPENAT, bpf.GuardFileOpFOP_OPENAT2, bpf.GuardFileOpFOP_CREAT:
		hits = append(hits, hit{path1, openAccess(ev.Flags, path1)})
	case bpf.GuardFileOpFOP_EXECVE, bpf.GuardFileOpFOP_EXECVEAT:
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
		}
		hits = append(hits, hit{path2, "create"})
	case bpf.GuardFileOpFOP_SYMLINK, bpf.GuardFileOpFOP_SYMLINKAT:
		hits = append(hits, hit{path2, "create"})
	}
	errName := errnoNames[ev.Ret]
	if errName == "" {
		errName = fmt.Sprintf("errno %d", -ev.Ret)
	}
	if ev.Ret == -int32(unix.EXDEV) && g.crossMount(hits) {
		return nil
	}
	who, parents := g.who(ev, exe, pexe)
	var out []report.Denial
	for _, h := range hits {
		if h.path == "" {
			continue
		}
		if ev.Ret == -int32(unix.ENOENT) {
			if !coveredBy(h.path, g.plan.Hidden) {
				continue // not there, not hidden: the tool looking around
			}
		} else if ev.Ret == -int32(unix.EACCES) && g.landlockAllows(h.access, h.path) {
			continue // Landlock allows it: file permissions refused it, not the sandbox
		}
		d := report.Denial{Kind: report.KindFile, Path: h.path, Access: h.access, Syscall: name,
			First: time.Now().UTC(), Count: 1, Exe: who, Parents: parents, Risk: report.RiskLow}
		d.What = fmt.Sprintf("%s %s (%s: %s)", h.path, h.access, name, errName)
		if ev.PathTrunc != 0 {
			d.What += " (path truncated)"
		}
		section := map[string]string{"read": "read", "list": "list", "exec": "exec"}[h.access]
		if section == "" {
			section = "write"
		}
		d.Suggest = fmt.Sprintf("filesystem.%s: + %s", section, g.portable(h.path))
		if coveredBy(h.path, g.plan.Hidden) {
			d.Risk = report.RiskCritical // a hidden path: a credential store
		} else if section != "read" && section != "list" {
			d.Risk = report.RiskHigh
		}
		out = append(out, d)
	}
	return out
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
func (g *guard) landlockAllows(access, path string) bool {
	ll := g.plan.Landlock
	if ll == nil {
		return false
	}
	switch access {
	case "read":
		return coveredBy(path, ll.Read) || coveredBy(path, ll.Write) || coveredBy(path, ll.Devices)
	case "list":
		return coveredBy(path, ll.Read) || coveredBy(path, ll.Write) || coveredBy(path, ll.List)
	case "exec":
		return coveredBy(path, ll.Exec)
	}
	return coveredBy(path, ll.Write) || coveredBy(path, ll.Devices)
}

// crossMount reports whether an EXDEV link or rename had both ends writable under Landlock:
// then Landlock's refer check passed, and the error is the ordinary cross-mount one (the private
// /tmp and a bound work tree are different mounts), which tools handle by copying.
func (g *guard) crossMount(hits []hit) bool {
	for _, h := range hits {
		if h.path == "" || !g.landlockAllows("write", h.path) {
			return false
		}
	}
	return len(hits) > 0
}

// portable writes path the way a profile would: with variables and per-run names as globs.
func (g *guard) portable(path string) string { return synth.Portable(path, g.env.Vars) }
