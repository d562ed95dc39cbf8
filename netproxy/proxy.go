package netproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sysprof/sysprof/policy"
	"github.com/sysprof/sysprof/report"
)

// Options are the run's choices beyond the profile.
type Options struct {
	// Resolve overrides the host's DNS for names (like curl's --resolve): the proxy dials
	// these addresses, loopback included.
	Resolve map[string][]netip.Addr
	// LogAllowed records every allowed connection (name, port, binary, bytes each way).
	LogAllowed bool
	// Broker holds the run's brokered credentials (broker.go): connections to their names are
	// terminated and rewritten instead of spliced.
	Broker *Broker
	// ConnectsSeen: every connect in the sandbox waits in sysprof's supervisor, which tells
	// the proxy who made it (SawConnect) before the call goes on. A per-binary rule then
	// passes only when the process that made the connect passed too, as it was then: a
	// process that connects, writes its request and execs the rule's binary is refused
	// however fast it execs, and a connection whose connect was not seen (io_uring's, TCP
	// Fast Open's sendto) is refused.
	ConnectsSeen bool
	// ExecOrder, when set (a root run with a transport helper rule: the enforcer's eBPF
	// program on the run's cgroup), says by a client socket's cookie which processes made its
	// connect (the caller's tgid, then its parents') and whether each one's parent's file ran
	// it (ran[i]: forked while the parent at i+1 ran its current file, exec'd at most once
	// since). Without it no transport helper passes as the process that connected.
	ExecOrder func(cookie uint64) (tgids []uint32, ran []bool, ok bool)
}

// sniffWait is how long the proxy waits for a client's first bytes before it takes the
// protocol for one where the server speaks first.
const sniffWait = 500 * time.Millisecond

// serverFirstWait is how long a connection that is neither TLS nor HTTP (an SSH banner, or
// a client silent for sniffWait) waits for the server's first bytes: until the server has
// spoken nothing the client sends is forwarded, so such a connection cannot carry a request
// to an HTTP server (which never speaks first) past the Host check. A var for tests.
var serverFirstWait = 10 * time.Second

// refusedDrain bounds how long the answers to a connection's earlier requests may take
// once a later request is refused.
const refusedDrain = 5 * time.Second

// dnsLookups bounds the owner lookups of refused queries under way at once (each on its
// query's goroutine, answerDNS); past it a refusal is recorded without its binary.
const dnsLookups = 8

// dnsAnswers bounds the queries the stub answers at once (serveDNS).
const dnsAnswers = 64

// maxDistinct bounds the distinct denials and log lines kept.
const maxDistinct = 1000

// Proxy is the running stub and proxy of one sandbox.
type Proxy struct {
	plan  *Plan
	opts  Options
	root  int    // a process in the sandbox (its /proc/PID/net is the sandbox's)
	netns string // its ns/net link

	dns  net.PacketConn
	lns  []net.Listener
	udp  []net.PacketConn // the UDP relays' sockets, in Inside.UDP's order
	icmp []net.PacketConn // raw ICMP/ICMPv6 in the sandbox's namespace (icmp.go)
	diag *diag            // sock_diag in the sandbox's namespace
	ctx  context.Context
	end  context.CancelFunc
	wg   sync.WaitGroup

	// ownerOf finds a client socket's holders; lookup a name's addresses at connect time
	// (named: from Options.Resolve, which may name loopback). Tests replace them.
	ownerOf func(proto string, loc, rem netip.AddrPort) []who
	// connectorOf is who made the connect of the TCP client socket loc→rem, as SawConnect
	// recorded it (ok false: not seen).
	connectorOf func(loc, rem netip.AddrPort) (who, bool)
	connects    connectLog
	helpers     bool // a rule or credential names a tool with transport helpers (NeedsExecOrder)
	// fileAt finds a path's file as the sandbox sees it (a rule's binary, a helper): fileOf,
	// from files.
	fileAt   func(path string) (fileID, bool)
	files    sync.Map // path -> fileEntry: what fileOf found, kept for the run
	lookup   func(ctx context.Context, name string) (addrs []netip.Addr, named bool, err error)
	dnsSlots chan struct{}

	mu       sync.Mutex
	answered map[string]bool // names the stub gave an address for in this run
	conns    map[net.Conn]struct{}
	denials  map[string]*report.Denial
	order    []string
	allowed  map[string]*allowedLog
	dropped  int
}

type allowedLog struct {
	what          string
	n             int
	bytesOut, bIn int64
}

