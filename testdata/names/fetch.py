# python's socket (getaddrinfo) by urllib: prints the body of argv[1].
import sys, urllib.request
print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode().strip())
