"""rawsock.py: try raw and packet sockets (need CAP_NET_RAW)."""
import socket

for name, fam, typ, proto in (
        ("AF_INET SOCK_RAW ICMP", socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP),
        ("AF_INET SOCK_RAW TCP", socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_TCP),
        ("AF_PACKET SOCK_RAW", socket.AF_PACKET, socket.SOCK_RAW, 0x0300)):
    try:
        s = socket.socket(fam, typ, proto)
        print("%s: OPENED" % name)
        s.close()
    except OSError as e:
        print("%s: %s" % (name, e))