// New returns a proxy for the plan; Start runs it.
func New(plan *Plan, opts Options) *Proxy {
	ctx, end := context.WithCancel(context.Background())
	p := &Proxy{plan: plan, opts: opts, ctx: ctx, end: end, conns: map[net.Conn]struct{}{},
		denials: map[string]*report.Denial{}, allowed: map[string]*allowedLog{}, answered: map[string]bool{},
		dnsSlots: make(chan struct{}, dnsLookups)}
	p.ownerOf = p.owner
	p.connectorOf = p.connector
	p.helpers = NeedsExecOrder(plan, opts.Broker)
	p.fileAt = p.fileOf
	p.lookup = func(ctx context.Context, name string) ([]netip.Addr, bool, error) {
		if a, ok := opts.Resolve[name]; ok {
			return a, true, nil
		}
		a, err := net.DefaultResolver.LookupNetIP(ctx, "ip", name)
		return a, false, err
	}
	return p
}

// Start takes the sockets SetupInside opened (this process's fds now: the DNS socket, one
// listener per port of the plan, one socket per UDP relay, sock_diag, then the ICMP observers
// there are) and serves them. root is a process in the sandbox's network
// namespace. On error the fds are closed and nothing runs.
func (p *Proxy) Start(fds []int, root int) error {
	files := make([]*os.File, len(fds))
	for i, fd := range fds {
		files[i] = os.NewFile(uintptr(fd), "egress")
	}
	defer func() {
		for _, f := range files {
			f.Close() // net.File* dup'ed what they keep
		}
	}()
	nports, nudp := len(p.plan.Inside.Ports), len(p.plan.Inside.UDP)
	if len(fds) < 2+nports+nudp || len(fds) > 4+nports+nudp {
		return fmt.Errorf("egress: %d sockets from the sandbox, want %d to %d", len(fds), 2+nports+nudp, 4+nports+nudp)
	}
	last := 1 + nports + nudp
	p.diag = &diag{f: files[last]}
	icmp := files[last+1:]
	files = files[:last] // kept open: the proxy's until Close
	p.root = root
	p.knownFiles() // the command has not started: the rules' binaries as the profile meant them
	var err error
	if p.netns, err = os.Readlink(fmt.Sprintf("/proc/%d/ns/net", root)); err != nil {
		return fmt.Errorf("egress: the sandbox's network namespace: %w", err)
	}
	if p.dns, err = net.FilePacketConn(files[0]); err != nil {
		return fmt.Errorf("egress: dns stub socket: %w", err)
	}
	closeAll := func() {
		p.dns.Close()
		for _, l := range p.lns {
			l.Close()
		}
		for _, u := range p.udp {
			u.Close()
		}
		for _, c := range p.icmp {
			c.Close()
		}
	}
	for i, f := range files[1+nports : last] {
		c, err := net.FilePacketConn(f)
		if err != nil {
			closeAll()
			return fmt.Errorf("egress: udp relay for %s: %w", p.plan.Inside.UDP[i], err)
		}
		p.udp = append(p.udp, c)
	}
	for i, f := range files[1 : 1+nports] {
		ln, err := net.FileListener(f)
		if err != nil {
			closeAll()
			return fmt.Errorf("egress: proxy listener for port %d: %w", p.plan.Inside.Ports[i], err)
		}
		p.lns = append(p.lns, ln)
	}
	var v6 []bool
	for _, f := range icmp {
		dom, err := unix.GetsockoptInt(int(f.Fd()), unix.SOL_SOCKET, unix.SO_DOMAIN)
		c, err2 := net.FilePacketConn(f)
		if err = errors.Join(err, err2); err != nil {
			closeAll()
			return fmt.Errorf("egress: ICMP observer: %w", err)
		}
		f.Close() // FilePacketConn dup'ed it (the deferred close no longer sees these)
		p.icmp = append(p.icmp, c)
		v6 = append(v6, dom == unix.AF_INET6)
	}
	p.wg.Add(1 + len(p.lns) + len(p.udp) + len(p.icmp))
	go p.serveDNS()
	for _, ln := range p.lns {
		go p.serve(ln)
	}
	for i, u := range p.udp {
		go p.serveUDP(u, p.plan.Inside.UDP[i])
	}
	for i, c := range p.icmp {
		go p.serveICMP(c, v6[i])
	}
	return nil
}

// fileEntry is one path's file as fileOf found it.
type fileEntry struct {
	id fileID
	ok bool
}

// fileOf is a path's file as the sandbox saw it when the proxy started (knownFiles: the rules'
// binaries and their transport helpers), before the command ran: a command that replaces a
// rule's binary where it may write, or changes the root of the process the proxy looks
// through, does not make its own file the rule's. A path missing then (a binary the run
// builds or installs) is looked for again until found, then kept. Each path is resolved once
// a run, not once a connection.
func (p *Proxy) fileOf(path string) (fileID, bool) {
	if v, ok := p.files.Load(path); ok {
		e := v.(fileEntry)
		return e.id, e.ok
	}
	f, ok := fileIn(p.root, path)
	if ok {
		p.files.Store(path, fileEntry{f, true})
	}
	return f, ok
}

