package enforcer

import (
	"fmt"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"

	"github.com/sysprof/sysprof/bpf"
	"github.com/sysprof/sysprof/internal/kernrun"
	"github.com/sysprof/sysprof/internal/phase"
	"github.com/sysprof/sysprof/netproxy"
)

// execOrder is bpf/execorder.c attached to a root run's cgroup: by each connect's socket
// cookie, the processes that made it and whether each one's parent's file ran it (the kernel's
// exec ids), which the proxy needs before a transport helper passes for a rule's binary
// (netproxy Options.ExecOrder). An ordinary user's run has no eBPF: no helper passes there as
// the process that connected, and the refusal says so.
type execOrder struct {
	objs  bpf.ExecorderObjects
	links []link.Link
}

// execOrder attaches execorder.c for a run whose per-binary rules or credentials name a tool
// with transport helpers, when the guard gives it a cgroup (root); nil otherwise, or when it
// cannot (said in the report: such helpers are then refused as the process that connected).
func (r *enforcedRun) execOrder(c *Compiled, broker *netproxy.Broker) *execOrder {
	if r.guard == nil || r.guard.Cgroup() == nil || !c.ConnectsSeen || !netproxy.NeedsExecOrder(c.Egress, broker) {
		return nil
	}
	e, err := attachExecOrder(r.guard.Cgroup().Dir)
	if err != nil {
		r.rep.Notes = append(r.rep.Notes, fmt.Sprintf("egress: %v: a transport helper of a rule's binary (git-remote-https of `by: git`) is refused as the process that connects", err))
		return nil
	}
	return e
}

func attachExecOrder(cgroupDir string) (*execOrder, error) {
	e := &execOrder{}
	phase.Mark("egress: execorder start")
	if err := loadExecOrder(&e.objs); err != nil {
		return nil, fmt.Errorf("the order of execs behind connects is not seen (load execorder.c: %w)", err)
	}
	phase.Mark("egress: execorder loaded")
	for _, a := range []struct {
		prog *ebpf.Program
		typ  ebpf.AttachType
	}{{e.objs.Order4, ebpf.AttachCGroupInet4Connect}, {e.objs.Order6, ebpf.AttachCGroupInet6Connect}} {
		l, err := link.AttachCgroup(link.CgroupOptions{Path: cgroupDir, Attach: a.typ, Program: a.prog})
		if err != nil {
			e.close()
			return nil, fmt.Errorf("the order of execs behind connects is not seen (attach execorder.c to %s: %w)", cgroupDir, err)
		}
		e.links = append(e.links, l)
		phase.Mark("egress: execorder attached")
	}
	return e, nil
}

// lookup is netproxy Options.ExecOrder.
func (e *execOrder) lookup(cookie uint64) ([]uint32, []bool, bool) {
	var o bpf.ExecorderExecOrder
	if e.objs.Orders.Lookup(cookie, &o) != nil {
		return nil, nil, false
	}
	n := min(int(o.N), len(o.Tgid))
	ran := make([]bool, n)
	for i := 0; i+1 < n; i++ {
		// Forked while its parent ran its current file, and exec'd at most once since.
		ran[i] = o.ParentExec[i] == o.SelfExec[i+1] && o.SelfExec[i]-o.ParentExec[i] <= 1
	}
	return o.Tgid[:n:n], ran, true
}

func (e *execOrder) close() {
	if e == nil {
		return
	}
	for _, l := range e.links {
		l.Close()
	}
	e.objs.Close()
}

// execorder.c's object, parsed once a process, and its CO-RE fixups on this kernel, stored per
// boot as the guard's are (kernrun.CoreFixups): relocating against the kernel's BTF costs
// ~50 ms of CPU, which only the first run of a boot pays.
var (
	execOrderSpec   = sync.OnceValues(bpf.LoadExecorder)
	execOrderFixups = sync.OnceValues(func() (*kernrun.CoreFixups, error) {
		spec, err := execOrderSpec()
		if err != nil {
			return nil, err
		}
		return kernrun.NewCoreFixups("execorder", spec)
	})
)

func loadExecOrder(objs *bpf.ExecorderObjects) error {
	parsed, err := execOrderSpec()
	if err != nil {
		return err
	}
	spec := parsed.Copy() // the parsed one stays as CoreFixups keys it
	var opts ebpf.CollectionOptions
	if fix, err := execOrderFixups(); err != nil || !fix.Apply(spec) {
		if k, kerr := btf.LoadKernelSpec(); kerr == nil && !fix.Relocate(spec, k) { // a nil fix stores nothing
			opts.Programs.KernelTypes = k
		}
	}
	phase.Mark("egress: execorder relocated")
	return spec.LoadAndAssign(objs, &opts)
}
