# sinks.py: the attacker's and the registry's ends for e2e/supplychain_test.go, run in the
# test's own network namespace. Everything any of them receives is appended to LOG.
#   sinks.py LOG net SOCKDIR N   the registry (HTTP on 10.78.0.1:8080: 200 to every request it
#                                parses), the resolver's address (DNS on 10.78.0.53:53, UDP and
#                                TCP), a UDP sink (10.78.0.9:9999), N unix sockets SOCKDIR/sN
#                                and TCP sinks (10.78.0.9:4444-4446; /redirect points at 4445)
#   sinks.py LOG unix PATH       one unix socket (started in another network namespace)
#   sinks.py LOG named PATH...   a unix socket at each PATH (an agent's, a bus's), logged as
#                                unix-BASENAME
import os
import selectors
import socket
import sys

log = open(sys.argv[1], "ab", buffering=0)
sel = selectors.DefaultSelector()


def note(what, data=b""):
    log.write(what.encode() + b" " + data.replace(b"\n", b"\\n") + b"\n")


def listen(fam, typ, addr, what):
    s = socket.socket(fam, typ)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(addr)
    if typ == socket.SOCK_STREAM:
        s.listen(16)
    sel.register(s, selectors.EVENT_READ, (what, typ))


mode = sys.argv[2]
if mode == "net":
    listen(socket.AF_INET, socket.SOCK_STREAM, ("10.78.0.1", 8080), "http")
    listen(socket.AF_INET, socket.SOCK_DGRAM, ("10.78.0.53", 53), "dns-udp")
    listen(socket.AF_INET, socket.SOCK_STREAM, ("10.78.0.53", 53), "dns-tcp")
    listen(socket.AF_INET, socket.SOCK_DGRAM, ("10.78.0.9", 9999), "udp")
    for port in (4444, 4445, 4446):
        listen(socket.AF_INET, socket.SOCK_STREAM, ("10.78.0.9", port), "tcp%d" % port)
    for i in range(int(sys.argv[4])):
        listen(socket.AF_UNIX, socket.SOCK_STREAM, os.path.join(sys.argv[3], "s%d" % i), "unix-s%d" % i)
elif mode == "named":
    for p in sys.argv[3:]:
        listen(socket.AF_UNIX, socket.SOCK_STREAM, p, "unix-" + os.path.basename(p))
        os.chmod(p, 0o777)
else:
    listen(socket.AF_UNIX, socket.SOCK_STREAM, sys.argv[3], "unix-netns")
    os.chmod(sys.argv[3], 0o777)
if mode == "net":
    for i in range(int(sys.argv[4])):
        os.chmod(os.path.join(sys.argv[3], "s%d" % i), 0o777)
open(sys.argv[1] + ".ready-" + mode, "w").close()

while True:
    for key, _ in sel.select():
        what, typ = key.data
        s = key.fileobj
        if typ == socket.SOCK_DGRAM and what != "conn":
            data, _ = s.recvfrom(4096)
            note(what, data)
        elif what.startswith("conn:"):
            try:
                data = s.recv(65536)
            except OSError:
                data = b""
            if not data:
                sel.unregister(s)
                s.close()
                continue
            note(what[5:], data)
            if what == "conn:http" and data.startswith(b"GET /redirect"):
                s.sendall(b"HTTP/1.1 302 Found\r\nLocation: http://10.78.0.9:4445/loot-redirected\r\nContent-Length: 0\r\n\r\n")
            elif what == "conn:http":
                # One answer per request head it sees (the registry's 200).
                for _ in range(data.count(b"\r\n\r\n")):
                    s.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n")
                # One exchange per connection: the payload reads until the close.
                sel.unregister(s)
                s.close()
        else:
            c, _ = s.accept()
            note(what + "-accept")
            sel.register(c, selectors.EVENT_READ, ("conn:" + what, socket.SOCK_STREAM))