// knownFiles resolves the binary of every per-binary rule and credential and the files of its
// transport helpers (a helper missing from a system directory now stays missing).
func (p *Proxy) knownFiles() {
	var bys []string
	for _, r := range p.plan.Rules {
		bys = append(bys, r.By)
	}
	if p.opts.Broker != nil {
		for _, c := range p.opts.Broker.Creds {
			bys = append(bys, c.By)
		}
	}
	for _, by := range bys {
		if anyBy(by) {
			continue
		}
		p.fileOf(by)
		for _, n := range helpersOf(by) {
			for _, d := range helperDirs {
				if path := d + "/" + n; path != by {
					if _, seen := p.files.Load(path); !seen {
						f, ok := fileIn(p.root, path)
						p.files.Store(path, fileEntry{f, ok})
					}
				}
			}
		}
	}
}

// ObservesDatagrams reports whether the datagrams no socket took (UDP other than the stub's
// DNS, DNS sent past the stub) are recorded: the init stage could open the ICMP observer.
func (p *Proxy) ObservesDatagrams() bool { return len(p.icmp) > 0 }

// Close stops serving, ends the connections still open and returns the denials (each with
// its count) and, with LogAllowed, one note per allowed destination and binary.
func (p *Proxy) Close() ([]report.Denial, []string) {
	p.end()
	if p.dns != nil {
		p.dns.Close()
	}
	for _, l := range p.lns {
		l.Close()
	}
	for _, c := range p.icmp {
		c.Close()
	}
	for _, u := range p.udp {
		u.Close()
	}
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	if p.diag != nil {
		// An owner lookup started at accept (not in wg) may still be using it.
		p.diag.mu.Lock()
		p.diag.f.Close()
		p.diag.mu.Unlock()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []report.Denial
	for _, k := range p.order {
		out = append(out, *p.denials[k])
	}
	var notes []string
	keys := make([]string, 0, len(p.allowed))
	for k := range p.allowed {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		a := p.allowed[k]
		notes = append(notes, fmt.Sprintf("egress: allowed %s: %d connection(s), %d B out, %d B in", a.what, a.n, a.bytesOut, a.bIn))
	}
	if p.dropped > 0 {
		notes = append(notes, fmt.Sprintf("egress: %d more refusals or connections with distinct details were not listed", p.dropped))
	}
	return out, notes
}

func (p *Proxy) track(c net.Conn, on bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if on {
		if p.ctx.Err() != nil {
			return false
		}
		p.conns[c] = struct{}{}
	} else {
		delete(p.conns, c)
	}
	return true
}

func (p *Proxy) deny(d report.Denial, w who) {
	if w.connector && w.Parents == nil && w.Pid > 0 && p.netns != "" {
		// Described at its connect by its own file alone (DescribeCaller): its parents now
		// (an exec since changed none of them).
		w.Parents = describe(w.Pid, p.netns).Parents
	}
	d.Kind = report.KindNetwork
	d.Exe, d.Parents = w.Exe, w.Parents
	if d.Exe == "" {
		d.Exe = "?"
	}
	d.Count = 1
	d.First = time.Now().UTC()
	if d.Risk == policy.RiskNone && d.Endpoint != "" {
		// The one risk classification: what allowing this destination would rate in diff.
		d.Risk, _ = policy.EndpointRisk(policy.SectionConnect, policy.Endpoint{Endpoint: d.Endpoint, Proto: d.Proto}, true)
	}
	if d.Risk == policy.RiskNone {
		d.Risk = report.RiskHigh
	}
	k := string(d.Kind) + "\x00" + d.What + "\x00" + d.Exe
	p.mu.Lock()
	defer p.mu.Unlock()
	if old := p.denials[k]; old != nil {
		old.Count++
		return
	}
	if len(p.denials) >= maxDistinct {
		p.dropped++
		return
	}
	p.denials[k] = &d
	p.order = append(p.order, k)
}

// serveDNS answers each query on a goroutine of its own, at most dnsAnswers at once: an answer
// may wait for the host's resolver (Plan.HostHas6: up to a second), and the queries behind it
// must not (a client asks the next name, or A after AAAA, while a slow one is under way).
func (p *Proxy) serveDNS() {
	defer p.wg.Done()
	slots := make(chan struct{}, dnsAnswers)
	for {
		buf := make([]byte, 4096)
		n, from, err := p.dns.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) || p.ctx.Err() != nil {
				return
			}
			continue
		}
		slots <- struct{}{} // dnsAnswers under way: the next query waits for one to end
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer func() { <-slots }()
			p.answerDNS(buf[:n], from)
		}()
	}
}

