# aio.py HOST PORT: python's asyncio (getaddrinfo in the loop's executor) fetching / over HTTP.
import asyncio, sys


async def main(host, port):
    r, w = await asyncio.open_connection(host, port)
    w.write(("GET / HTTP/1.0\r\nHost: %s:%d\r\n\r\n" % (host, port)).encode())
    await w.drain()
    print((await r.read()).decode().split("\r\n\r\n", 1)[1].strip())


asyncio.run(main(sys.argv[1], int(sys.argv[2])))
