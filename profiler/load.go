package profiler

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"github.com/elastic/go-seccomp-bpf/arch"

	"github.com/sysprof/sysprof/bpf"
	"github.com/sysprof/sysprof/internal/kernrun"
)

// scOps maps x86_64 syscall names to what the kernel program does with them. The numbers come
// from the go-seccomp-bpf table at load time, so learn.c holds no syscall numbers.
var scOps = map[string]bpf.LearnScOp{
	"socket":      bpf.LearnScOpSCOP_SOCKET,
	"clone":       bpf.LearnScOpSCOP_CLONE,
	"clone3":      bpf.LearnScOpSCOP_CLONE3,
	"unshare":     bpf.LearnScOpSCOP_UNSHARE,
	"setns":       bpf.LearnScOpSCOP_SETNS,
	"prctl":       bpf.LearnScOpSCOP_PRCTL,
	"personality": bpf.LearnScOpSCOP_PERSONALITY,
	"ioctl":       bpf.LearnScOpSCOP_IOCTL,
	"mmap":        bpf.LearnScOpSCOP_MMAP,
	"mprotect":    bpf.LearnScOpSCOP_MPROTECT,

	"open":       bpf.LearnScOpSCOP_OPEN,
	"openat":     bpf.LearnScOpSCOP_OPENAT,
	"openat2":    bpf.LearnScOpSCOP_OPENAT2,
	"creat":      bpf.LearnScOpSCOP_CREAT,
	"stat":       bpf.LearnScOpSCOP_STAT,
	"lstat":      bpf.LearnScOpSCOP_STAT,
	"access":     bpf.LearnScOpSCOP_STAT,
	"readlink":   bpf.LearnScOpSCOP_STAT,
	"newfstatat": bpf.LearnScOpSCOP_STATAT,
	"statx":      bpf.LearnScOpSCOP_STATAT,
	"faccessat":  bpf.LearnScOpSCOP_STATAT,
	"faccessat2": bpf.LearnScOpSCOP_STATAT,
	"readlinkat": bpf.LearnScOpSCOP_STATAT,
	"execve":     bpf.LearnScOpSCOP_EXECVE,
	"execveat":   bpf.LearnScOpSCOP_EXECVEAT,
	"unlink":     bpf.LearnScOpSCOP_UNLINK,
	"rmdir":      bpf.LearnScOpSCOP_UNLINK,
	"unlinkat":   bpf.LearnScOpSCOP_UNLINKAT,
	"rename":     bpf.LearnScOpSCOP_RENAME,
	"renameat":   bpf.LearnScOpSCOP_RENAMEAT,
	"renameat2":  bpf.LearnScOpSCOP_RENAMEAT,
	"link":       bpf.LearnScOpSCOP_LINK,
	"linkat":     bpf.LearnScOpSCOP_LINKAT,
	"symlink":    bpf.LearnScOpSCOP_SYMLINK,
	"symlinkat":  bpf.LearnScOpSCOP_SYMLINKAT,
	"mkdir":      bpf.LearnScOpSCOP_MKDIR,
	"mknod":      bpf.LearnScOpSCOP_MKDIR,
	"mkdirat":    bpf.LearnScOpSCOP_MKDIRAT,
	"mknodat":    bpf.LearnScOpSCOP_MKDIRAT,
	"chmod":      bpf.LearnScOpSCOP_CHANGE,
	"chown":      bpf.LearnScOpSCOP_CHANGE,
	"lchown":     bpf.LearnScOpSCOP_CHANGE,
	"truncate":   bpf.LearnScOpSCOP_CHANGE,
	"fchmodat":   bpf.LearnScOpSCOP_CHANGEAT,
	"fchmodat2":  bpf.LearnScOpSCOP_CHANGEAT,
	"fchownat":   bpf.LearnScOpSCOP_CHANGEAT,
	"utimensat":  bpf.LearnScOpSCOP_CHANGEAT,
	"connect":    bpf.LearnScOpSCOP_CONNECT,
	"bind":       bpf.LearnScOpSCOP_BIND,
	"sendto":     bpf.LearnScOpSCOP_SENDTO,
	"sendmsg":    bpf.LearnScOpSCOP_SENDMSG,
}

// exitTracepoint is the syscalls/sys_exit_<name> tracepoint of a syscall, where it differs
// from the name in the x86_64 table.
var exitTracepoint = map[string]string{
	"stat":  "newstat",
	"lstat": "newlstat",
}

// probe is the loaded and attached kernel side of one run.
type probe struct {
	objs    bpf.LearnObjects
	links   []link.Link
	perfFDs []int // tracepoint perf events with the program attached (syscalls/sys_exit_*)
}