// answerDNS answers one query from from and records a refusal.
func (p *Proxy) answerDNS(msg []byte, from net.Addr) {
	resp, name, denied := p.plan.answer(msg)
	if !denied {
		if _, ok := p.plan.Names[name]; ok {
			p.mu.Lock()
			p.answered[name] = true
			p.mu.Unlock()
		}
		if resp != nil {
			_, _ = p.dns.WriteTo(resp, from)
		}
		return
	}
	// A refusal names who asked: found before the answer (on NXDOMAIN the client may
	// close its socket), on this query's goroutine (the lookup walks the sandbox's
	// processes; other queries do not wait for it), at most dnsLookups at once.
	// A lookup names no port: the rule that lets it through is network.resolve (the stub
	// answers it); the connection that follows is then refused and reported with its port.
	g := policy.Grant{Section: policy.SectionResolve, Item: name}
	d := report.Denial{Syscall: "dns", What: "resolve " + name + " (not in the profile: NXDOMAIN)", Endpoint: name,
		Proto: "udp", Host: name, Change: &g, Suggest: g.String()}
	if c := p.opts.Broker.standInIn([]byte(name)); c != nil {
		d.What = fmt.Sprintf("tried to send the stand-in of %s in a DNS name (%s): refused, an exfiltration attempt", c.Name, name)
		d.Risk, d.Suggest, d.Change = report.RiskCritical, "", nil
	}
	var w who
	select {
	case p.dnsSlots <- struct{}{}:
		w = first(p.ownerOf("udp", addrPort(from), StubAddr))
		<-p.dnsSlots
	default: // lookups enough under way: answered without the binary
	}
	if resp != nil {
		_, _ = p.dns.WriteTo(resp, from)
	}
	p.deny(d, w)
}

func (p *Proxy) serve(ln net.Listener) {
	defer p.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || p.ctx.Err() != nil {
				return
			}
			time.Sleep(time.Millisecond) // EMFILE and friends: do not spin
			continue
		}
		if !p.track(c, true) {
			c.Close()
			continue
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			defer p.track(c, false)
			defer c.Close()
			p.handle(c.(*net.TCPConn))
		}()
	}
}

