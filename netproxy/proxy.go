package netproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

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
}

// sniffWait is how long the proxy waits for a client's first bytes before it goes by the
// stub's name alone (a protocol where the server speaks first).
const sniffWait = 500 * time.Millisecond

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
	diag *diag // sock_diag in the sandbox's namespace
	ctx  context.Context
	end  context.CancelFunc
	wg   sync.WaitGroup

	mu      sync.Mutex
	conns   map[net.Conn]struct{}
	denials map[string]*report.Denial
	order   []string
	allowed map[string]*allowedLog
	dropped int
}

type allowedLog struct {
	what          string
	n             int
	bytesOut, bIn int64
}

// New returns a proxy for the plan; Start runs it.
func New(plan *Plan, opts Options) *Proxy {
	ctx, end := context.WithCancel(context.Background())
	return &Proxy{plan: plan, opts: opts, ctx: ctx, end: end, conns: map[net.Conn]struct{}{},
		denials: map[string]*report.Denial{}, allowed: map[string]*allowedLog{}}
}

// Start takes the sockets SetupInside opened (this process's fds now: the DNS socket, then one
// listener per port of the plan) and serves them. root is a process in the sandbox's network
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
	if len(fds) != 2+len(p.plan.Inside.Ports) {
		return fmt.Errorf("egress: %d sockets from the sandbox, want %d", len(fds), 2+len(p.plan.Inside.Ports))
	}
	last := len(files) - 1
	p.diag = &diag{f: files[last]}
	files = files[:last] // kept open: the proxy's until Close
	p.root = root
	var err error
	if p.netns, err = os.Readlink(fmt.Sprintf("/proc/%d/ns/net", root)); err != nil {
		return fmt.Errorf("egress: the sandbox's network namespace: %w", err)
	}
	if p.dns, err = net.FilePacketConn(files[0]); err != nil {
		return fmt.Errorf("egress: dns stub socket: %w", err)
	}
	for i, f := range files[1:last] {
		ln, err := net.FileListener(f)
		if err != nil {
			p.dns.Close()
			for _, l := range p.lns {
				l.Close()
			}
			return fmt.Errorf("egress: proxy listener for port %d: %w", p.plan.Inside.Ports[i], err)
		}
		p.lns = append(p.lns, ln)
	}
	p.wg.Add(1 + len(p.lns))
	go p.serveDNS()
	for _, ln := range p.lns {
		go p.serve(ln)
	}
	return nil
}

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
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	if p.diag != nil {
		p.diag.f.Close()
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

func (p *Proxy) serveDNS() {
	defer p.wg.Done()
	buf := make([]byte, 4096)
	for {
		n, from, err := p.dns.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) || p.ctx.Err() != nil {
				return
			}
			continue
		}
		resp, name, denied := p.plan.answer(buf[:n])
		if resp != nil {
			_, _ = p.dns.WriteTo(resp, from)
		}
		if denied {
			src := addrPort(from)
			w := p.owner("udp", src, StubAddr)
			p.deny(report.Denial{Syscall: "dns", What: "resolve " + name + " (not in the profile: NXDOMAIN)", Endpoint: name,
				Proto: "udp", Host: name, Suggest: fmt.Sprintf("network.connect: + %s:PORT tcp", name)}, w)
		}
	}
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