// loadProbe loads learn.c for the cgroup with id cgid and attaches it: tracepoints host-wide
// (the programs filter on the cgroup and the tasks map), cgroup hooks on cgroupDir.
func loadProbe(cgid uint64, cgroupDir string, ringBytes int, debug bool, ph *phases) (p *probe, err error) {
	// Parsing the kernel's BTF (17-34 ms here) is the biggest part of loading; the maps do not
	// need it: parse it in the background while the object is parsed and the maps are created.
	cache := btf.NewCache()
	go cache.Kernel() // an error is seen again, and returned, when the programs are loaded
	spec, err := bpf.LoadLearn()
	if err != nil {
		return nil, &LoadError{Step: "parse BPF object", Err: err}
	}
	if err := spec.Variables["target_cgid"].Set(cgid); err != nil {
		return nil, &LoadError{Step: "set target cgroup", Err: err}
	}
	spec.Maps["events"].MaxEntries = uint32(ringBytes)
	ph.mark("parse spec")

	opts := &ebpf.CollectionOptions{Cache: cache, MapReplacements: map[string]*ebpf.Map{}}
	if debug {
		opts.Programs.LogLevel = ebpf.LogLevelInstruction
	}
	for name, ms := range spec.Maps {
		if strings.HasPrefix(name, ".") {
			continue // .rodata, .bss: made (and frozen) with the programs
		}
		m, err := ebpf.NewMap(ms)
		if err != nil {
			for _, m := range opts.MapReplacements {
				m.Close()
			}
			return nil, &LoadError{Step: "create map " + name, Err: err}
		}
		opts.MapReplacements[name] = m
	}
	ph.mark("create maps")
	p = &probe{}
	err = spec.LoadAndAssign(&p.objs, opts)
	for _, m := range opts.MapReplacements {
		m.Close() // p.objs holds its own copies
	}
	if err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) && debug {
			return nil, &LoadError{Step: "load BPF programs", Err: fmt.Errorf("%+v", ve)}
		}
		return nil, &LoadError{Step: "load BPF programs", Err: err}
	}
	defer func() {
		if err != nil {
			p.close()
		}
	}()
	ph.mark("load programs")

	for name, op := range scOps {
		nr, ok := arch.X86_64.SyscallNames[name]
		if !ok {
			return nil, &LoadError{Step: "syscall table", Err: fmt.Errorf("BUG: no x86_64 number for %s", name)}
		}
		if err := p.objs.ScOps.Put(uint32(nr), uint32(op)); err != nil {
			return nil, &LoadError{Step: "fill sc_ops", Err: err}
		}
	}

	if err := ensureTracefs(); err != nil {
		return nil, &LoadError{Step: "mount tracefs", Err: err}
	}
	ph.mark("fill sc_ops")
	for _, prog := range []*ebpf.Program{p.objs.SchedExec, p.objs.SchedFork, p.objs.SchedExit} {
		l, err := link.AttachTracing(link.TracingOptions{Program: prog})
		if err != nil {
			return nil, &LoadError{Step: "attach " + prog.String(), Err: err}
		}
		p.links = append(p.links, l)
	}
	names := make([]string, 0, len(scOps))
	for name, op := range scOps {
		if op >= bpf.LearnScOpSCOP_PATH_FIRST {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		tpName := name
		if n, ok := exitTracepoint[name]; ok {
			tpName = n
		}
		fd, err := attachTracepoint("syscalls", "sys_exit_"+tpName, p.objs.SysExitPath)
		if err != nil {
			return nil, &LoadError{Step: "attach syscalls/sys_exit_" + tpName, Err: err}
		}
		p.perfFDs = append(p.perfFDs, fd)
	}
	ph.mark("attach sched + sys_exit tracepoints")
	// sys_enter last: by then everything it feeds is in place.
	l, err := link.AttachTracing(link.TracingOptions{Program: p.objs.SysEnter})
	if err != nil {
		return nil, &LoadError{Step: "attach tp_btf/sys_enter", Err: err}
	}
	p.links = append(p.links, l)

	cg := []struct {
		prog   *ebpf.Program
		attach ebpf.AttachType
	}{
		{p.objs.Connect4, ebpf.AttachCGroupInet4Connect},
		{p.objs.Connect6, ebpf.AttachCGroupInet6Connect},
		{p.objs.Sendmsg4, ebpf.AttachCGroupUDP4Sendmsg},
		{p.objs.Sendmsg6, ebpf.AttachCGroupUDP6Sendmsg},
		{p.objs.Bind4, ebpf.AttachCGroupInet4Bind},
		{p.objs.Bind6, ebpf.AttachCGroupInet6Bind},
		{p.objs.DnsEgress, ebpf.AttachCGroupInetEgress},
		{p.objs.DnsIngress, ebpf.AttachCGroupInetIngress},
	}
	for _, c := range cg {
		l, err := link.AttachCgroup(link.CgroupOptions{Path: cgroupDir, Attach: c.attach, Program: c.prog})
		if err != nil {
			return nil, &LoadError{Step: "attach " + c.attach.String() + " to the run cgroup", Err: err}
		}
		p.links = append(p.links, l)
	}
	return p, nil
}

func (p *probe) close() {
	p.detach()
	p.objs.Close()
}

// detach ends the recording: it closes every link and perf event. Maps stay readable.
// The perf events of the syscall exit tracepoints are slow to close (an RCU grace period
// each): kernrun.ClosePerfEvents hands them to a short-lived process. The programs stay
// attached to those tracepoints for a few more seconds, doing nothing: they only act on
// threads with a stashed syscall of the (finished) run.
func (p *probe) detach() {
	for _, l := range p.links {
		l.Close() // raw tracepoints and cgroup links detach in microseconds
	}
	p.links = nil
	fds := p.perfFDs
	p.perfFDs = nil
	kernrun.ClosePerfEvents(fds)
}

func attachTracepoint(group, name string, prog *ebpf.Program) (int, error) {
	return kernrun.AttachTracepoint(group, name, prog)
}

// counters sums the per-CPU counters of learn.c.
func (p *probe) counters() ([]uint64, error) {
	out := make([]uint64, bpf.LearnCounterCNT_MAX)
	for i := range out {
		var perCPU []uint64
		if err := p.objs.Counters.Lookup(uint32(i), &perCPU); err != nil {
			return nil, fmt.Errorf("read counter %d: %w", i, err)
		}
		for _, v := range perCPU {
			out[i] += v
		}
	}
	return out, nil
}

// ensureTracefs finds or mounts tracefs (see kernrun.EnsureTracefs).
func ensureTracefs() error { return kernrun.EnsureTracefs() }