func addrPort(a net.Addr) netip.AddrPort {
	var ap netip.AddrPort
	switch a := a.(type) {
	case *net.TCPAddr:
		ap = a.AddrPort()
	case *net.UDPAddr:
		ap = a.AddrPort()
	}
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// handle decides one connection from the sandbox and, when it may pass, carries it upstream.
func (p *Proxy) handle(c *net.TCPConn) {
	pc := p.newProxyConn(c)
	rules := pc.rules()
	if len(rules) == 0 {
		pc.refuseUnmatched()
		return
	}
	cred := p.opts.Broker.credFor(pc.brokerName(), pc.port)
	if !p.opts.LogAllowed && (cred != nil || pc.isName && !slices.ContainsFunc(rules, Rule.anyBinary)) {
		// Every use is logged with its binary, and a per-binary rule checks the holders at
		// accept too: looked up while the handshakes run.
		go pc.holders()
	}
	buf, proto, ok := pc.checkFirstBytes()
	if !ok {
		return
	}
	if cred != nil && !pc.isName { // an address rule is not sniffed, but a brokered one is read
		if buf, proto, _, ok = pc.sniffBrokered(); !ok {
			return
		}
	}
	w, ok := pc.checkBinaries(rules)
	if !ok {
		return
	}
	if !slices.ContainsFunc(rules, Rule.anyBinary) {
		pc.byRules = rules
	}
	if cred != nil && (proto == protoTLS || proto == protoHTTP) {
		pc.broker(cred, buf, proto, w, rules)
		return
	}
	up, err := p.dial(pc.name, pc.isName, pc.dst, rules)
	if err != nil {
		var fe forbiddenError
		if errors.As(err, &fe) {
			pc.refuse(fe.Error(), report.RiskCritical)
		}
		return // unreachable upstream: the client sees the connection close
	}
	if !p.track(up, true) {
		up.Close()
		return
	}
	defer p.track(up, false)
	defer up.Close()
	pc.carry(up, buf, proto, w)
}

// proxyConn is one connection from the sandbox while handle decides and carries it.
type proxyConn struct {
	p        *Proxy
	c        *net.TCPConn
	dst, src netip.AddrPort
	port     uint16
	name     string // the name the DNS stub gave dst out for, when isName
	isName   bool
	// target and targetHost are what the client asked for, as a denial names it.
	target, targetHost string
	// holders looks up the socket's holders once (the first lookup may start at accept).
	holders func() []who
	// byRules are the connection's rules when each names a binary: every HTTP request after
	// the first is checked against the holders again (a keep-alive socket handed on).
	byRules []Rule
}

func (p *Proxy) newProxyConn(c *net.TCPConn) *proxyConn {
	pc := &proxyConn{p: p, c: c, dst: addrPort(c.LocalAddr()), src: addrPort(c.RemoteAddr())}
	pc.port = pc.dst.Port()
	pc.name, pc.isName = p.plan.nameAt(pc.dst.Addr())
	pc.target = pc.dst.String()
	if pc.isName {
		pc.target, pc.targetHost = net.JoinHostPort(pc.name, strconv.Itoa(int(pc.port))), pc.name
	}
	pc.holders = sync.OnceValue(func() []who { return p.ownerOf("tcp", pc.src, pc.dst) })
	if p.opts.LogAllowed {
		go pc.holders() // while the client is surely there
	}
	return pc
}

// refuseBy reports the connection refused (it is closed when handle returns), as w's.
func (pc *proxyConn) refuseBy(why string, risk report.Risk, w who) {
	d := report.Denial{Syscall: "connect", What: fmt.Sprintf("connect %s tcp (%s)", pc.target, why), Endpoint: pc.target, Proto: "tcp", Host: pc.targetHost,
		Suggest: "network.connect: + " + pc.target + " tcp", Risk: risk}
	pc.p.deny(d, w)
}

func (pc *proxyConn) refuse(why string, risk report.Risk) {
	pc.refuseBy(why, risk, first(pc.holders()))
}

// mismatch refuses a request or ClientHello naming another host than the connection's.
func (pc *proxyConn) mismatch(proto, host string) {
	what := "TLS SNI"
	if proto == protoHTTP {
		what = "HTTP Host"
	}
	pc.target, pc.targetHost = net.JoinHostPort(host, strconv.Itoa(int(pc.port))), host
	pc.refuse(fmt.Sprintf("%s %s on a connection resolved for %s", what, host, pc.name), policy.RiskNone)
}

// rules are the plan's rules for the connection's destination: its name's on its port, or the
// address rules that contain it.
func (pc *proxyConn) rules() []Rule {
	var rules []Rule
	for _, r := range pc.p.plan.Rules {
		if r.Port == pc.port && (pc.isName && r.Host == pc.name || !pc.isName && r.Prefix.IsValid() && r.Prefix.Contains(pc.dst.Addr())) {
			rules = append(rules, r)
		}
	}
	return rules
}

// refuseUnmatched refuses a connection no rule allows, saying why.
func (pc *proxyConn) refuseUnmatched() {
	a := pc.dst.Addr()
	switch {
	case pc.isName:
		pc.refuse("the profile allows "+pc.name+" on other ports", policy.RiskNone)
	case linkLocal4.Contains(a) || linkLocal6.Contains(a) || awsMeta6.Contains(a):
		pc.refuse("link-local or metadata address", report.RiskCritical)
	default:
		pc.refuse("raw IP connect: the profile allows this address by no rule", policy.RiskNone)
	}
}

// checkFirstBytes reads what the client says it is talking to. An address rule allows the
// address whatever is spoken; a name is checked against the first bytes (which go upstream
// later: buf). ok is false when the connection was refused or the client went away.
func (pc *proxyConn) checkFirstBytes() (buf []byte, proto string, ok bool) {
	if !pc.isName {
		return nil, protoUnknown, true
	}
	buf, proto, host, err := sniffConn(pc.c)
	if err != nil {
		var rf refusal
		if errors.As(err, &rf) {
			pc.refuse(rf.msg, policy.RiskNone)
		}
		return nil, proto, false
	}
	_, _, proxied := ProxyTarget(buf)
	switch {
	case host != "" && host != pc.name && !(proto == protoHTTP && proxied):
		// (A request through a forward proxy names its target: carryHTTP checks it.)
		pc.mismatch(proto, host)
		return nil, proto, false
	case proto == protoTLS && host == "" && !pc.p.wasAnswered(pc.name):
		// Without SNI the name is the synthetic address's: accepted only when the stub
		// gave that address out in this run (not an address found some other way).
		pc.refuse("TLS ClientHello without SNI to an address the DNS stub did not answer in this run", policy.RiskNone)
		return nil, proto, false
	case proto == protoUnknown:
		pc.refuse("neither a TLS ClientHello, an HTTP/1 request, an SSH banner nor a server that speaks first: its destination cannot be checked by name (an address rule allows any protocol)", policy.RiskNone)
		return nil, proto, false
	}
	return buf, proto, true
}

// checkBinaries lets the connection pass per binary: a rule learned by a binary passes for that
// very file and the transport helpers it runs, when every process holding the socket may use
// it, both when the connection was accepted and after its first bytes. It returns the holder
// the connection is logged as (none when a rule is for any binary).
func (pc *proxyConn) checkBinaries(rules []Rule) (who, bool) {
	if slices.ContainsFunc(rules, Rule.anyBinary) {
		return who{}, true
	}
	// Looked up again now, after the first bytes (whoever wrote them holds the socket by
	// now), and at accept (handle started that lookup): a process that wrote its request and
	// then exec'd the rule's binary, the socket kept, ran another file at accept.
	hs := pc.p.ownerOf("tcp", pc.src, pc.dst)
	checks := [][]who{hs}
	if pc.isName { // an address rule is checked at accept: once
		checks = [][]who{pc.holders(), hs}
	}
	if pc.p.opts.ConnectsSeen {
		// Who made the connect, as it was then: a process that connected, wrote and exec'd
		// the rule's binary may win a race against both lookups of the holders.
		w, ok := pc.p.connectorOf(pc.src, pc.dst)
		if !ok {
			pc.refuseBy("its connect was not seen by sysprof's supervisor (io_uring, TCP Fast Open): a per-binary rule needs it", policy.RiskNone, first(hs))
			return who{}, false
		}
		checks = append([][]who{{w}}, checks...)
	}
	for _, at := range checks {
		if bad, ok := pc.mayUseAny(at, rules); !ok {
			pc.refuseBy(byRefusal(bad, rules), policy.RiskNone, bad)
			return who{}, false
		}
	}
	return first(hs), true
}

// mayUseAny reports whether one of the rules passes for the holders hs; when none does, the
// holder named.
func (pc *proxyConn) mayUseAny(hs []who, rules []Rule) (who, bool) {
	var bad who
	for _, r := range rules {
		b, ok := mayUse(hs, r.By, pc.p.fileAt)
		if ok {
			return who{}, true
		}
		if bad.Exe == "" {
			bad = b
		}
	}
	if bad.Exe == "" {
		bad = first(hs)
	}
	return bad, false
}

// byRefusal says why the rules learned by binaries refused the connection of w: which file
// it runs and which binaries the rules name.
func byRefusal(w who, rules []Rule) string {
	var bys []string
	for _, r := range rules {
		bys = append(bys, r.By)
	}
	slices.Sort(bys)
	bys = slices.Compact(bys)
	exe := w.Exe
	if exe == "" {
		exe = "a process gone before it was looked up"
	}
	why := fmt.Sprintf("by %s: the rule names %s; it passes for that file and its transport helpers only", exe, strings.Join(bys, ", "))
	if w.connector && w.order == nil && slices.ContainsFunc(rules, func(r Rule) bool { return slices.Contains(helpersOf(r.By), filepath.Base(w.Exe)) }) {
		why += ", and for a helper only where the order of execs is seen (a root run): name the helper in the rule"
	}
	return why
}

// carry splices the connection to up both ways until both are done (an HTTP connection's
// every request checked), and logs it when asked to.
func (pc *proxyConn) carry(up *net.TCPConn, buf []byte, proto string, w who) {
	c := pc.c
	var in, out int64
	if proto == protoSSH || proto == protoServerFirst {
		n, ok := pc.serverFirst(up, proto)
		if !ok {
			return
		}
		in = n
	}
	done := make(chan struct{})
	go func() {
		n, _ := io.Copy(c, up) // splice(2) between the two TCP sockets
		in += n
		_ = c.CloseWrite()
		close(done)
	}()
	if pc.isName && proto == protoHTTP {
		var ok bool
		if out, ok = pc.carryHTTP(up, buf, done); !ok {
			return
		}
	} else {
		if len(buf) > 0 {
			if _, err := up.Write(buf); err != nil {
				c.Close()
				up.Close()
				<-done
				return
			}
		}
		n, _ := io.Copy(up, c)
		out = int64(len(buf)) + n
	}
	_ = up.CloseWrite()
	<-done
	if pc.p.opts.LogAllowed {
		if w.Exe == "" {
			w = first(pc.holders()) // the client may be gone: then "?"
		}
		pc.p.logAllowed(pc.target, w.Exe, out, in)
	}
}

// serverFirst passes what the server says first (SSH, a server that speaks first) to the
// client: nothing of the client's goes upstream before it. It returns the bytes passed, and
// false when the server said nothing (refused after serverFirstWait).
func (pc *proxyConn) serverFirst(up *net.TCPConn, proto string) (int64, bool) {
	_ = up.SetReadDeadline(time.Now().Add(serverFirstWait))
	b := make([]byte, 4096)
	n, err := up.Read(b)
	_ = up.SetReadDeadline(time.Time{})
	if n == 0 {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			pc.refuse(fmt.Sprintf("%s: the server did not speak first within %v (an HTTP server never does)", proto, serverFirstWait), policy.RiskNone)
		}
		return 0, false
	}
	if _, err := pc.c.Write(b[:n]); err != nil {
		return 0, false
	}
	return int64(n), true
}

