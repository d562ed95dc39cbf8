# fwdproxy.py HOST:PORT LOG: a minimal HTTP forward proxy (http_proxy's): absolute-form requests
# and CONNECT tunnels, relayed to their target; each request line is appended to LOG.
import socket, sys, threading


def pipe(a, b):
    try:
        while True:
            d = a.recv(65536)
            if not d:
                break
            b.sendall(d)
    except OSError:
        pass
    try:
        b.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def handle(c):
    f = c.makefile("rb")
    line = f.readline().decode()
    while f.readline() not in (b"\r\n", b"\n", b""):
        pass
    with open(sys.argv[2], "a") as log:
        log.write(line)
    method, target, _ = line.split()
    if method == "CONNECT":
        host, port = target.rsplit(":", 1)
        u = socket.create_connection((host, int(port)))
        c.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        threading.Thread(target=pipe, args=(u, c)).start()
        pipe(c, u)
        return
    hostport, _, path = target.split("://", 1)[1].partition("/")
    host, _, port = hostport.partition(":")
    u = socket.create_connection((host, int(port or 80)))
    u.sendall(("%s /%s HTTP/1.0\r\nHost: %s\r\nConnection: close\r\n\r\n" % (method, path, hostport)).encode())
    pipe(u, c)
    c.close()


s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
h, p = sys.argv[1].rsplit(":", 1)
s.bind((h, int(p)))
s.listen(16)
while True:
    c, _ = s.accept()
    threading.Thread(target=handle, args=(c,)).start()
