package netproxy

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/sysprof/sysprof/report"
)

// udpIdle ends a relayed UDP flow (one client socket) after this long without a datagram
// either way.
const udpIdle = 2 * time.Minute

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
			c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(dst))
			if err != nil {
				p.deny(report.Denial{Syscall: "sendto", What: fmt.Sprintf("send %s udp (upstream: %v)", dst, err), Endpoint: dst.String(), Proto: "udp"}, who{})
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