// carryHTTP carries the client's requests up (buf: the first bytes, already read), checking
// every request of the connection, not only the first. On a refused one the answers to the
// requests that passed still go back (done: the copy back ended) and nothing more goes up; ok
// is false then.
//
// A request in a forward proxy's form (an absolute target or CONNECT naming another host than
// the connection's: the name is the proxy, http_proxy's) passes when a rule allows its target
// host:port for the binary, as if it were dialled directly; the proxy dials it. What a CONNECT
// tunnel carries is checked against its target as a direct connection's first bytes are: a TLS
// SNI, every HTTP request's Host; an SSH banner or a server that speaks first passes.
func (pc *proxyConn) carryHTTP(up *net.TCPConn, buf []byte, done <-chan struct{}) (out int64, ok bool) {
	s := &httpStream{c: pc.c, up: up, buf: buf}
	name := pc.name
	var err error
	var bad who // the holder a per-binary rule refused a later request for
	requests := 0
	for {
		var tunnel string
		err = s.run(func(req httpRequest) error {
			requests++
			if requests > 1 && len(pc.byRules) > 0 && !(req.proxied && req.host != name) {
				// A keep-alive connection handed to another process (SCM_RIGHTS, pidfd_getfd,
				// a fork) carries that process's requests: its holders are looked up again.
				if w, ok := pc.mayUseAny(pc.p.ownerOf("tcp", pc.src, pc.dst), pc.byRules); !ok {
					bad = w
					return refusal{msg: byRefusal(w, pc.byRules)}
				}
			}
			switch {
			case req.proxied && req.host != name:
				if via := net.JoinHostPort(req.host, strconv.Itoa(int(req.port))); !pc.allowedVia(req.host, req.port, &bad) {
					return refusal{msg: "via", via: via}
				}
			case req.host != name:
				return refusal{msg: "host", host: req.host}
			}
			if c := pc.p.opts.Broker.standInIn(decodedBasicAll(req.header)); c != nil {
				return refusal{msg: fmt.Sprintf("tried to send the stand-in of %s to %s (in the request header): refused, an exfiltration attempt", c.Name, pc.name), critical: true}
			}
			tunnel = req.host
			return nil
		})
		if err != errTunnel {
			break
		}
		// Through the tunnel: its first bytes say what it carries.
		var proto, host string
		s.buf, proto, host, err = sniffFrom(pc.c, s.buf)
		if err != nil {
			break
		}
		switch {
		case proto == protoHTTP:
			name = tunnel
			continue
		case proto == protoTLS && host != "" && host != tunnel:
			err = refusal{msg: protoTLS, host: host}
		case proto == protoUnknown:
			err = refusal{msg: "a CONNECT tunnel to " + tunnel + " carries neither TLS, HTTP/1, an SSH banner nor a server that speaks first: its destination cannot be checked by name"}
		default:
			if err = s.forward(len(s.buf)); err == nil {
				n, _ := io.Copy(up, pc.c)
				s.out += n
			}
		}
		break
	}
	var rf refusal
	if !errors.As(err, &rf) {
		return s.out, true
	}
	pc.holders() // while the client is surely there
	_ = up.CloseWrite()
	_ = up.SetReadDeadline(time.Now().Add(refusedDrain))
	<-done
	switch {
	case rf.via != "":
		pc.refuseVia(rf.via, bad)
	case rf.host != "" && rf.msg == protoTLS:
		pc.mismatch(protoTLS, rf.host)
	case rf.host != "":
		pc.mismatch(protoHTTP, rf.host)
	case rf.critical:
		pc.refuseCritical(rf.msg, report.RiskCritical)
	case bad.Exe != "":
		pc.refuseBy(rf.msg, policy.RiskNone, bad)
	default:
		pc.refuse(rf.msg, policy.RiskNone)
	}
	return s.out, false
}

