"""The load scenarios of tests/load/run and the CI-sized
tests/integration/test_load_quick.py: each starts a fresh proxy, measures
its baseline (RSS, descriptors) after a warm-up, runs its load with
normal clients alongside, waits for the proxy to settle and returns a
loadlib.Result whose failures list the invariants that did not hold.
"""

import asyncio
import hashlib
import os
import socket
import time

import loadlib
from loadlib import proxylib  # noqa: E402 (the harness loadlib uses)
from loadlib import LOOP, Result, Sampler, Stats

# RSS "near baseline" after a load: within this many KiB, or within this
# share of the growth the load caused, whichever is larger.
RSS_SLACK_KIB = 4096
RSS_SLACK_SHARE = 0.10
# Heap bytes in use after a load, over the baseline, that still count as
# "returned": caches that fill once, plus libevent's per-descriptor map
# (an entry for every descriptor number ever used, about 75 bytes each,
# kept until the event base is freed; measured stable over repeated
# 4,000-tunnel rounds).
HEAP_SLACK = 1 << 20
HEAP_PER_FD = 96
# Normal clients wait this long between their requests (about 100
# requests a second each), so their latency is measured, not the load
# generator's own saturation.
NORMAL_PACE = 0.01


class Bench:
    """A fresh proxy for one scenario, warmed up, with its baseline."""

    def __init__(self, workdir, upstream, name, extra_args=()):
        self.up = upstream
        self.result = Result(name)
        self.proxy = loadlib.LoadProxy(workdir, upstream, extra_args,
                                       name=name)
        self.http = upstream.ports["http"]
        self.allowed = "allowed.test:%d" % self.http
        self.warm_blocked = 0
        self.t0 = time.monotonic()

    async def start(self):
        self.proxy.start()
        self.port = self.proxy.port
        warm = await loadlib.normal_load(self.port, self.http, 4, 30,
                                         max_requests=200, blocked_every=20)
        # A tunnel, to allocate what the first one allocates once.
        try:
            _, w = await loadlib.open_tunnel(self.port, self.allowed)
            await loadlib.close_quietly(w)
        except (OSError, ValueError, asyncio.TimeoutError) as e:
            self.result.failures.append("warm-up tunnel: %r" % e)
        self.warm_blocked = warm.blocked
        if warm.errors:
            self.result.failures.append("warm-up: %d errors %s"
                                        % (warm.errors, warm.samples))
        await asyncio.sleep(0.3)
        self.result.rss[0] = self.proxy.rss_kib()
        self.result.fds[0] = self.proxy.fds()
        self.result.heap[0] = loadlib.heap_in_use(self.proxy)
        self.sampler = Sampler(self.proxy)
        self.sampler.start()
        return self

    def add(self, stats, normal=False):
        """Count a Stats into the row; normal clients give the p99."""
        self.result.requests += stats.requests
        self.result.errors += stats.errors
        self.result.blocked += stats.blocked
        if normal:
            self.result.p99_ms = stats.p99_ms()
            self.result.check(stats.errors == 0, "normal clients: %d errors "
                              "%s" % (stats.errors, stats.samples))
            self.result.check(stats.requests > 0, "normal clients served "
                              "nothing")

    def upstream_left(self, names):
        """{port name: connections still open at the upstream}."""
        stats = self.up.stats()
        # The stats request itself is one open http connection.
        return {n: stats["open"].get(n, 0) - (n == "http") for n in names}

    async def settle(self, timeout=15.0, upstream_ports=()):
        """Wait for descriptors, upstream connections and RSS to come
        back; check they did. The RSS check fails only when the heap in
        use did not come back either (or cannot be measured): RSS that
        malloc keeps after everything was freed is a warning."""
        r = self.result
        await self.sampler.stop()
        r.rss[1], r.fds[1] = self.sampler.rss_peak, self.sampler.fds_peak
        slack = max(RSS_SLACK_KIB, RSS_SLACK_SHARE * (r.rss[1] - r.rss[0]))
        deadline = time.monotonic() + timeout
        while True:
            r.fds[2] = self.proxy.fds()
            left = self.upstream_left(upstream_ports)
            if (r.fds[2] <= r.fds[0] and not any(left.values())) or \
                    time.monotonic() >= deadline:
                break
            await asyncio.sleep(0.25)
        # Everything is closed: give RSS a moment more to come down.
        deadline = min(deadline, time.monotonic() + 3)
        while True:
            r.rss[2] = self.proxy.rss_kib()
            if r.rss[2] <= r.rss[0] + slack or time.monotonic() >= deadline:
                break
            await asyncio.sleep(0.25)
        r.check(r.fds[2] <= r.fds[0], "open fds %d after the load, %d "
                "before" % (r.fds[2], r.fds[0]))
        for name, n in left.items():
            r.check(n == 0, "%d connections to upstream %s still open "
                    "after the load" % (n, name))
        r.heap[1] = loadlib.heap_in_use(self.proxy)
        heap_slack = HEAP_SLACK + HEAP_PER_FD * r.fds[1]
        heap_ok = None not in r.heap and r.heap[1] <= r.heap[0] + heap_slack
        if None not in r.heap:
            r.check(heap_ok, "heap in use %d bytes after the load, %d "
                    "before (slack %d)" % (r.heap[1], r.heap[0], heap_slack))
        rss_msg = ("RSS %.1f MiB after the load, %.1f MiB before (slack "
                   "%.1f MiB)" % (r.rss[2] / 1024.0, r.rss[0] / 1024.0,
                                  slack / 1024.0))
        if r.rss[2] > r.rss[0] + slack:
            if self.proxy.sanitized():
                r.warnings.append(rss_msg + ": AddressSanitizer's "
                                  "quarantine (its leak report at exit is "
                                  "checked instead)")
            elif heap_ok:
                r.warnings.append(rss_msg + ": freed memory kept by malloc "
                                  "(heap in use is back at baseline)")
            else:
                r.failures.append(rss_msg)

    def finish(self):
        """Stop the proxy; check the log and the sanitizer report."""
        r = self.result
        status = self.proxy.stop(timeout=40)
        r.check(status == 0, "proxy exit status %r after SIGTERM" % status)
        report = self.proxy.sanitizer_report()
        r.check(report is None, "sanitizer: %s" % (report or "")[:2000])
        events, problems = loadlib.check_log(self.proxy.log_path)
        for p in problems:
            r.failures.append("log: " + p)
        # Full lines plus the attempts summary lines count (SIGTERM
        # writes the summaries still due).
        r.events = proxylib.blocked_attempts(events) - self.warm_blocked
        if getattr(self, "count_blocks", True):
            r.check(r.events == r.blocked, "%d blocked attempts logged for "
                    "%d blocked attempts" % (r.events, r.blocked))
        if getattr(self, "after_stop", None) is not None:
            self.after_stop(events)
        verdict = loadlib.audit_verify(self.proxy.log_dir)
        if verdict is not None:
            r.check(verdict[0] == 0, "sandgate audit verify: %s"
                    % verdict[1][-200:])
        r.seconds = time.monotonic() - self.t0
        return r

    def abort(self):
        self.proxy.kill()


