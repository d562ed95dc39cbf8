# udp.py send HOST PORT TEXT: one datagram (a statsd-like metric); udp.py sink LOG HOST:PORT...:
# append every datagram received on those addresses to LOG, a line each.
import select, socket, sys

if sys.argv[1] == "send":
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.sendto(sys.argv[4].encode(), (sys.argv[2], int(sys.argv[3])))
    sys.exit(0)
socks = []
for a in sys.argv[3:]:
    h, p = a.rsplit(":", 1)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((h, int(p)))
    socks.append(s)
while True:
    for s in select.select(socks, [], [])[0]:
        data, _ = s.recvfrom(65535)
        with open(sys.argv[2], "a") as f:
            f.write(data.decode(errors="replace") + "\n")