// allowedVia reports whether a request through the forward proxy this connection reaches may
// ask for host:port: a rule of the plan allows that destination to the socket's holders (an
// address rule an address target, link-local and the host's loopback only under a rule inside
// them), as a connection straight to it would need.
func (pc *proxyConn) allowedVia(host string, port uint16, bad *who) bool {
	a, aerr := netip.ParseAddr(host)
	var rules []Rule
	for _, r := range pc.p.plan.Rules {
		switch {
		case r.Port != port:
		case aerr != nil && r.Host == host:
			rules = append(rules, r)
		case aerr == nil && r.Prefix.IsValid() && r.Prefix.Contains(a.Unmap()) && forbiddenForPrefix(r.Prefix, a) == "":
			rules = append(rules, r)
		}
	}
	if len(rules) == 0 || slices.ContainsFunc(rules, Rule.anyBinary) {
		return len(rules) > 0
	}
	// Looked up for each request, not once a connection: a keep-alive connection handed to
	// another process carries that process's requests.
	w, ok := pc.mayUseAny(pc.p.ownerOf("tcp", pc.src, pc.dst), rules)
	if !ok {
		*bad = w
	}
	return ok
}

// refuseVia reports a request through the forward proxy refused: no rule allows its target.
func (pc *proxyConn) refuseVia(target string, bad who) {
	host, _, _ := net.SplitHostPort(target)
	why := "not in the profile"
	if bad.Exe != "" {
		why = "by " + bad.Exe + ": its rules name other binaries"
	}
	d := report.Denial{Syscall: "connect", What: fmt.Sprintf("connect %s tcp (through the proxy %s: %s)", target, pc.target, why),
		Endpoint: target, Proto: "tcp", Host: host, Suggest: "network.connect: + " + target + " tcp"}
	if bad.Exe == "" {
		bad = first(pc.holders())
	}
	pc.p.deny(d, bad)
}

