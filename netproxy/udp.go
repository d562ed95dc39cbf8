package netproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/sysprof/sysprof/report"
)

// udpIdle ends a relayed UDP flow (one client socket) after this long without a datagram
// either way.
const udpIdle = 2 * time.Minute

// UDPName is a UDP destination of the profile by name (UDP rules by name): relayed from the
// name's synthetic address (what the stub answers) to the name resolved on the host.
type UDPName struct {
	Name string
	Port uint16
}

// RelayUDPNames adds the relays of UDP destinations by name: a socket at the name's synthetic
// address and port inside (and at its IPv6 twin when the stub answers AAAA for it), each
// relayed to the name resolved on the host when a flow starts. The names must be the plan's
// (AddResolveOnly); Inside.UDP stays sorted.
func (p *Plan) RelayUDPNames(us []UDPName) {
	for _, u := range us {
		a, ok := p.Synthetic(u.Name)
		if !ok {
			continue
		}
		if p.udpName == nil {
			p.udpName = map[netip.AddrPort]string{}
		}
		ats := []netip.Addr{a}
		if p.has6[canonName(u.Name)] {
			ats = append(ats, synthetic6Of(a))
		}
		for _, at := range ats {
			ap := netip.AddrPortFrom(at, u.Port)
			p.udpName[ap] = canonName(u.Name)
			p.Inside.UDP = append(p.Inside.UDP, ap)
		}
	}
	slices.SortFunc(p.Inside.UDP, func(a, b netip.AddrPort) int { return a.Compare(b) })
	p.Inside.UDP = slices.Compact(p.Inside.UDP)
}

// udpFlows bounds the flows of one destination at once (each holds a host socket): past it
// a new client's datagrams are dropped until one ends.
const udpFlows = 256

// serveUDP relays datagrams for one exact UDP destination of the profile (Inside.UDP): the
// init stage bound a socket to that address and port in the sandbox's namespace (every
// address is local there), so the command's datagrams to it arrive here; each client socket
// gets its own upstream socket on the host, connected to the same destination, and the
// answers go back from the destination's address. Nothing but that address and port is
// relayed: a datagram to any other destination finds no socket (ICMP port unreachable).
func (p *Proxy) serveUDP(in net.PacketConn, dst netip.AddrPort) {
	defer p.wg.Done()
	var mu sync.Mutex
	flows := map[netip.AddrPort]*net.UDPConn{}
	defer func() {
		mu.Lock()
		for _, c := range flows {
			c.Close()
		}
		mu.Unlock()
	}()
	buf := make([]byte, 65536)
	for {
		n, from, err := in.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) || p.ctx.Err() != nil {
				return
			}
			continue
		}
		client := addrPort(from)
		mu.Lock()
		up := flows[client]
		mu.Unlock()
		if up == nil {
			mu.Lock()
			full := len(flows) >= udpFlows
			mu.Unlock()
			if full {
				continue
			}
			c, target, err := p.dialUDP(dst)
			if err != nil {
				p.deny(report.Denial{Syscall: "sendto", What: fmt.Sprintf("send %s udp (upstream: %v)", target, err), Endpoint: target, Proto: "udp"}, who{})
				continue
			}
			up = c
			mu.Lock()
			flows[client] = up
			mu.Unlock()
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				defer func() {
					mu.Lock()
					delete(flows, client)
					mu.Unlock()
					up.Close()
				}()
				rb := make([]byte, 65536)
				for {
					up.SetReadDeadline(time.Now().Add(udpIdle))
					m, err := up.Read(rb)
					if err != nil {
						var ne net.Error
						if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, net.ErrClosed) || p.ctx.Err() != nil {
							return
						}
						continue // ICMP unreachable from upstream: the next datagram may pass
					}
					_, _ = in.WriteTo(rb[:m], from)
				}
			}()
		}
		_, _ = up.Write(buf[:n])
	}
}

// dialUDP opens the upstream socket of a flow to dst (the relay's address inside): dst itself,
// or for a relay by name the name resolved on the host now (never to an address a name may
// not reach: forbiddenForName). target is the destination as a denial names it.
func (p *Proxy) dialUDP(dst netip.AddrPort) (*net.UDPConn, string, error) {
	name, ok := p.plan.udpName[dst]
	if !ok {
		c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(dst))
		return c, dst.String(), err
	}
	target := net.JoinHostPort(name, strconv.Itoa(int(dst.Port())))
	ctx, cancel := context.WithTimeout(p.ctx, 10*time.Second)
	defer cancel()
	addrs, named, err := p.lookup(ctx, name)
	if err != nil {
		return nil, target, fmt.Errorf("resolve %s: %w", name, err)
	}
	err = errors.New("no address")
	for _, a := range addrs {
		if why := forbiddenForName(name, a, named); why != "" {
			err = fmt.Errorf("%s: %s", a, why)
			continue
		}
		var c *net.UDPConn
		if c, err = net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(a, dst.Port()))); err == nil {
			return c, target, nil
		}
	}
	return nil, target, err
}
