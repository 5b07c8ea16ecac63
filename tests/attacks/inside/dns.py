"""dns.py SERVER NAME: one UDP DNS query for NAME (type A); prints rcode and answers."""
import random
import socket
import struct
import sys

server, name = sys.argv[1], sys.argv[2]
qid = random.randrange(65536)
q = struct.pack(">HHHHHH", qid, 0x0100, 1, 0, 0, 0)
for label in name.rstrip(".").split("."):
    q += bytes([len(label)]) + label.encode()
q += b"\x00" + struct.pack(">HH", 1, 1)
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(4)
try:
    s.sendto(q, (server, 53))
    r, _ = s.recvfrom(4096)
except OSError as e:
    print("no answer from %s for %s: %s" % (server, name, e))
    sys.exit(1)
rcode, an = r[3] & 0xF, struct.unpack(">H", r[6:8])[0]
addrs = []
if rcode == 0 and an:
    # answers follow the question; take every 4-byte A rdata
    i = 12 + len(q) - 12
    for _ in range(an):
        i += 2 if r[i] & 0xC0 == 0xC0 else r.index(b"\x00", i) + 1 - i
        typ, _cls, _ttl, ln = struct.unpack(">HHIH", r[i:i + 10])
        i += 10
        if typ == 1 and ln == 4:
            addrs.append(socket.inet_ntoa(r[i:i + 4]))
        i += ln
print("rcode %d answers %s" % (rcode, ",".join(addrs) or "none"))
sys.exit(0 if addrs else 1)