// sniffConn reads the client's first bytes until sniff can tell what they are (protoServerFirst:
// the client said nothing for sniffWait). A refusal error: the bytes are refused; another
// error: the client went away.
func sniffConn(c *net.TCPConn) (buf []byte, proto, host string, err error) {
	return sniffFrom(c, make([]byte, 0, 4096))
}

// sniffFrom is sniffConn with buf already read from c.
func sniffFrom(c *net.TCPConn, buf []byte) (_ []byte, proto, host string, err error) {
	_ = c.SetReadDeadline(time.Now().Add(sniffWait))
	defer c.SetReadDeadline(time.Time{})
	for {
		var need int
		var serr error
		proto, host, need, serr = sniff(buf)
		if serr != nil {
			return buf, proto, host, refusal{msg: serr.Error()}
		}
		if need == 0 {
			return buf, proto, host, nil
		}
		if need > cap(buf) {
			buf = slices.Grow(buf, need-len(buf))
		}
		n, rerr := c.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if rerr != nil {
			var ne net.Error
			if errors.As(rerr, &ne) && ne.Timeout() && len(buf) == 0 {
				return buf, protoServerFirst, "", nil
			}
			if len(buf) == 0 {
				return buf, proto, "", rerr // closed before saying anything
			}
			return buf, proto, "", refusal{msg: fmt.Sprintf("%s: incomplete after %v", proto, sniffWait)}
		}
	}
}

func (p *Proxy) wasAnswered(name string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.answered[name]
}

func (p *Proxy) logAllowed(target, exe string, out, in int64) {
	if exe == "" {
		exe = "?"
	}
	k := target + " tcp by " + exe
	p.mu.Lock()
	defer p.mu.Unlock()
	a := p.allowed[k]
	if a == nil {
		if len(p.allowed) >= maxDistinct {
			p.dropped++
			return
		}
		a = &allowedLog{what: k}
		p.allowed[k] = a
	}
	a.n++
	a.bytesOut += out
	a.bIn += in
}

type forbiddenError struct{ msg string }

func (e forbiddenError) Error() string { return e.msg }

// dial connects upstream from the host's network namespace: a name is resolved now (the
// override first), an address under an IP rule is dialled as is.
func (p *Proxy) dial(name string, isName bool, dst netip.AddrPort, rules []Rule) (*net.TCPConn, error) {
	ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
	defer cancel()
	var addrs []netip.Addr
	if isName {
		var ok bool
		var err error
		if addrs, ok, err = p.lookup(ctx, name); err != nil {
			return nil, fmt.Errorf("resolve %s: %w", name, err)
		}
		var why []string
		addrs = slices.DeleteFunc(slices.Clone(addrs), func(a netip.Addr) bool {
			if f := forbiddenForName(name, a, ok); f != "" {
				why = append(why, a.String()+": "+f)
				return true
			}
			return false
		})
		if len(addrs) == 0 && len(why) > 0 {
			return nil, forbiddenError{name + " resolves only to addresses never dialled for a name (" + strings.Join(why, "; ") + ")"}
		}
	} else {
		for _, r := range rules {
			if f := forbiddenForPrefix(r.Prefix, dst.Addr()); f != "" {
				return nil, forbiddenError{f}
			}
		}
		addrs = []netip.Addr{dst.Addr()}
	}
	var d net.Dialer
	var err error
	for _, a := range addrs {
		var c net.Conn
		if c, err = d.DialContext(ctx, "tcp", netip.AddrPortFrom(a, dst.Port()).String()); err == nil {
			return c.(*net.TCPConn), nil
		}
	}
	if err == nil {
		err = errors.New("no address")
	}
	return nil, err
}
