# banner.py HOST:PORT LOG: a server that speaks first (SSH's banner), then appends the client's
# first line to LOG and closes.
import socket, sys, threading

s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
h, p = sys.argv[1].rsplit(":", 1)
s.bind((h, int(p)))
s.listen(16)


def handle(c):
    c.sendall(b"SSH-2.0-OpenSSH_9.2 names-test\r\n")
    d = c.makefile("rb").readline()
    with open(sys.argv[2], "a") as log:
        log.write(d.decode(errors="replace").strip() + "\n")
    c.close()


while True:
    c, _ = s.accept()
    threading.Thread(target=handle, args=(c,)).start()
