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
//   - mounts a generated resolv.conf (only the stub, no search domains, single-request: one
//     query per datagram, so glibc sends with send rather than sendmmsg) over /etc/resolv.conf,
//     and the host's /etc/hosts reduced to its loopback lines over /etc/hosts: a name the
//     host resolves from the file (an internal registry, a CI service container) is asked of
//     the stub like any other, instead of being dialled by its raw address (refused). The
//     proxy resolves it on the host, where the file counts (Go's resolver reads it, as
//     glibc's files source does). A name the file gives a loopback address keeps it: inside,
//     that is the sandbox's own loopback, as learn records a loopback connect by address.
//
// The listening sockets go to the host-side sysprof process (the enforcer takes them with
// pidfd_getfd), where the stub and the proxy run: upstream connections are dialled from the
// host's network namespace, so nothing in the sandbox's namespace routes anywhere.
//
// The stub answers each name the profile allows with a synthetic loopback address unique to
// that name (127.77.0.0/16, assigned in sorted order: Synthetic); AAAA and other types of an
// allowed name get an empty answer (clients use the A record), except for a name of the host's
// hosts file, answered in the families the file gives it (Plan.HostsFamilies: AAAA with the
// synthetic address's IPv6 twin in fd00:5359:5350::/96 for an IPv6 line, no A without an IPv4
// line: curl -6 and getent ahostsv6 get an address, glibc sorts what it sorted on the host);
// every other name is NXDOMAIN
// and a denial with the name. A resolve-only name (Plan.AddResolveOnly: looked up when
// learned, never connected to) is answered the same way; no rule connects to it, so a
// connection to its address is refused. localhost and every name under it answer 127.0.0.1
// (RFC 6761), even when learned as a resolve-only name.
//
// The proxy takes the name from the synthetic address dialled, reads the client's first bytes
// and checks them against it:
//
//   - A TLS ClientHello: its SNI (parsed, never terminated: no certificates) must be the
//     name. A ClientHello without SNI passes only when the stub answered that name in this
//     run (the synthetic address then stands for the name; one found some other way does
//     not). A ClientHello split over records, or malformed, is refused.
//   - Plain HTTP/1: every request of the connection, not only the first, is parsed (a
//     strict parser: any method; leading empty lines skipped as servers do; bare LF, folded
//     or malformed fields, two Hosts, Transfer-Encoding with Content-Length, Upgrade and
//     HTTP/2's prior-knowledge preface refused) and its Host (or absolute target) must be
//     the name; a request without either is refused. Bodies are forwarded by their framing
//     (Content-Length by splice, chunked parsed), so the next request's header is read where
//     the server reads it. A refused request ends the connection (the answers to the
//     requests before it still go back) with a denial.
//   - An SSH banner, or a client silent for sniffWait (500 ms: the server speaks first,
//     SMTP, MySQL): nothing of the client's goes upstream until the server has spoken, within
//     serverFirstWait (10 s). An HTTP server never speaks first, so such a connection cannot
//     carry a request past the Host check.
//   - Anything else (other client-first protocols: PostgreSQL, Redis, git://) is refused
//     and reported on a name rule: its destination cannot be checked by name. An address
//     (CIDR) rule allows the address whatever is spoken on it, unsniffed.
//
// A request in a forward proxy's form (an absolute-form target or CONNECT host:port naming
// another host than the connection's name: http_proxy's proxy) passes when a rule allows its
// target host:port to the socket's holders, exactly as a connection straight to the target
// would need (learn writes the target as a rule of its own: ProxyTarget); the proxy named by
// the connection dials it. What a CONNECT tunnel carries is checked against its target as a
// connection's first bytes are: a TLS SNI, every HTTP request's Host; an SSH banner or a server
// that speaks first passes, anything else is refused.
//
// It then resolves the name from the host side at connect time (so an address change
// between the query and the connect, or between two connects, denies nothing;
// Options.Resolve overrides, like curl's --resolve), dials it, and splices both ways.
//
// # What never passes unless named
//
//   - Link-local addresses (169.254.0.0/16, fe80::/10) and fd00:ec2::254 (cloud metadata):
//     never dialled for a name, only for an IP/CIDR rule that lies inside them.
//   - Loopback: a name resolved by the host's DNS to a loopback address is refused (DNS
//     rebinding to the host's own services); a --resolve override or an IP rule may name it.
//   - Raw IP connects: a destination that is not a synthetic address passes only under an
//     IP or CIDR rule of the profile that covers it (then it is dialled as is).
//   - UDP: the stub's DNS, the exact address:port of each UDP rule, and the synthetic
//     address:port of each UDP rule by name (relayed to the name resolved on the host when a
//     flow starts: RelayUDPNames) (Inside.UDP, udp.go):
//     the init stage binds a socket to that destination inside, and the host side relays
//     each client socket's datagrams to it from a socket of its own and the answers back.
//     Datagrams are not checked per binary. QUIC and any other datagram finds no socket (ICMP
//     port unreachable: the client falls back to TCP). The init stage opens raw ICMP and ICMPv6
//     sockets in the namespace (CAP_NET_RAW, also as an ordinary user: it is the namespace's)
//     and the proxy reads those errors (icmp.go): each datagram that did not leave is a
//     denial, a DNS query sent straight to a resolver's address with the name it asked.
//     Datagrams between the sandbox's own loopback sockets are not. Without CAP_NET_RAW
//     (ObservesDatagrams false) they go unrecorded and the report says so.
//
// Private ranges (10/8, 172.16/12, 192.168/16, fc00::/7) are dialled when an allowed name
// resolves to them: naming an internal host is how a profile allows it.
//
// # Per binary
//
// A rule learned "by" a binary (policy Provenance.By) passes only for a connection whose
// client socket is held by that very file, compared by identity (dev and inode of
// /proc/PID/exe against the rule's path resolved beneath the sandbox's root once a run, when
// the proxy starts, before the command runs (a path missing then: once found): a copy of its
// bytes elsewhere is another file, a hard link the same, a mount the command made over the
// path is not looked at, nor a file it put there later), or by one of its transport helpers (helpers.go: git-remote-https,
// ssh; a system directory's file, run by the binary with only helpers between them).
// Nothing else that runs under the binary passes: a hook, a lifecycle or build script, a
// process forked before its parent exec'd the binary. Every process holding the socket
// must pass, not only the first found: a process outside the binary's tree that got the
// socket (pidfd_getfd, SCM_RIGHTS) is refused, and so is a descendant that inherited the
// socket from an ancestor holding it that runs another file (a child the binary gives
// its connected socket borrows it; a forked copy of the same program, ssh's mux, does not).
// The process that made the connect must pass too, as it was then (Options.ConnectsSeen:
// every connect waits in sysprof's supervisor, which tells the proxy who made it, by socket
// inode, before the call goes on: SawConnect; a connect it did not see is refused): a
// process that wrote its request and then exec'd the binary can win the race against both
// lookups of the holders, not against that record. A transport helper passes as that process
// only when the kernel said its parents' files ran it (Options.ExecOrder: bpf/execorder.c on
// a root run's cgroup, exec ids by socket cookie): a helper forked before its parent exec'd
// the binary has the binary as its parent in /proc, not in that record; without the record
// (an ordinary user) no helper passes as the connector. A keep-alive HTTP connection's holders
// are looked up again at every request after the first, through a forward proxy too.
// The holders are looked up at accept and again once the client's first bytes arrived (a
// process that wrote its request and then exec'd the binary ran another file at accept;
// for an address rule both right at accept): the socket's inode by an exact sock_diag
// lookup on a netlink socket the init stage opened in the sandbox's namespace (0.5 ms measured on a busy host; reading /proc/PID/net/tcp
// walks the host's whole socket table, 3-35 ms), then every process of the sandbox's PID
// namespace holding it (its init stage's tree: orphans are reparented to it). A rule with by
// "any" (or none) passes for every binary. The lookup runs only for per-binary rules,
// denials and --report's log; a refused query's lookup runs off the stub's goroutine (at
// most dnsLookups at once; past that the denial has no binary), before its NXDOMAIN is sent.
// The stub answers each query on a goroutine of its own (at most dnsAnswers at once): one
// whose answer waits for the host's resolver (Plan.HostHas6) holds up no other.
//
// # Brokered credentials
//
// A name with a credentials rule (Options.Broker, broker.go) is not spliced: the proxy
// terminates the client's TLS with a certificate for the name signed by the run's CA (ECDSA
// P-256, valid 24 h, its key only in this process's memory; the enforcer puts its certificate
// in the sandbox's trust), dials the upstream itself and verifies it against the host's trust
// (x509.SystemCertPool: SSL_CERT_FILE and SSL_CERT_DIR honoured), offering only HTTP/1.1.
// Plain HTTP to such a name is read the same way without TLS. Each request is read whole
// (net/http's strict reader) and checked: the stand-in of any brokered credential in the
// target, the Host or a header other than the credential's own header is refused; the
// credential's header has the stand-in swapped for the real value (Basic: the password inside
// base64(user:password)); the body is scanned as it is forwarded and the request cut off when
// the stand-in appears in it; a response that carries the real value back (an echo) is cut off
// before it. Every request the real value went out with is logged (Broker.Uses: time, binary,
// method, host, path, status, bytes; a 401 or 403 said plainly). Refused: an upstream that asks
// for a client certificate, chooses another protocol than HTTP/1.1, fails verification; HTTP
// Upgrade, CONNECT and 101 answers. A stand-in is refused critical also in a DNS query and in
// the header of a plain-HTTP request to any other name. The broker's sockets are read and
// written 256 KiB at a time under crypto/tls (rawConn, tlsBatch: one system call for many
// records), its TLS sessions with the upstreams are resumed, and the echo scan holds back
// len(value)-1 bytes so that a value cut across reads is still seen (BENCHMARKS.md).
//
// # Not covered
//
//   - Ports no rule names have no listener: a connect there (DNS over TCP included) is
//     refused by Landlock (EACCES) before the proxy sees it; as root the guard reports it
//     (package enforcer/guard), as an ordinary user it goes unrecorded.
//   - ICMP errors are rate limited by the namespace's global ICMP budget (a burst of 50, then
//     1000 a second): a datagram flood is recorded in part (each kind once is enough).
//   - A stand-in sent over TLS to a name without a credentials rule, or in the body of a
//     plain-HTTP request to one, is not seen (those connections are spliced).
//   - What is inside TLS (HTTP/2 streams, a Host header other than the SNI: domain fronting)
//     is not seen; a CDN that routes by Host inside TLS can be reached under an allowed SNI.
//   - A server that reads less of a request body than its framing says (answers without
//     reading it and keeps the connection) would take the rest for further requests the
//     proxy forwarded as body (client-side desync); servers that follow RFC 9112 read or
//     close.
//   - HTTP Upgrade (WebSocket over plain HTTP, h2c) is refused, not carried.
//   - A forward proxy reached by an address rule (http_proxy=http://127.0.0.1:3128: learn
//     writes a loopback proxy by its address) is not sniffed, so the targets asked of it are
//     not checked; a proxy reached by name is.
//   - Holders are checked once per connection: a process that gets the socket afterwards (a
//     fork without close-on-exec after the first request, SCM_RIGHTS, pidfd_getfd under
//     ptrace permission, which the learned seccomp filter refuses unless it was learned) is
//     not seen.
//   - Each allowed connection resolves its name on the host (no cache): a DNS round trip.
//   - Connections the proxy accepts before upstream answers look connected to the client; a
//     refused or unreachable upstream closes them (the client sees EOF or a reset, not
//     ECONNREFUSED).
package netproxy
