package enforcer

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"

	"github.com/sysprof/sysprof/bpf"
	"github.com/sysprof/sysprof/internal/kernrun"
	"github.com/sysprof/sysprof/internal/phase"
	"github.com/sysprof/sysprof/report"
	"github.com/sysprof/sysprof/sandbox"
)

// Host name resolution while the command runs.
var (
	// resolveEvery is how often host names of the profile are resolved again.
	resolveEvery = 30 * time.Second
	// addrGrace is how long an address a name no longer resolves to stays allowed: the
	// command may have looked it up just before it changed.
	addrGrace = 5 * time.Minute
	// resolvConf lists the nameservers DNS traffic may reach when the profile names hosts.
	resolvConf = "/etc/resolv.conf"
	// lookupHost resolves a name (a seam for tests).
	lookupHost = func(ctx context.Context, host string) ([]netip.Addr, error) {
		return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	}
)

// selfExe is this executable, as the kernel names it: the init stage runs it.
var selfExe = func() string {
	p, err := os.Executable()
	if err != nil {
		return ""
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}()

// The guard's object and the kernel's BTF (for its CO-RE relocations) are parsed once per
// process, and can be parsed ahead (Prewarm) while the profile loads and compiles: together
// they are most of the guard's user-space setup (the kernel's BTF alone is ~15 ms here).
var (
	guardSpec = sync.OnceValues(bpf.LoadGuard)
	kernelBTF = sync.OnceValues(btf.LoadKernelSpec)
)

// Prewarm starts parsing what a root run's guard needs in the background, so that Run finds it
// ready. It does nothing for an ordinary user (no guard) and is never required.
func Prewarm() {
	if os.Geteuid() != 0 {
		return
	}
	go func() {
		// The kernel's BTF only when no fixups are stored for this kernel (see relocate).
		if cf, err := guardCore(); err != nil || !cf.stored() {
			kernelBTF()
		}
	}()
}

// guard is the kernel side of enforcing as root: a per-run cgroup the init stage is born
// into, with guard.c's programs attached to it, and the reader of their denial events.
type guard struct {
	cg    *kernrun.Cgroup
	coll  *ebpf.Collection // owns what objs points to
	objs  bpf.GuardObjects
	links []link.Link
	rd    *ringbuf.Reader
	audit bool
	// rootPid is the init stage (then the command): parent chains end there.
	rootPid atomic.Int64

	rules   []NetRule
	plan    sandbox.Plan
	env     Env
	perfFDs []int

	mu       sync.Mutex
	hostOf   map[netip.Addr]string // reverse map of resolved names, for the report
	resolved map[string]map[netip.Addr]time.Time
	denials  []report.Denial
	index    map[string]int
	dropped  int
	notes    []string

	stopResolve chan struct{}
	wg          sync.WaitGroup

	// setupDone is closed when a background setup (startGuard) has finished; setupErr is its
	// result.
	setupDone chan struct{}
	setupErr  error
}

// guardAvailable reports why the root-only guard (cgroup hooks) cannot run here, or nil (a
// seam: tests take the hooks away to see the ordinary user's fallback).
var guardAvailable = func() error {
	if os.Geteuid() != 0 {
		return errors.New("needs root (eBPF programs and cgroups)")
	}
	if _, err := kernrun.Cgroup2Mount(); err != nil {
		return err
	}
	return nil
}

// newGuard creates the run's cgroup and loads guard.c for it: the network hooks with the
// profile's allowlist when net (host names resolved now), the file-denial tracepoints when
// files. The caller starts the init stage with UseCgroupFD = g.cg.FD and calls close when the
// command is gone.
//
// Requires root, cgroup2 and Linux 5.15 (bpf_task_pt_regs, bpf_loop).
func newGuard(ctx context.Context, c *Compiled, env Env, audit, net, files bool) (*guard, error) {
	g, err := newGuardCgroup(c, env, audit)
	if err != nil {
		return nil, err
	}
	if err := g.setup(ctx, c, net, files); err != nil {
		g.cg.Remove()
		return nil, err
	}
	return g, nil
}

// startGuard creates the run's cgroup and sets up the file-denial observation in the
// background: the caller starts the init stage meanwhile (loading and verifying guard.c costs
// more than the init stage's start) and calls wait before releasing it to exec the command.
// Only for a guard without network hooks: those decide the init stage's Landlock rules.
func startGuard(ctx context.Context, c *Compiled, env Env, audit bool) (*guard, error) {
	g, err := newGuardCgroup(c, env, audit)
	if err != nil {
		return nil, err
	}
	g.setupDone = make(chan struct{})
	go func() {
		defer close(g.setupDone)
		g.setupErr = g.setup(ctx, c, false, true)
	}()
	return g, nil
}

// wait waits for a background setup and returns its error (nil at once for newGuard's).
func (g *guard) wait() error {
	if g.setupDone == nil {
		return nil
	}
	<-g.setupDone
	return g.setupErr
}

// newGuardCgroup creates the run's cgroup: the command is born into it.
func newGuardCgroup(c *Compiled, env Env, audit bool) (*guard, error) {
	phase.Mark("guard available")
	g := &guard{audit: audit, rules: c.Network, plan: c.Plan, env: env, hostOf: map[netip.Addr]string{},
		resolved: map[string]map[netip.Addr]time.Time{}, index: map[string]int{}, stopResolve: make(chan struct{})}
	var err error
	if g.cg, err = kernrun.NewCgroup(); err != nil {
		return nil, err
	}
	phase.Mark("guard: cgroup")
	return g, nil
}

// setup loads guard.c for the run's cgroup and attaches what net and files ask for. On an
// error it leaves nothing loaded or attached (the cgroup stays: close or the caller removes it).
func (g *guard) setup(ctx context.Context, c *Compiled, net, files bool) (err error) {
	defer func() {
		if err != nil {
			for _, l := range g.links {
				l.Close()
			}
			g.links = nil
			kernrun.ClosePerfEvents(g.perfFDs)
			g.perfFDs = nil
			if g.rd != nil {
				g.rd.Close()
				g.wg.Wait()
				g.rd = nil
			}
			if g.coll != nil {
				g.coll.Close()
				g.coll = nil
			}
		}
	}()
	shared, err := guardSpec()
	if err != nil {
		return fmt.Errorf("parse guard BPF object: %w", err)
	}
	spec := shared.Copy() // load deletes the programs this run does not attach
	phase.Mark("guard: parse object")
	var auditVal uint32
	if g.audit {
		auditVal = 1
	}
	hidden := hiddenPrefixes(c.Plan.Hidden)
	for name, v := range map[string]any{"audit": auditVal, "target_cgid": g.cg.ID, "hidden_n": uint32(len(hidden))} {
		if err := spec.Variables[name].Set(v); err != nil {
			return fmt.Errorf("set %s: %w", name, err)
		}
	}
	if err := g.load(spec, net, files); err != nil {
		return err
	}
	phase.Mark("guard: load collection")
	if g.rd, err = ringbuf.NewReader(g.objs.Events); err != nil {
		return fmt.Errorf("open guard ring buffer: %w", err)
	}
	g.wg.Add(1)
	go g.read()

	if files {
		if err := g.attachFiles(hidden, c); err != nil {
			return err
		}
		phase.Mark("guard: attach file tracepoints")
	}
	if !net {
		return nil
	}
	// The allowlist first, then the hooks.
	for _, r := range g.rules {
		if r.Host == "" {
			if err := g.put(r, r.Prefix); err != nil {
				return err
			}
		}
	}
	if hasHosts(g.rules) {
		ns := nameservers(resolvConf)
		for _, r := range dnsRules(ns) {
			if err := g.put(r, r.Prefix); err != nil {
				return err
			}
		}
		if len(ns) == 0 {
			g.notes = append(g.notes, "network: the profile names hosts but "+resolvConf+" lists no nameserver: DNS is not allowed")
		} else {
			g.notes = append(g.notes, fmt.Sprintf("network: DNS (udp and tcp port 53) to the nameservers of %s is allowed because the profile names hosts: %v", resolvConf, ns))
		}
		g.resolveAll(ctx)
	}
	for _, h := range []struct {
		prog   *ebpf.Program
		attach ebpf.AttachType
	}{
		{g.objs.GuardConnect4, ebpf.AttachCGroupInet4Connect},
		{g.objs.GuardConnect6, ebpf.AttachCGroupInet6Connect},
		{g.objs.GuardSendmsg4, ebpf.AttachCGroupUDP4Sendmsg},
		{g.objs.GuardSendmsg6, ebpf.AttachCGroupUDP6Sendmsg},
		{g.objs.GuardBind4, ebpf.AttachCGroupInet4Bind},
		{g.objs.GuardBind6, ebpf.AttachCGroupInet6Bind},
	} {
		l, err := link.AttachCgroup(link.CgroupOptions{Path: g.cg.Dir, Attach: h.attach, Program: h.prog})
		if err != nil {
			return fmt.Errorf("attach %s to the run cgroup: %w", h.attach, err)
		}
		g.links = append(g.links, l)
	}
	if hasHosts(g.rules) {
		g.wg.Add(1)
		go g.keepResolving()
	}
	return nil
}

// load creates the maps and only the programs this run attaches, in one collection: a run
// without network rules needs none of the six hooks, one without file observation not the
// tracepoint program.
func (g *guard) load(spec *ebpf.CollectionSpec, net, files bool) error {
	hooks := []string{"guard_connect4", "guard_connect6", "guard_sendmsg4", "guard_sendmsg6", "guard_bind4", "guard_bind6"}
	if !net {
		for _, h := range hooks {
			delete(spec.Programs, h)
		}
	}
	if !files {
		delete(spec.Programs, "sys_exit_path")
	}
	var opts ebpf.CollectionOptions
	// The kernel's own types are the only relocation targets guard.c needs (task, file,
	// dentry, mount): relocated from stored fixups, or against the kernel's BTF parsed once and
	// shared by every run of this process.
	left := relocate(spec)
	phase.Mark("guard: CO-RE relocate")
	if left {
		if k, err := kernelBTF(); err == nil {
			opts.Programs.KernelTypes = k
		}
	}
	coll, err := ebpf.NewCollectionWithOptions(spec, opts)
	if err != nil {
		return fmt.Errorf("load guard BPF programs: %w", err)
	}
	g.coll = coll
	m := &g.objs.GuardMaps
	m.Allow4, m.Allow6, m.Counters, m.Events = coll.Maps["allow4"], coll.Maps["allow6"], coll.Maps["counters"], coll.Maps["events"]
	m.Fops, m.Hidden, m.Scratch = coll.Maps["fops"], coll.Maps["hidden"], coll.Maps["scratch"]
	p := &g.objs.GuardPrograms
	p.GuardConnect4, p.GuardConnect6 = coll.Programs["guard_connect4"], coll.Programs["guard_connect6"]
	p.GuardSendmsg4, p.GuardSendmsg6 = coll.Programs["guard_sendmsg4"], coll.Programs["guard_sendmsg6"]
	p.GuardBind4, p.GuardBind6 = coll.Programs["guard_bind4"], coll.Programs["guard_bind6"]
	p.SysExitPath = coll.Programs["sys_exit_path"]
	return nil
}

// put enters the trie keys of a rule with a resolved prefix.
func (g *guard) put(r NetRule, p netip.Prefix) error {
	for _, k := range hookKeys(r, p) {
		if err := g.update(k, true); err != nil {
			return fmt.Errorf("network allowlist %s: %w", r.Endpoint, err)
		}
	}
	return nil
}

func (g *guard) update(k hookKey, add bool) error {
	one := uint8(1)
	if k.Prefix.Addr().Is4() {
		key := bpf.GuardNetKey4{Prefixlen: 32 + uint32(k.Prefix.Bits()), Op: k.Op, Proto: k.Proto, Port: k.Port, Addr: k.Prefix.Addr().As4()}
		if add {
			return g.objs.Allow4.Update(&key, &one, ebpf.UpdateAny)
		}
		return g.objs.Allow4.Delete(&key)
	}
	key := bpf.GuardNetKey6{Prefixlen: 32 + uint32(k.Prefix.Bits()), Op: k.Op, Proto: k.Proto, Port: k.Port, Addr: k.Prefix.Addr().As16()}
	if add {
		return g.objs.Allow6.Update(&key, &one, ebpf.UpdateAny)
	}
	return g.objs.Allow6.Delete(&key)
}

// resolveAll resolves every host rule: new addresses are allowed at once; addresses a name no
// longer resolves to stay allowed for addrGrace, then go.
func (g *guard) resolveAll(ctx context.Context) {
	hosts := map[string][]NetRule{}
	for _, r := range g.rules {
		if r.Host != "" {
			hosts[r.Host] = append(hosts[r.Host], r)
		}
	}
	now := time.Now()
	for _, host := range sortedKeys(hosts) {
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		addrs, err := lookupHost(lctx, host)
		cancel()
		g.mu.Lock()
		if err != nil && g.resolved[host] == nil {
			g.notes = append(g.notes, fmt.Sprintf("network: %s did not resolve at start (%v): retried every %s", host, err, resolveEvery))
		}
		known := g.resolved[host]
		if known == nil {
			known = map[netip.Addr]time.Time{}
			g.resolved[host] = known
		}
		current := map[netip.Addr]bool{}
		for _, a := range addrs {
			a = a.Unmap()
			current[a] = true
			if _, ok := known[a]; !ok {
				for _, r := range hosts[host] {
					if err := g.put(r, netip.PrefixFrom(a, a.BitLen())); err != nil {
						g.notes = append(g.notes, err.Error())
					}
				}
			}
			known[a] = time.Time{} // current: no expiry
			g.hostOf[a] = host
		}
		if err == nil {
			for a, exp := range known {
				switch {
				case current[a]:
				case exp.IsZero():
					known[a] = now.Add(addrGrace)
				case now.After(exp):
					for _, r := range hosts[host] {
						for _, k := range hookKeys(r, netip.PrefixFrom(a, a.BitLen())) {
							g.update(k, false)
						}
					}
					delete(known, a)
				}
			}
		}
		g.mu.Unlock()
	}
}

func (g *guard) keepResolving() {
	defer g.wg.Done()
	t := time.NewTicker(resolveEvery)
	defer t.Stop()
	for {
		select {
		case <-g.stopResolve:
			return
		case <-t.C:
			g.resolveAll(context.Background())
		}
	}
}

// read turns ring buffer events into denials until the reader is closed.
func (g *guard) read() {
	defer g.wg.Done()
	var rec ringbuf.Record
	for {
		if err := g.rd.ReadInto(&rec); err != nil {
			if errors.Is(err, ringbuf.ErrFlushed) || errors.Is(err, ringbuf.ErrClosed) || errors.Is(err, os.ErrClosed) {
				return // drained at close
			}
			continue
		}
		if len(rec.RawSample) < 4 {
			continue
		}
		var ev bpf.GuardGuardEvent
		hdr := binary.Size(ev)
		if len(rec.RawSample) < hdr {
			continue
		}
		if err := binary.Read(bytes.NewReader(rec.RawSample[:hdr]), binary.NativeEndian, &ev); err != nil {
			continue
		}
		tail := newTail(rec.RawSample[hdr:])
		exe := tail.components(int(ev.ExeLen))
		pexe := tail.components(int(ev.PexeLen))
		if root := int(g.rootPid.Load()); exe != "" && exe == selfExe && (root == 0 || int(ev.Tgid) == root) {
			continue // the init stage (sysprof itself) before it execs the command
		}
		switch ev.Kind {
		case uint32(bpf.GuardGuardKindGK_NET):
			g.record(g.netDenial(&ev, exe, pexe))
		case uint32(bpf.GuardGuardKindGK_FILE):
			for _, d := range g.fileDenials(&ev, exe, pexe, tail) {
				g.record(d)
			}
		}
	}
}

var opNames = map[uint8][2]string{nopConnect: {"connect", "connect"}, nopSend: {"sendto", "send"}, nopBind: {"bind", "bind"}}
var protoNames = map[uint8]string{npTCP: "tcp", npUDP: "udp", npMPTCP: "mptcp"}

func (g *guard) netDenial(ev *bpf.GuardGuardEvent, exe, pexe string) report.Denial {
	var addr netip.Addr
	if ev.Family == 10 {
		addr = netip.AddrFrom16(ev.Addr).Unmap()
	} else {
		addr = netip.AddrFrom4([4]byte(ev.Addr[:4]))
	}
	ep := netip.AddrPortFrom(addr, ev.Port).String()
	proto := protoNames[ev.Proto]
	if proto == "" {
		proto = "ipproto-" + strconv.Itoa(int(ev.Protocol))
	}
	op := opNames[ev.Op]
	g.mu.Lock()
	host := g.hostOf[addr]
	g.mu.Unlock()
	d := report.Denial{Kind: report.KindNetwork, Syscall: op[0], Endpoint: ep, Proto: proto, Host: host,
		First: time.Now().UTC(), Count: 1, Allowed: ev.Allowed != 0}
	d.What = fmt.Sprintf("%s %s %s", op[1], ep, proto)
	item := ep
	if host != "" {
		d.What += " (" + host + ")"
		item = host + ":" + strconv.Itoa(int(ev.Port))
	}
	d.Exe, d.Parents = g.who(ev, exe, pexe)
	d.Suggest = fmt.Sprintf("network.%s: + %s %s", op[1], item, proto)
	d.Risk = report.RiskHigh
	if addr.IsLoopback() {
		d.Risk = report.RiskLow
	}
	return d
}

// who names the executable (as the kernel saw it at the call) and its parent chain; pexe is
// the parent's executable as the kernel saw it, for when the processes are gone.
func (g *guard) who(ev *bpf.GuardGuardEvent, exe, pexe string) (string, []string) {
	if exe == "" {
		if exe = exeOf(int(ev.Tgid)); exe == "(unknown)" {
			exe = "(exited: " + commString(ev.Comm[:]) + ")"
		}
	}
	root := int(g.rootPid.Load())
	if ev.Ptgid > 0 && int(ev.Tgid) != root {
		// The first hop is the parent the kernel saw: the caller may be gone (or going) by now,
		// and /proc would no longer say.
		if pexe == "" {
			pexe = exeOf(int(ev.Ptgid))
		}
		return exe, append([]string{pexe}, parentsOf(root, int(ev.Ptgid))...)
	}
	return exe, parentsOf(root, int(ev.Tgid))
}

func commString(c []int8) string {
	b := make([]byte, 0, len(c))
	for _, x := range c {
		if x == 0 {
			break
		}
		b = append(b, byte(x))
	}
	return string(b)
}

// record aggregates denials per (kind, what, executable, suggestion), at most maxDistinct.
func (g *guard) record(d report.Denial) {
	key := string(d.Kind) + "\x00" + d.What + "\x00" + d.Exe + "\x00" + d.Suggest
	g.mu.Lock()
	defer g.mu.Unlock()
	if i, ok := g.index[key]; ok {
		g.denials[i].Count++
		return
	}
	if len(g.denials) >= maxDistinct {
		g.dropped++
		return
	}
	g.index[key] = len(g.denials)
	g.denials = append(g.denials, d)
}

// close detaches everything, drains the ring buffer, removes the cgroup (killing what is left
// in it) and returns the denials and notes.
func (g *guard) close() ([]report.Denial, []string) {
	if err := g.wait(); err != nil {
		// The background setup failed: nothing is loaded; the caller noted why.
		close(g.stopResolve)
		var notes []string
		if err := g.cg.Remove(); err != nil {
			notes = append(notes, err.Error())
		}
		return nil, notes
	}
	close(g.stopResolve)
	for _, l := range g.links {
		l.Close()
	}
	g.links = nil
	// The programs stay on the tracepoints a moment longer; they filter on this run's cgroup,
	// which is empty by then.
	phase.Mark("close: links")
	kernrun.ClosePerfEvents(g.perfFDs)
	g.perfFDs = nil
	phase.Mark("close: perf events")
	g.rd.Flush() // read what is there, then stop
	g.wg.Wait()
	g.rd.Close()
	var notes []string
	var perCPU []uint64
	if err := g.objs.Counters.Lookup(uint32(bpf.GuardGuardCounterGC_RINGBUF_DROPS), &perCPU); err == nil {
		var n uint64
		for _, v := range perCPU {
			n += v
		}
		if n > 0 {
			notes = append(notes, fmt.Sprintf("%d network/file denials were not reported: the guard's ring buffer was full (they were still refused)", n))
		}
	}
	phase.Mark("close: drain ringbuf")
	g.coll.Close()
	phase.Mark("close: collection")
	if err := g.cg.Remove(); err != nil {
		notes = append(notes, err.Error())
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.dropped > 0 {
		notes = append(notes, fmt.Sprintf("%d more distinct network/file denials were counted but not listed", g.dropped))
	}
	return g.denials, append(g.notes, notes...)
}
