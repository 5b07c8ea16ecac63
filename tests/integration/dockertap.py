#!/usr/bin/env python3
"""dockertap.py LISTEN UPSTREAM LOG: a Unix socket that passes every byte
to UPSTREAM (Docker's socket) and back, and appends the request line of
each HTTP request it sees to LOG. Hijacked exec streams are copied as
they are. Runs until killed."""
import os
import re
import socket
import sys
import threading

LISTEN, UPSTREAM, LOG = sys.argv[1:4]
REQ = re.compile(rb"(?:^|\r\n)((?:GET|POST|PUT|DELETE|HEAD) \S+) HTTP/1\.[01]\r\n")
lock = threading.Lock()


def pump(src, dst, log):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            if log:
                with lock, open(LOG, "ab") as f:
                    for m in REQ.finditer(data):
                        f.write(m.group(1) + b"\n")
            dst.sendall(data)
    except OSError:
        pass
    for s in (src, dst):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def serve(client):
    up = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    up.connect(UPSTREAM)
    threading.Thread(target=pump, args=(up, client, False),
                     daemon=True).start()
    pump(client, up, True)


def main():
    if os.path.exists(LISTEN):
        os.unlink(LISTEN)
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(LISTEN)
    srv.listen(64)
    while True:
        c, _ = srv.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()


main()
