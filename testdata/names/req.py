# req.py URL: python requests (urllib3, getaddrinfo; http_proxy honoured) prints the body.
import sys, requests

print(requests.get(sys.argv[1], timeout=10).text.strip())
