#!/usr/bin/env python3
"""Loopback upstreams of the sandgate-proxy load tests, in their own process
(so their sockets do not count against the clients' descriptor limit).

Ports, all on 127.0.0.1, printed once as one JSON line on stdout:
  http     HTTP/1.1 keep-alive server: any request gets 200 and a small JSON
           body; /big?n=BYTES sends BYTES bytes; /__stats (asked directly,
           not through the proxy) returns the counters as JSON. Request
           bodies framed by Content-Length are read and counted.
  hang     accepts, reads, never answers
  reset    accepts, then resets the connection (SO_LINGER 0)
  trickle  reads a request head, then sends a 200 response one byte every
           100 ms
  sink     reads until EOF, then answers "got N sha256" and closes (tests
           that a half-close travels through a tunnel)

Counters: accepts per port, requests on http, open connections per port.
The process exits when its stdin closes (the parent went away) or on
SIGTERM.
"""

import asyncio
import hashlib
import json
import os
import resource
import signal
import socket
import struct
import sys

TRICKLE_BODY = b"0123456789abcdefghij"
counters = {"accepts": {}, "open": {}, "requests": 0, "body_bytes": 0}


def raise_nofile():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def track(name):
    """Decorator: count accepts and open connections of a handler."""
    def wrap(fn):
        async def handler(reader, writer):
            counters["accepts"][name] = counters["accepts"].get(name, 0) + 1
            counters["open"][name] = counters["open"].get(name, 0) + 1
            try:
                await fn(reader, writer)
            except (ConnectionError, asyncio.IncompleteReadError,
                    asyncio.LimitOverrunError, ValueError):
                pass
            finally:
                counters["open"][name] -= 1
                writer.close()
        return handler
    return wrap


async def read_head(reader):
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, target = lines[0].split(" ")[:2]
    fields = {}
    for line in lines[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            fields[k.strip().lower()] = v.strip()
    return method, target, fields


@track("http")
async def serve_http(reader, writer):
    while True:
        try:
            method, target, fields = await read_head(reader)
        except asyncio.IncompleteReadError:
            return
        n = int(fields.get("content-length", "0"))
        if n:
            body = await reader.readexactly(n)
            counters["body_bytes"] += len(body)
        if target == "/__stats":
            out = json.dumps(counters).encode()
        else:
            counters["requests"] += 1
        close = fields.get("connection", "").lower() == "close"
        if target.startswith("/big?n=") or "/big?n=" in target:
            size = int(target.split("n=", 1)[1])
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n"
                         % size)
            block = bytes(range(256)) * 256
            left = size
            while left > 0:
                k = min(left, len(block))
                writer.write(block[:k])
                left -= k
                await writer.drain()
        else:
            if target != "/__stats":
                out = json.dumps({"method": method, "path": target}).encode()
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json"
                         b"\r\nContent-Length: %d\r\n%s\r\n%s"
                         % (len(out), b"Connection: close\r\n" if close
                            else b"", out))
            await writer.drain()
        if close:
            return


@track("hang")
async def serve_hang(reader, writer):
    while await reader.read(65536):
        pass


@track("reset")
async def serve_reset(reader, writer):
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                    struct.pack("ii", 1, 0))


@track("trickle")
async def serve_trickle(reader, writer):
    await read_head(reader)
    resp = (b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close"
            b"\r\n\r\n%s" % (len(TRICKLE_BODY), TRICKLE_BODY))
    for i in range(len(resp)):
        writer.write(resp[i:i + 1])
        await writer.drain()
        await asyncio.sleep(0.1)


@track("sink")
async def serve_sink(reader, writer):
    h = hashlib.sha256()
    n = 0
    while True:
        data = await reader.read(65536)
        if not data:
            break
        h.update(data)
        n += len(data)
    writer.write(b"got %d %s\n" % (n, h.hexdigest().encode()))
    await writer.drain()


async def watch_stdin():
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.buffer.read)


async def main():
    raise_nofile()
    handlers = {"http": serve_http, "hang": serve_hang, "reset": serve_reset,
                "trickle": serve_trickle, "sink": serve_sink}
    servers, ports = [], {}
    for name, fn in handlers.items():
        srv = await asyncio.start_server(fn, "127.0.0.1", 0, backlog=4096,
                                         limit=1 << 20)
        servers.append(srv)
        ports[name] = srv.sockets[0].getsockname()[1]
    print(json.dumps(ports), flush=True)
    stop = asyncio.get_running_loop().create_future()
    asyncio.get_running_loop().add_signal_handler(
        signal.SIGTERM, lambda: stop.done() or stop.set_result(None))
    stdin_task = asyncio.ensure_future(watch_stdin())
    await asyncio.wait([stop, stdin_task],
                       return_when=asyncio.FIRST_COMPLETED)
    for srv in servers:
        srv.close()
    # The stdin reader thread may still block: leave without joining it.
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    asyncio.run(main())
