"""Harness of the sandgate-proxy load, soak, fault and valgrind runs
(standard library only; reuses tests/integration/proxylib.py).

Pieces:
  Upstream      tests/load/upstream.py in its own process: http (keep-alive),
                hang, reset, trickle and sink ports on 127.0.0.1.
  LoadProxy     a proxylib.Proxy whose policy also allowlists those ports
                (set "load", tls optional), optionally under valgrind.
  Sampler       VmRSS and open descriptors of the proxy, sampled.
  clients       asyncio clients: normal (keep-alive GETs, some blocked),
                idle tunnels, slowloris, vanishing, half-closing.
  check_log     every line of security-events.jsonl parsed, seq and the
                SHA-256 chain checked (eventlog.h).
  scenarios     one function per load scenario, sized by arguments, each on
                a fresh proxy, each returning a Result (a table row plus the
                invariants that failed).

Every loop is bounded in count and time; every process started is stopped;
every socket goes to 127.0.0.1.
"""

import asyncio
import hashlib
import json
import os
import re
import resource
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import types
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))

import proxylib  # noqa: E402

LOOP = "127.0.0.1"
ZERO_HASH = "0" * 64


def raise_nofile(want=65536):
    """Raise RLIMIT_NOFILE (the hard limit too when allowed, which root
    is); children (proxy, upstream) inherit it. Returns the new soft."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE,
                           (max(want, hard), max(want, hard)))
    except (ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


# ----------------------------------------------------------------- upstream

class Upstream:
    """tests/load/upstream.py as a child process; .ports by name."""

    def __init__(self):
        self.proc = None
        self.ports = {}

    def start(self, timeout=10):
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "upstream.py")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            env=proxylib.clean_env())
        line = b""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not line:
            line = self.proc.stdout.readline()
        if not line:
            self.stop()
            raise RuntimeError("upstream.py did not print its ports")
        self.ports = json.loads(line)
        return self

    def stats(self):
        """The upstream's counters (asked directly, not through a proxy)."""
        url = "http://%s:%d/__stats" % (LOOP, self.ports["http"])
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(url, timeout=10) as r:
            return json.loads(r.read())

    def stop(self):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                f.close()
            except OSError:
                pass
        self.proc = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


LOAD_POLICY = """\
description: sandgate-proxy load tests (loopback fault upstreams)
owner: sandgate-tests@example.invalid
allow:
  - host: allowed.test
    ports: [%s]
    allow_private: true
    tls: optional
    rationale: loopback upstreams that hang, reset, trickle or sink
"""


class LoadProxy(proxylib.Proxy):
    """A proxylib.Proxy with the "test" and "load" sets in force.

    valgrind: a list of valgrind arguments to run the proxy under (its
    report goes to .valgrind_log), or None.
    """

    def __init__(self, workdir, upstream, extra_args=(), name="proxy",
                 valgrind=None, log_dir=None):
        ports = types.SimpleNamespace(
            http_port=upstream.ports["http"],
            tls_port=proxylib.free_port(),
            refused_port=proxylib.free_port())
        super().__init__(workdir, ports, sets="test,load",
                         extra_args=extra_args, name=name)
        with open(os.path.join(self.policy_dir, "load.yaml"), "w") as f:
            f.write(LOAD_POLICY % ", ".join(
                str(upstream.ports[k])
                for k in ("hang", "reset", "trickle", "sink")))
        if log_dir is not None:
            self.log_dir = log_dir
            self.log_path = os.path.join(log_dir, "security-events.jsonl")
        self.valgrind = valgrind
        self.valgrind_log = os.path.join(self.dir, "valgrind.txt")

    def argv(self):
        args = super().argv()
        if self.valgrind is None:
            return args
        return (["valgrind", "--log-file=" + self.valgrind_log] +
                list(self.valgrind) + args)

    def sanitized(self):
        """1 when the binary is built with AddressSanitizer: its
        quarantine keeps freed memory on purpose (LeakSanitizer's report
        at exit is the leak check then)."""
        try:
            with open(proxylib.PROXY_BIN, "rb") as f:
                return b"__asan_init" in f.read()
        except OSError:
            return False

    def nofile(self):
        """The proxy's descriptor limit (soft), from /proc/PID/limits."""
        with open("/proc/%d/limits" % self.pid) as f:
            for line in f:
                if line.startswith("Max open files"):
                    return int(line.split()[3])
        return 0

    def fds(self):
        return len(os.listdir("/proc/%d/fd" % self.pid))

    def sigkill(self):
        self.kill()
        try:
            self._stderr.close()
        except (AttributeError, OSError):
            pass


