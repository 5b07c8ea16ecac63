"""connect.py HOST PORT: one direct TCP connection, no proxy; prints the outcome."""
import socket
import sys

host, port = sys.argv[1], int(sys.argv[2])
fam = socket.AF_INET6 if ":" in host else socket.AF_INET
s = socket.socket(fam, socket.SOCK_STREAM)
s.settimeout(3)
try:
    s.connect((host, port))
    print("CONNECTED %s:%d" % (host, port))
    sys.exit(0)
except OSError as e:
    print("refused %s:%d: %s" % (host, port, e))
    sys.exit(1)