def run_bench(bench, body):
    """asyncio.run(body(bench)) with the proxy stopped whatever happens."""
    async def main():
        await bench.start()
        await body(bench)
    try:
        asyncio.run(main())
        return bench.finish()
    except BaseException:
        bench.abort()
        raise


# ------------------------------------------------------- idle tunnels

def cpu_seconds(pid):
    """User plus system CPU time of a process, in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def idle_tunnels(workdir, up, n=10000, hold=5.0, normal=8, use=100):
    """n CONNECT tunnels to the plain upstream held open while normal
    clients are served, use of them carrying one request, then all
    closed.

    Each tunnel is two descriptors in the proxy (client and upstream).
    When the proxy's descriptor limit has no room for n tunnels plus the
    normal clients, it holds as many as fit and opens the rest only
    after the normal clients are done: those past the limit must fail
    cleanly (502, or not accepted) without the proxy spinning, and the
    proxy must serve again once tunnels close."""
    bench = Bench(workdir, up, "idle-tunnels-%d" % n,
                  ["--max-conns-per-client", str(n + 1000)])

    async def body(b):
        r = b.result
        reserve = 2 * (normal + 8) + 64
        room = (b.proxy.nofile() - r.fds[0] - reserve) // 2
        first = min(n, room)
        res = await loadlib.bounded_gather(
            first, lambda i: loadlib.open_tunnel(b.port, b.allowed), 256)
        ok = [t for t in res if isinstance(t, tuple)]
        bad = [t for t in res if not isinstance(t, tuple)]
        r.requests += first
        r.errors += len(bad)
        r.check(not bad, "%d of %d tunnels failed: %r" % (
            len(bad), first, bad[:3]))
        held = b.proxy.fds()
        # Two per tunnel beside the listener; the baseline itself may hold
        # a warm-up connection or two that have closed since.
        r.check(held >= 2 * len(ok) + 1, "only %d fds open while "
                "holding %d tunnels (baseline %d)" % (held, len(ok), r.fds[0]))
        r.notes.append("%d tunnels open, proxy holds %d fds, RSS %.1f MiB"
                       % (len(ok), held, b.proxy.rss_kib() / 1024.0))

        async def through(i):
            reader, writer = ok[i]
            writer.write(b"GET /t%d HTTP/1.1\r\nHost: allowed.test\r\n\r\n"
                         % i)
            status, _, _ = await asyncio.wait_for(
                loadlib.read_response(reader), 20)
            if status != 200:
                raise ValueError("status %d through a tunnel" % status)
        used = await loadlib.bounded_gather(min(use, len(ok)), through, 50)
        failed = [u for u in used if u is not None]
        r.requests += len(used)
        r.errors += len(failed)
        r.check(not failed, "requests through held tunnels failed: %r"
                % failed[:3])
        b.add(await loadlib.normal_load(b.port, b.http, normal, hold,
                                        pace=NORMAL_PACE), normal=True)
        if first < n:
            await over_limit(b, n - first, ok)
        for _, writer in ok:
            writer.close()
        await asyncio.sleep(1.0)
        after = await loadlib.normal_load(b.port, b.http, 2, 1.0,
                                          pace=NORMAL_PACE)
        r.check(after.errors == 0 and after.requests > 0, "after the "
                "tunnels closed: %d requests, %d errors %s" % (
                    after.requests, after.errors, after.samples))
        b.add(after)
        await b.settle(timeout=20, upstream_ports=("http",))
    return run_bench(bench, body)


async def over_limit(b, extra, ok):
    """Open extra more tunnels past the descriptor limit: the ones that
    fit join ok, the rest must fail cleanly. Then, with every descriptor
    taken, connections wait in the listen backlog: the proxy must pause
    accepting, not spin on EMFILE."""
    r = b.result

    async def one(i):
        return await asyncio.wait_for(
            loadlib.open_tunnel(b.port, b.allowed), 5)
    res = await loadlib.bounded_gather(extra, one, 256)
    more = [t for t in res if isinstance(t, tuple)]
    ok += more
    kinds = {}
    for x in res:
        if not isinstance(x, tuple):
            k = type(x).__name__ + (": " + str(x)[-10:] if str(x) else "")
            kinds[k] = kinds.get(k, 0) + 1
    r.requests += extra
    bare = [w for x in await loadlib.bounded_gather(
        16, lambda i: loadlib.connect(b.port), 16)
        if isinstance(x, tuple) for w in x[1:]]
    await asyncio.sleep(0.5)
    fds = b.proxy.fds()
    cpu0, t0 = cpu_seconds(b.proxy.pid), time.monotonic()
    await asyncio.sleep(3.0)
    cpu = (cpu_seconds(b.proxy.pid) - cpu0) / (time.monotonic() - t0)
    for w in bare:
        w.close()
    r.notes.append("descriptor limit %d: %d more tunnels asked past the "
                   "room left for normal clients: %d opened, the rest "
                   "failed %r; then %d connections waiting at %d open fds: "
                   "proxy CPU %.0f%% over 3 s" % (
                       b.proxy.nofile(), extra, len(more), kinds, len(bare),
                       fds, 100 * cpu))
    r.check(cpu < 0.25, "the proxy used %.0f%% CPU for 3 s at its "
            "descriptor limit (spinning on accept?)" % (100 * cpu))


# ------------------------------------------------------------ slowloris

async def loris(port, target, interval, limit, first_delay=0.0):
    """A slowloris client: one byte of a request head every interval
    seconds (never the whole head). Returns (cut, seconds, first bytes)."""
    reader, writer = await loadlib.connect(port)
    t0 = time.monotonic()
    head = loadlib.get_head(target)
    sent = 0
    got = asyncio.ensure_future(reader.read(64))
    try:
        if first_delay:
            await asyncio.wait([got], timeout=first_delay)
        while not got.done() and time.monotonic() - t0 < limit:
            if sent < len(head) - 1:
                writer.write(head[sent:sent + 1])
                sent += 1
            await asyncio.wait([got], timeout=interval)
        cut = got.done()
        data = b""
        if cut:
            try:
                data = got.result()
            except OSError:
                data = b"<reset>"
        return cut, time.monotonic() - t0, data[:12]
    finally:
        if not got.done():
            got.cancel()
        writer.close()


def slowloris(workdir, up, n=1000, interval=5.0, head_timeout=10,
              normal=10):
    """n slowloris clients cut by the head timeout while normal clients
    keep getting served."""
    bench = Bench(workdir, up, "slowloris-%d" % n,
                  ["--head-timeout", str(head_timeout),
                   "--max-conns-per-client", str(n + 1000)])
    limit = 2 * head_timeout + 2 * interval + 5

    async def body(b):
        r = b.result
        lorises = asyncio.ensure_future(loadlib.bounded_gather(
            n, lambda i: loris(b.port, b.allowed, interval, limit), n))
        late = asyncio.ensure_future(loris(
            b.port, b.allowed, min(interval, 1.0), limit,
            first_delay=0.8 * head_timeout))
        stats = await loadlib.normal_load(b.port, b.http, normal,
                                          head_timeout + interval,
                                          pace=NORMAL_PACE)
        res = await lorises
        r.requests += n
        cuts = [x for x in res if isinstance(x, tuple) and x[0]]
        slow = [x[1] for x in cuts if x[1] > head_timeout + 1.5]
        answered = sum(1 for x in cuts if x[2].startswith(b"HTTP/1.1 408"))
        r.check(len(cuts) == n, "%d of %d slowloris clients were not cut "
                "(e.g. %r)" % (n - len(cuts), n,
                               [x for x in res if x not in cuts][:3]))
        r.check(not slow, "%d slowloris clients held past the head timeout "
                "(%ds): up to %.1f s" % (len(slow), head_timeout,
                                         max(slow or [0])))
        if cuts:
            secs = sorted(x[1] for x in cuts)
            r.notes.append("slowloris cut after %.1f..%.1f s (head timeout "
                           "%d s), %d answered 408" % (
                               secs[0], secs[-1], head_timeout, answered))
        late_cut, late_secs, _ = await late
        r.notes.append("a client silent for %.1f s before its first byte "
                       "was cut after %.1f s (%s)" % (
                           0.8 * head_timeout, late_secs,
                           "within the head timeout"
                           if late_cut and late_secs <= head_timeout + 1.5
                           else "the head timer restarts at the first byte"))
        b.add(stats, normal=True)
        await b.settle(timeout=10)
    return run_bench(bench, body)


# ----------------------------------------------------- faults and vanishing

class Case:
    """One fault sub-case: a coroutine run count times."""

    def __init__(self, name, fn, count):
        self.name, self.fn, self.count = name, fn, count


async def expect_status(reader, want, within):
    t0 = time.monotonic()
    status, _, body = await asyncio.wait_for(loadlib.read_response(reader),
                                             within)
    if status != want:
        raise ValueError("status %d, expected %d: %r" % (status, want,
                                                         body[:100]))
    return body, time.monotonic() - t0


async def expect_close(reader, within):
    """The peer closes (EOF or reset) within seconds."""
    try:
        while await asyncio.wait_for(reader.read(65536), within):
            pass
    except ConnectionError:
        pass


def fault_cases(b, n, idle):
    """The fault sub-cases, n runs each (the slow ones fewer)."""
    ports = b.up.ports
    at = "allowed.test:%d"

    async def vanish_head(i):
        _, w = await loadlib.connect(b.port)
        w.write(loadlib.get_head(b.allowed)[:20])
        await asyncio.sleep(0.05)
        loadlib.rst_close(w)

    async def vanish_body(i):
        _, w = await loadlib.connect(b.port)
        w.write(("POST http://%s/post HTTP/1.1\r\nHost: %s\r\n"
                 "Content-Length: 1000000\r\n\r\n" % (b.allowed, b.allowed))
                .encode() + b"x" * 20000)
        await asyncio.sleep(0.1)
        loadlib.rst_close(w)

    async def vanish_tunnel(i):
        _, w = await loadlib.open_tunnel(b.port, b.allowed)
        w.write(b"GET / HTTP/1.1\r\nHo")
        await asyncio.sleep(0.05)
        loadlib.rst_close(w)

    async def vanish_response(i):
        r, w = await loadlib.connect(b.port)
        w.write(loadlib.get_head(b.allowed, "/big?n=20000000"))
        await asyncio.wait_for(r.readexactly(65536), 10)
        loadlib.rst_close(w)

    async def halfclose_tunnel(i):
        # A plain-HTTP request with a body (what a tls: optional tunnel
        # carries besides TLS), then SHUT_WR: the sink answers at EOF.
        r, w = await loadlib.open_tunnel(b.port, at % ports["sink"])
        body = bytes(range(256)) * 400
        data = ("POST /sink HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n"
                "\r\n" % (at % ports["sink"], len(body))).encode() + body
        w.write(data)
        w.write_eof()
        got = await asyncio.wait_for(r.read(), 10)
        w.close()
        want = b"got %d %s\n" % (len(data),
                                 hashlib.sha256(data).hexdigest().encode())
        if got != want:
            raise ValueError("half-closed tunnel got %r" % got[:80])

    async def halfclose_http(i):
        # A kept-alive GET, then SHUT_WR: the whole response must arrive.
        size = 100 if i % 2 else 3000000
        r, w = await loadlib.connect(b.port)
        w.write(loadlib.get_head(b.allowed, "/big?n=%d" % size))
        w.write_eof()
        got = b""
        while len(got) < size + 4096:
            data = await asyncio.wait_for(r.read(1 << 20), 10)
            if not data:
                break
            got += data
        w.close()
        head, _, body = got.partition(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 200") or len(body) != size:
            raise ValueError("half-closed GET of %d bytes: %r, %d body "
                             "bytes" % (size, head[:20], len(body)))

    async def hang_http(i):
        r, w = await loadlib.connect(b.port)
        w.write(loadlib.get_head(at % ports["hang"]))
        _, secs = await expect_status(r, 504, idle + 3)
        w.close()

    async def hang_tunnel(i):
        r, w = await loadlib.open_tunnel(b.port, at % ports["hang"])
        w.write(("GET / HTTP/1.1\r\nHost: %s\r\n\r\n"
                 % (at % ports["hang"])).encode())
        await expect_close(r, idle + 3)
        w.close()

    async def reset_http(i):
        r, w = await loadlib.connect(b.port)
        w.write(loadlib.get_head(at % ports["reset"]))
        await expect_status(r, 502, 10)
        w.close()

    async def reset_tunnel(i):
        try:
            r, w = await loadlib.open_tunnel(b.port, at % ports["reset"])
        except ValueError as e:
            if "status 502" in str(e):
                return
            raise
        await expect_close(r, 10)
        w.close()

    async def trickle(i):
        r, w = await loadlib.connect(b.port)
        w.write(loadlib.get_head(at % ports["trickle"]))
        body, _ = await expect_status(r, 200, 30)
        w.close()
        if body != b"0123456789abcdefghij":
            raise ValueError("trickled body %r" % body)

    few = max(1, n // 10)
    return [Case("vanish mid-head", vanish_head, n),
            Case("vanish mid-body", vanish_body, n),
            Case("vanish mid-tunnel", vanish_tunnel, n),
            Case("vanish mid-response", vanish_response, few),
            Case("half-closed tunnel", halfclose_tunnel, n),
            Case("half-closed GET", halfclose_http, few),
            Case("upstream hangs (GET)", hang_http, few),
            Case("upstream hangs (tunnel)", hang_tunnel, few),
            Case("upstream resets (GET)", reset_http, few),
            Case("upstream resets (tunnel)", reset_tunnel, few),
            Case("upstream trickles", trickle, few)]


def faults(workdir, up, n=200, idle=2, normal=8):
    """Clients that vanish, half-close; upstreams that hang, reset,
    trickle; normal clients alongside."""
    bench = Bench(workdir, up, "faults-%d" % n,
                  ["--idle-timeout", str(idle), "--head-timeout", "5"])

    async def body(b):
        r = b.result
        cases = fault_cases(b, n, idle)
        stop = asyncio.Event()
        normal_task = asyncio.ensure_future(
            loadlib.normal_load(b.port, b.http, normal, 600, stop=stop,
                                pace=NORMAL_PACE))
        outcomes = await asyncio.gather(*[
            loadlib.bounded_gather(c.count, c.fn, 50) for c in cases])
        stop.set()
        b.add(await normal_task, normal=True)
        for c, res in zip(cases, outcomes):
            bad = [x for x in res if x is not None]
            r.requests += c.count
            r.errors += len(bad)
            r.check(not bad, "%s: %d of %d failed: %r" % (
                c.name, len(bad), c.count, bad[:3]))
        await b.settle(timeout=idle + 10,
                       upstream_ports=("http", "hang", "trickle", "sink"))
    return run_bench(bench, body)


# ---------------------------------------------------------- blocked flood

async def flood_client(port, count, stats, seed):
    """count blocked requests: GETs to blocked.test on one kept-alive
    connection, every 10th a CONNECT to blocked.test:443 (which closes),
    every 7th a port the policy does not allow."""
    reader = writer = None
    for i in range(count):
        k = i + seed
        try:
            if writer is None:
                reader, writer = await loadlib.connect(port)
            if k % 10 == 0:
                req = (b"CONNECT blocked.test:443 HTTP/1.1\r\n"
                       b"Host: blocked.test:443\r\n\r\n")
            elif k % 7 == 0:
                req = loadlib.get_head("allowed.test:9", "/p%d" % i)
            else:
                req = loadlib.get_head("blocked.test", "/f%d" % i)
            t0 = time.perf_counter()
            writer.write(req)
            status, fields, _ = await asyncio.wait_for(
                loadlib.read_response(reader), 20)
            stats.latencies.append(time.perf_counter() - t0)
            stats.requests += 1
            if status == 403:
                stats.blocked += 1
            else:
                stats.error("flood: status %d" % status)
            if fields.get("connection", "").lower() == "close":
                await loadlib.close_quietly(writer)
                writer = None
        except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError,
                ValueError, IndexError) as e:
            stats.requests += 1
            stats.error("flood: %r" % e)
            await loadlib.close_quietly(writer)
            writer = None
    await loadlib.close_quietly(writer)


async def flood(port, n, clients):
    parts = [Stats() for _ in range(clients)]
    await asyncio.gather(*[flood_client(port, n // clients, parts[i], i)
                           for i in range(clients)])
    total = Stats()
    for s in parts:
        total.merge(s)
    return total


def blocked_flood(workdir, up, n=20000, clients=200, normal=8):
    """n blocked requests from many clients: one valid, chained log line
    per attempt."""
    bench = Bench(workdir, up, "blocked-flood-%d" % n)

    async def body(b):
        r = b.result
        t0 = time.monotonic()
        stop = asyncio.Event()
        normal_task = asyncio.ensure_future(
            loadlib.normal_load(b.port, b.http, normal, 600, stop=stop,
                                pace=NORMAL_PACE))
        stats = await flood(b.port, n, clients)
        busy = time.monotonic() - t0
        stop.set()
        normal_stats = await normal_task
        b.add(stats)
        r.check(stats.errors == 0, "flood: %d errors %s"
                % (stats.errors, stats.samples))
        r.notes.append("%d blocked requests in %.1f s (%.0f/s), their p99 "
                       "%.1f ms" % (stats.requests, busy,
                                    stats.requests / max(busy, 0.001),
                                    stats.p99_ms() or 0))
        b.add(normal_stats, normal=True)
        await b.settle(timeout=10)
    return run_bench(bench, body)


# ------------------------------------------------ a client that never reads

def never_reading(workdir, up, n=300000, normal=8):
    """n pipelined blocked requests from one client that never reads (a
    4 KiB receive buffer): the proxy stops reading it once its own 403s
    fill the client's output, so its RSS must not grow by 16 MiB, and
    the normal clients are served meanwhile."""
    bench = Bench(workdir, up, "never-reading-%d" % n)
    req = loadlib.get_head("b.test")

    async def sender(stalled):
        loop = asyncio.get_running_loop()
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.setblocking(False)
        await loop.sock_connect(s, ("127.0.0.1", bench.port))
        data, sent = memoryview(req * n), 0
        while sent < len(data):
            chunk = data[sent:sent + 65536]
            try:
                await asyncio.wait_for(loop.sock_sendall(s, chunk), 3)
            except asyncio.TimeoutError:
                break
            sent += len(chunk)
        stalled.append(sent // len(req))
        return s

    async def body(b):
        r = b.result
        stop = asyncio.Event()
        normal_task = asyncio.ensure_future(
            loadlib.normal_load(b.port, b.http, normal, 600, stop=stop,
                                pace=NORMAL_PACE))
        stalled = []
        s = await sender(stalled)
        await asyncio.sleep(2)      # the normal clients go on meanwhile
        stop.set()
        b.add(await normal_task, normal=True)
        r.notes.append("%d of %d requests sent before the client stalled"
                       % (stalled[0], n))
        s.close()
        await b.settle(timeout=10)
        grew = r.rss[1] - r.rss[0]
        r.check(grew < 16 * 1024, "RSS grew by %.1f MiB" % (grew / 1024.0))
        # How many of the never-read requests the proxy took is not known
        # to the clients: the log is checked for its chain only.
        b.count_blocks = False
    return run_bench(bench, body)


# ------------------------------------------- one sandbox floods the log

def sandbox_flood(workdir, up, seconds=60, clients=8):
    """One registered sandbox floods blocked requests for seconds, after
    another made three: every attempt counted in the log, the log grows
    by at most a few MiB, the other sandbox's events stay, audit verify
    says OK."""
    ctl = os.path.join(workdir, "flood-%d.sock" % seconds)
    bench = Bench(workdir, up, "sandbox-flood-%ds" % seconds,
                  ["--control-socket", ctl])

    async def client(src, host, deadline, stats):
        reader, writer = await asyncio.wait_for(asyncio.open_connection(
            "127.0.0.1", bench.port, local_addr=(src, 0), limit=1 << 20),
            10)
        try:
            while time.monotonic() < deadline:
                writer.write(loadlib.get_head(host) * 20)
                for _ in range(20):
                    status, _, _ = await asyncio.wait_for(
                        loadlib.read_response(reader), 20)
                    stats.requests += 1
                    if status == 403:
                        stats.blocked += 1
                    else:
                        stats.error("flood: status %d" % status)
        finally:
            await loadlib.close_quietly(writer)

    async def body(b):
        r = b.result
        for addr, sbx in (("127.0.0.2", "sbx_flood0000000000000000000"),
                          ("127.0.0.3", "sbx_quiet0000000000000000000")):
            status, _ = proxylib.control(ctl, "POST", "/register", {
                "address": addr, "sandbox": sbx, "sets": "test"})
            r.check(status == 200, "register %s: %d" % (sbx, status))
        quiet = Stats()
        for _ in range(3):
            rd, wr = await asyncio.open_connection(
                "127.0.0.1", b.port, local_addr=("127.0.0.3", 0))
            wr.write(loadlib.get_head("quiet.invalid", extra="Connection: "
                                      "close\r\n"))
            st, _, _ = await loadlib.read_response(rd)
            quiet.requests += 1
            quiet.blocked += st == 403
            await loadlib.close_quietly(wr)
        b.add(quiet)
        size0 = os.path.getsize(b.proxy.log_path)
        parts = [Stats() for _ in range(clients)]
        deadline = time.monotonic() + seconds
        await asyncio.gather(*[client("127.0.0.2", "flood%d.invalid" % (i % 4),
                                      deadline, parts[i])
                               for i in range(clients)])
        for s in parts:
            b.add(s)
        grew = os.path.getsize(b.proxy.log_path) - size0
        n = sum(s.blocked for s in parts)
        r.notes.append("%d blocked requests from one sandbox in %d s "
                       "(%.0f/s); the log grew by %.1f KiB" % (
                           n, seconds, n / seconds, grew / 1024.0))
        r.check(grew < 4 << 20, "the log grew by %.1f MiB" % (grew / 2 ** 20))
        await b.settle(timeout=10)
        b.after_stop = lambda events: r.check(
            sum(1 for e in events if e.get("host") == "quiet.invalid") == 3,
            "the other sandbox's 3 events are there")
    return run_bench(bench, body)


ALL = ("idle-tunnels", "slowloris", "faults", "blocked-flood",
       "never-reading", "sandbox-flood")