# ------------------------------------------------------------------ sampler

def heap_in_use(proxy, timeout=60):
    """Bytes the proxy's malloc has handed out and not taken back (glibc
    malloc_stats(), called in the process through gdb; its report goes
    to the proxy's stderr). None when gdb or the report is missing (no
    gdb, no ptrace permission, or a sanitizer's allocator)."""
    if not shutil.which("gdb"):
        return None
    before = proxy.stderr().count("in use bytes")
    try:
        subprocess.run(["gdb", "-p", str(proxy.pid), "-batch", "-nx",
                        "-ex", "call (void)malloc_stats()"],
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = proxy.stderr()
    if text.count("in use bytes") <= before:
        return None
    tail = text[text.rfind("Total (incl. mmap):"):]
    m = re.search(r"in use bytes\s*=\s*(\d+)", tail)
    return int(m.group(1)) if m else None


class Sampler:
    """Samples the proxy's VmRSS (KiB) and open descriptors as a task."""

    def __init__(self, proxy, interval=0.1):
        self.proxy = proxy
        self.interval = interval
        self.rss_peak = 0
        self.fds_peak = 0
        self._task = None
        self._n = 0

    def sample(self):
        try:
            rss = self.proxy.rss_kib()
            self.rss_peak = max(self.rss_peak, rss)
            self._n += 1
            if self._n % 5 == 1:
                self.fds_peak = max(self.fds_peak, self.proxy.fds())
        except (OSError, proxylib.ProxyError):
            pass

    async def _run(self):
        while True:
            self.sample()
            await asyncio.sleep(self.interval)

    def start(self):
        self.sample()
        self._task = asyncio.ensure_future(self._run())

    async def stop(self):
        self._task.cancel()
        try:
            await self._task
        except asyncio.CancelledError:
            pass
        self.sample()


# ------------------------------------------------------------------ clients

class Stats:
    """What a group of clients saw."""

    def __init__(self):
        self.requests = 0
        self.errors = 0
        self.blocked = 0
        self.latencies = []
        self.samples = []      # the first error messages

    def error(self, what):
        self.errors += 1
        if len(self.samples) < 5:
            self.samples.append(what)

    def p99_ms(self):
        if not self.latencies:
            return None
        v = sorted(self.latencies)
        return v[int(0.99 * (len(v) - 1))] * 1000.0

    def merge(self, other):
        self.requests += other.requests
        self.errors += other.errors
        self.blocked += other.blocked
        self.latencies += other.latencies
        for s in other.samples:
            if len(self.samples) < 5:
                self.samples.append(s)


async def connect(port, timeout=10):
    return await asyncio.wait_for(
        asyncio.open_connection(LOOP, port, limit=1 << 20), timeout)


async def read_response(reader, connect_ok=False):
    """(status, {lower-case name: value}, body) of one response."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head[:-4].split(b"\r\n")
    status = int(lines[0].split(b" ", 2)[1])
    fields = {}
    for line in lines[1:]:
        k, _, v = line.partition(b":")
        fields[k.strip().lower().decode("latin-1")] = \
            v.strip().decode("latin-1")
    if connect_ok and status == 200:
        return status, fields, b""
    if "content-length" in fields:
        body = await reader.readexactly(int(fields["content-length"]))
    else:
        body = await reader.read(1 << 24)
    return status, fields, body


def get_head(host, path="/", extra=""):
    return ("GET http://%s%s HTTP/1.1\r\nHost: %s\r\n%s\r\n"
            % (host, path, host, extra)).encode()


def rst_close(writer):
    """Close with a TCP reset (SO_LINGER 0), like a client that vanished."""
    sock = writer.get_extra_info("socket")
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                        struct.pack("ii", 1, 0))
    except OSError:
        pass
    writer.transport.abort()


async def close_quietly(writer):
    if writer is None:
        return
    writer.close()
    try:
        await asyncio.wait_for(writer.wait_closed(), 2)
    except (OSError, asyncio.TimeoutError):
        pass


async def normal_client(port, http_port, stats, deadline, max_requests,
                        blocked_every=0, new_conn_every=25, pace=0.0,
                        seed=0, stop=None):
    """Keep-alive GETs to allowed.test; every blocked_every-th request
    goes to blocked.test (a 403 that keeps the connection); every
    new_conn_every-th request opens a new connection. Stops at deadline
    (monotonic) or after max_requests."""
    reader = writer = None
    allowed = "allowed.test:%d" % http_port
    for i in range(max_requests):
        if time.monotonic() >= deadline or (stop and stop.is_set()):
            break
        blocked = blocked_every and (i + seed) % blocked_every == 0
        try:
            if writer is None:
                reader, writer = await connect(port)
            t0 = time.perf_counter()
            writer.write(get_head("blocked.test", "/b%d" % i) if blocked
                         else get_head(allowed, "/n%d" % i))
            status, fields, body = await asyncio.wait_for(
                read_response(reader), 20)
            stats.latencies.append(time.perf_counter() - t0)
            stats.requests += 1
            if status != (403 if blocked else 200):
                stats.error("status %d for %s" % (
                    status, "blocked" if blocked else "allowed"))
            elif blocked:
                stats.blocked += 1
            if fields.get("connection", "").lower() == "close" or \
                    (new_conn_every and i % new_conn_every == 0):
                await close_quietly(writer)
                writer = None
        except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError,
                ValueError, IndexError) as e:
            stats.requests += 1
            stats.error("normal client: %r" % e)
            await close_quietly(writer)
            writer = None
        if pace:
            await asyncio.sleep(pace)
    await close_quietly(writer)


async def normal_load(port, http_port, clients, seconds, max_requests=10 ** 6,
                      blocked_every=10, pace=0.0, stop=None):
    """clients normal_client()s for seconds, or until the asyncio.Event
    stop is set; returns their Stats."""
    deadline = time.monotonic() + seconds
    parts = [Stats() for _ in range(clients)]
    await asyncio.gather(*[
        normal_client(port, http_port, parts[i], deadline,
                      max_requests // clients + 1, blocked_every,
                      pace=pace, seed=i, stop=stop)
        for i in range(clients)])
    total = Stats()
    for s in parts:
        total.merge(s)
    return total


async def open_tunnel(port, target):
    """A CONNECT tunnel; (reader, writer) after the 200."""
    reader, writer = await connect(port)
    try:
        writer.write(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n"
                      % (target, target)).encode())
        status, _, _ = await asyncio.wait_for(
            read_response(reader, connect_ok=True), 20)
    except BaseException:
        writer.close()
        raise
    if status != 200:
        writer.close()
        raise ValueError("CONNECT %s: status %d" % (target, status))
    return reader, writer


async def bounded_gather(n, fn, concurrency):
    """fn(i) for i in range(n), at most concurrency at once; results (an
    exception in place of a failed call's result)."""
    sem = asyncio.Semaphore(concurrency)

    async def one(i):
        async with sem:
            try:
                return await fn(i)
            except (OSError, asyncio.TimeoutError, ValueError,
                    asyncio.IncompleteReadError, IndexError) as e:
                return e
    return await asyncio.gather(*[one(i) for i in range(n)])


# ------------------------------------------------------------ log checking

def check_log(path, first_seq=1, prev=ZERO_HASH):
    """Check security-events.jsonl: every line whole JSON, seq consecutive
    from first_seq, prev/hash chained (SHA-256 of the line without its hash
    member, eventlog.h). Returns (events, problems)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return [], []
    problems, events = [], []
    if data and not data.endswith(b"\n"):
        problems.append("last line not terminated by a newline")
    seq = first_seq
    for no, line in enumerate(data.split(b"\n")[:-1], 1):
        try:
            ev = json.loads(line)
        except ValueError as e:
            problems.append("line %d not JSON (%s): %r" % (no, e, line[:120]))
            continue
        cut = line.rfind(b',"hash":"')
        want = hashlib.sha256(line[:cut] + b"}").hexdigest() \
            if cut > 0 else None
        if ev.get("hash") != want:
            problems.append("line %d: hash does not match" % no)
        if ev.get("prev") != prev:
            problems.append("line %d: prev does not chain" % no)
        if ev.get("seq") != seq:
            problems.append("line %d: seq %r, expected %d"
                            % (no, ev.get("seq"), seq))
        seq = (ev.get("seq") or seq) + 1
        prev = ev.get("hash")
        events.append(ev)
    return events, problems[:20]


def audit_verify(log_dir):
    """`sandgate audit verify` on log_dir's log when the binary exists:
    (returncode, output), or None when it is not built."""
    exe = os.path.join(proxylib.BIN, "sandgate")
    if not os.access(exe, os.X_OK):
        return None
    path = os.path.join(log_dir, "security-events.jsonl")
    for argv in ([exe, "audit", "verify", "--log-dir", log_dir],
                 [exe, "audit", "verify", path]):
        r = proxylib.run(argv, timeout=120)
        if "usage" not in (r.stderr + r.stdout).lower() or r.returncode == 0:
            return r.returncode, (r.stdout + r.stderr).strip()
    return r.returncode, (r.stdout + r.stderr).strip()


# ------------------------------------------------------------------ results

class Result:
    """One row of the table, and the invariants that failed."""

    def __init__(self, name):
        self.name = name
        self.requests = 0
        self.errors = 0
        self.p99_ms = None
        self.rss = [0, 0, 0]       # before, peak, after (KiB)
        self.heap = [None, None]   # malloc'd bytes in use before, after
        self.fds = [0, 0, 0]
        self.events = 0
        self.blocked = 0
        self.failures = []
        self.notes = []
        self.warnings = []
        self.seconds = 0.0

    def check(self, cond, what):
        if not cond:
            self.failures.append(what)
        return cond

    @property
    def ok(self):
        return not self.failures


def print_table(results, out=sys.stdout):
    hdr = ("scenario", "requests", "errors", "p99 ms", "RSS MiB before/peak/"
           "after", "heap MiB before/after", "fds before/peak/after",
           "events/blocked", "secs", "ok")
    rows = []
    for r in results:
        rows.append((r.name, str(r.requests), str(r.errors),
                     "-" if r.p99_ms is None else "%.1f" % r.p99_ms,
                     "%.1f / %.1f / %.1f" % tuple(x / 1024.0 for x in r.rss),
                     "-" if None in r.heap else "%.2f / %.2f" % tuple(
                         x / 1048576.0 for x in r.heap),
                     "%d / %d / %d" % tuple(r.fds),
                     "%d/%d" % (r.events, r.blocked), "%.0f" % r.seconds,
                     "ok" if r.ok else "FAIL"))
    widths = [max(len(h), *(len(row[i]) for row in rows))
              for i, h in enumerate(hdr)]
    fmt = "  ".join("%%-%ds" % w for w in widths)
    print(fmt % hdr, file=out)
    print(fmt % tuple("-" * w for w in widths), file=out)
    for row in rows:
        print(fmt % row, file=out)
    for r in results:
        for n in r.notes:
            print("  %s: note: %s" % (r.name, n), file=out)
        for w in r.warnings:
            print("  %s: WARNING: %s" % (r.name, w), file=out)
        for f in r.failures:
            print("  %s: FAILED: %s" % (r.name, f), file=out)
    out.flush()
