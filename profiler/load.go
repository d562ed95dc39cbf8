package profiler

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/bpf"
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
	objs  bpf.LearnObjects
	links []link.Link
}

// loadProbe loads learn.c for the cgroup with id cgid and attaches it: tracepoints host-wide
// (the programs filter on the cgroup and the tasks map), cgroup hooks on cgroupDir.
func loadProbe(cgid uint64, cgroupDir string, ringBytes int, debug bool) (p *probe, err error) {
	spec, err := bpf.LoadLearn()
	if err != nil {
		return nil, &LoadError{Step: "parse BPF object", Err: err}
	}
	if err := spec.Variables["target_cgid"].Set(cgid); err != nil {
		return nil, &LoadError{Step: "set target cgroup", Err: err}
	}
	spec.Maps["events"].MaxEntries = uint32(ringBytes)

	opts := &ebpf.CollectionOptions{}
	if debug {
		opts.Programs.LogLevel = ebpf.LogLevelInstruction
	}
	p = &probe{}
	if err := spec.LoadAndAssign(&p.objs, opts); err != nil {
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
	tp := func(group, name string, prog *ebpf.Program) error {
		l, err := link.Tracepoint(group, name, prog, nil)
		if err != nil {
			return &LoadError{Step: "attach " + group + "/" + name, Err: err}
		}
		p.links = append(p.links, l)
		return nil
	}
	if err := tp("sched", "sched_process_exec", p.objs.SchedExec); err != nil {
		return nil, err
	}
	for _, prog := range []*ebpf.Program{p.objs.SchedFork, p.objs.SchedExit} {
		l, err := link.AttachTracing(link.TracingOptions{Program: prog})
		if err != nil {
			return nil, &LoadError{Step: "attach " + prog.String(), Err: err}
		}
		p.links = append(p.links, l)
	}
	for name := range scOps {
		if scOps[name] < bpf.LearnScOpSCOP_PATH_FIRST {
			continue
		}
		tpName := name
		if n, ok := exitTracepoint[name]; ok {
			tpName = n
		}
		if err := tp("syscalls", "sys_exit_"+tpName, p.objs.SysExitPath); err != nil {
			return nil, err
		}
	}
	// sys_enter last: by then everything it feeds is in place.
	if err := tp("raw_syscalls", "sys_enter", p.objs.SysEnter); err != nil {
		return nil, err
	}

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

// detach closes every link but keeps the maps, so the final reads see a stable state. Links
// are closed in parallel: each tracepoint detach waits for an RCU grace period (~65 ms here),
// one after the other that was 2.9 s for the 44 links.
func (p *probe) detach() {
	var wg sync.WaitGroup
	for _, l := range p.links {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.Close()
		}()
	}
	wg.Wait()
	p.links = nil
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

// ensureTracefs mounts tracefs at /sys/kernel/tracing when nothing provides it: the tracepoint
// attach needs the event ids under events/. Some VMs boot without it mounted.
func ensureTracefs() error {
	for _, d := range []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"} {
		if _, err := os.Stat(d + "/events"); err == nil {
			return nil
		}
	}
	err := unix.Mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, "")
	if err != nil && !strings.Contains(err.Error(), "busy") {
		return fmt.Errorf("tracefs is not mounted and mounting it at /sys/kernel/tracing failed: %w", err)
	}
	return nil
}
