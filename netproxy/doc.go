// Package netproxy owns egress by name: the DNS stub and the name-checking splice proxy that
// are a sandboxed command's only way out of its network namespace. It does not start
// processes, parse profiles or create the network namespace (package enforcer does).
//
// # Design
//
// The command runs in its own network namespace with only loopback, the same as root and as an
// ordinary user (no cgroup hooks). The init stage, inside that namespace and before it drops
// its capabilities (SetupInside):
//
//   - makes every destination local (local routes 0.0.0.0/0 and ::/0 on lo), so that a connect
//     to any address lands on this namespace's loopback and the proxy sees the address dialled
//     (getsockname of the accepted socket) instead of the call failing unseen;
//   - listens on the stub's address (udp 127.0.0.53:53) and on one dual-stack wildcard TCP
//     socket per port the profile connects to;
//   - mounts a generated resolv.conf (only the stub, no search domains) over /etc/resolv.conf.
//
// The listening sockets go to the host-side sysprof process (the enforcer takes them with
// pidfd_getfd), where the stub and the proxy run: upstream connections are dialled from the
// host's network namespace, so nothing in the sandbox's namespace routes anywhere.
//
// The stub answers each name the profile allows with a synthetic loopback address unique to
// that name (127.77.0.0/16, assigned in sorted order: Synthetic); AAAA and other types of an
// allowed name get an empty answer (clients use the A record); every other name is NXDOMAIN
// and a denial with the name.
//
// The proxy takes the name from the synthetic address dialled, reads the client's first bytes
// and checks them against it: a TLS ClientHello's SNI (parsed, never terminated: no
// certificates), an HTTP/1 request's Host (and an absolute request target). A ClientHello or
// request naming another host, or a ClientHello it cannot parse, is refused. Other protocols
// (ssh, server-speaks-first) go by the stub's name. It then resolves the name from the host
// side at connect time (so an address change between the query and the connect denies
// nothing; Options.Resolve overrides, like curl's --resolve), dials it, and splices both ways.
//
// # What never passes unless named
//
//   - Link-local addresses (169.254.0.0/16, fe80::/10) and fd00:ec2::254 (cloud metadata):
//     never dialled for a name, only for an IP/CIDR rule that lies inside them.
//   - Loopback: a name resolved by the host's DNS to a loopback address is refused (DNS
//     rebinding to the host's own services); a --resolve override or an IP rule may name it.
//   - Raw IP connects: a destination that is not a synthetic address passes only under an
//     IP or CIDR rule of the profile that covers it (then it is dialled as is).
//   - UDP: only the stub's DNS. QUIC and any other datagram finds no listener (ICMP port
//     unreachable: the client falls back to TCP).
//
// Private ranges (10/8, 172.16/12, 192.168/16, fc00::/7) are dialled when an allowed name
// resolves to them: naming an internal host is how a profile allows it.
//
// # Per binary
//
// A rule learned "by" a binary (policy Provenance.By) passes only for a connection whose
// owning process is that binary or runs under it (its parent chain, for the transport helpers
// it executes: git-remote-https, ssh). The owner is found from the accepted socket's peer:
// its inode by an exact sock_diag lookup on a netlink socket the init stage opened in the
// sandbox's namespace (0.5 ms measured on a busy host; reading /proc/PID/net/tcp walks the
// host's whole socket table, 3-35 ms), then the process holding it, searched in the sandbox's
// process tree. A rule with by "any" (or none) passes for every binary. The lookup runs only
// for per-binary rules, denials and --report's log.
//
// # Not covered
//
//   - Ports no rule names have no listener: a connect there is refused by the kernel (RST)
//     without a record.
//   - Cleartext HTTP/2 with prior knowledge and other protocols are not parsed: they go by
//     the name the connection was resolved for (the upstream is that name's address anyway).
//   - A ClientHello split over several TLS records is refused.
//   - Only a connection's first request is checked: later requests on a kept-alive HTTP/1
//     connection, and HTTP/2 streams inside TLS, are not parsed (the upstream is the allowed
//     name's address; a CDN serving other names there could answer them).
//   - A client that sends nothing first (server-first protocols: SMTP, MySQL) waits sniffWait
//     (500 ms) before the proxy goes by the stub's name.
//   - Each allowed connection resolves its name on the host (no cache): a DNS round trip.
//   - Connections the proxy accepts before upstream answers look connected to the client; a
//     refused or unreachable upstream closes them (the client sees EOF or a reset, not
//     ECONNREFUSED).
package netproxy