// handle decides one connection from the sandbox and, when it may pass, splices it upstream.
func (p *Proxy) handle(c *net.TCPConn) {
	dst, src := addrPort(c.LocalAddr()), addrPort(c.RemoteAddr())
	port := dst.Port()
	name, isName := p.plan.byAddr[dst.Addr()]
	target, targetHost := dst.String(), "" // what the client asked for, as the denial names it
	if isName {
		target, targetHost = net.JoinHostPort(name, strconv.Itoa(int(port))), name
	}
	lazyWho := sync.OnceValue(func() who { return p.owner("tcp", src, dst) })
	if p.opts.LogAllowed {
		go lazyWho() // while the client is surely there
	}
	refuse := func(why string, risk report.Risk) {
		d := report.Denial{Syscall: "connect", What: fmt.Sprintf("connect %s tcp (%s)", target, why), Endpoint: target, Proto: "tcp", Host: targetHost,
			Suggest: "network.connect: + " + target + " tcp", Risk: risk}
		p.deny(d, lazyWho())
	}
	var rules []Rule
	for _, r := range p.plan.Rules {
		if r.Port == port && (isName && r.Host == name || !isName && r.Prefix.IsValid() && r.Prefix.Contains(dst.Addr())) {
			rules = append(rules, r)
		}
	}
	if len(rules) == 0 {
		switch {
		case isName:
			refuse("the profile allows "+name+" on other ports", policy.RiskNone)
		case linkLocal4.Contains(dst.Addr()) || linkLocal6.Contains(dst.Addr()) || awsMeta6.Contains(dst.Addr()):
			refuse("link-local or metadata address", report.RiskCritical)
		default:
			refuse("raw IP connect: the profile allows this address by no rule", policy.RiskNone)
		}
		return
	}

	// What the client says it is talking to.
	buf := make([]byte, 0, 4096)
	_ = c.SetReadDeadline(time.Now().Add(sniffWait))
	var host, proto string
	for {
		var need int
		var err error
		proto, host, need, err = sniff(buf)
		if err != nil {
			refuse(err.Error(), policy.RiskNone)
			return
		}
		if need == 0 {
			break
		}
		if need > cap(buf) {
			buf = slices.Grow(buf, need-len(buf))
		}
		n, rerr := c.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if rerr != nil {
			var ne net.Error
			if errors.As(rerr, &ne) && ne.Timeout() && len(buf) == 0 {
				proto = protoUnknown // the server speaks first: go by the stub's name
				break
			}
			if len(buf) == 0 {
				return // closed before saying anything
			}
			refuse(fmt.Sprintf("%s request incomplete after %v", proto, sniffWait), policy.RiskNone)
			return
		}
	}
	_ = c.SetReadDeadline(time.Time{})
	if isName && host != "" && host != name {
		what := "TLS SNI"
		if proto == protoHTTP {
			what = "HTTP Host"
		}
		target, targetHost = net.JoinHostPort(host, strconv.Itoa(int(port))), host
		refuse(fmt.Sprintf("%s %s on a connection resolved for %s", what, host, name), policy.RiskNone)
		return
	}
	if isName && proto == protoTLS && host == "" {
		refuse("TLS ClientHello without SNI", policy.RiskNone)
		return
	}

	// Per binary: a rule learned by a binary passes for that binary and what runs under it.
	var w who
	if !slices.ContainsFunc(rules, Rule.anyBinary) {
		w = lazyWho()
		if !slices.ContainsFunc(rules, func(r Rule) bool { return w.Exe == r.By || slices.Contains(w.Parents, r.By) }) {
			var bys []string
			for _, r := range rules {
				bys = append(bys, r.By)
			}
			refuse("allowed only to "+strings.Join(bys, ", "), policy.RiskNone)
			return
		}
	}

	up, err := p.dial(name, isName, dst, rules)
	if err != nil {
		var fe forbiddenError
		if errors.As(err, &fe) {
			refuse(fe.Error(), report.RiskCritical)
		}
		return // unreachable upstream: the client sees the connection close
	}
	if !p.track(up, true) {
		up.Close()
		return
	}
	defer p.track(up, false)
	defer up.Close()
	if len(buf) > 0 {
		if _, err := up.Write(buf); err != nil {
			return
		}
	}
	var in int64
	done := make(chan struct{})
	go func() {
		in, _ = io.Copy(c, up) // splice(2) between the two TCP sockets
		_ = c.CloseWrite()
		close(done)
	}()
	out, _ := io.Copy(up, c)
	_ = up.CloseWrite()
	<-done
	if p.opts.LogAllowed {
		if w.Exe == "" {
			w = lazyWho() // the client may be gone: then "?"
		}
		p.logAllowed(target, w.Exe, int64(len(buf))+out, in)
	}
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
		override, ok := p.opts.Resolve[name]
		if ok {
			addrs = override
		} else {
			var err error
			if addrs, err = net.DefaultResolver.LookupNetIP(ctx, "ip", name); err != nil {
				return nil, fmt.Errorf("resolve %s: %w", name, err)
			}
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
