"""The fault checks of tests/load/faults and
tests/integration/test_load_quick.py: SIGKILL during a flood and the chain
across restarts; a log folder on a full tmpfs (before start and while
running), where every request must get the fail-closed answer and
nothing may reach the upstream. Each check prints its observation and is
collected in a Report.
"""

import asyncio
import contextlib
import errno
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import loadlib    # noqa: E402
import scenarios  # noqa: E402

FAIL_CLOSED = "network blocked by policy: security log unavailable"
# Options that give every blocked attempt its own line (no summaries).
FULL_LINES = ("--block-burst", "10000000", "--block-budget", "10000000")
# The log folder's file system. It must be larger than the free space the
# proxy requires of it (PROXY_LOG_SPACE_MIN, 256 KiB), or the proxy
# refuses egress even while the folder is empty.
TMPFS_SIZE = "1m"


class Report:
    def __init__(self):
        self.checks = []

    def check(self, cond, what, detail=""):
        self.checks.append((bool(cond), what, detail))
        print("  %-4s %s%s" % ("ok" if cond else "FAIL", what,
                               (": " + detail) if detail else ""),
              flush=True)
        return cond

    def note(self, what):
        print("       (%s)" % what, flush=True)

    @property
    def failed(self):
        return [c for c in self.checks if not c[0]]


# ------------------------------------------------------------ kill -9

async def flood_until_killed(proxy, seconds):
    """A flood of blocked requests from 100 clients; SIGKILL after
    seconds. Returns the number of 403s the clients received."""
    seen = [0]
    killed = asyncio.Event()

    async def client(i):
        while not killed.is_set():
            try:
                r, w = await loadlib.connect(proxy.port)
            except (OSError, asyncio.TimeoutError):
                return
            try:
                for k in range(1000):
                    if killed.is_set():
                        break
                    w.write(loadlib.get_head("blocked.test", "/k%d" % k))
                    status, _, _ = await asyncio.wait_for(
                        loadlib.read_response(r), 10)
                    seen[0] += status == 403
            except (OSError, asyncio.TimeoutError, ValueError,
                    asyncio.IncompleteReadError):
                pass
            finally:
                w.close()

    async def killer():
        await asyncio.sleep(seconds)
        proxy.sigkill()
        killed.set()
    await asyncio.gather(killer(), *[client(i) for i in range(100)])
    return seen[0]


def kill_rounds(work, up, rounds, report):
    print("SIGKILL during a flood of blocked requests, %d rounds" % rounds)
    logs = os.path.join(work, "kill-logs")
    os.makedirs(logs)
    path = os.path.join(logs, "security-events.jsonl")
    seen = 0
    for i in range(rounds):
        # Every block in full: counts held for a summary are what a
        # SIGKILL loses (docs/audit.md), and this check is about lines.
        proxy = loadlib.LoadProxy(work, up, name="kill%d" % i, log_dir=logs,
                                  extra_args=FULL_LINES)
        proxy.start()
        got = asyncio.run(flood_until_killed(proxy, 1.0 + 0.37 * i))
        seen += got
        events, problems = loadlib.check_log(path)
        blocked = sum(1 for e in events if e.get("event") == "egress.blocked")
        report.check(not problems, "round %d: after SIGKILL every line is "
                     "whole, valid JSON and chained" % (i + 1),
                     "%d lines%s" % (len(events), (", " + "; ".join(
                         problems[:3])) if problems else ""))
        report.check(blocked >= seen, "round %d: every 403 a client saw is "
                     "logged" % (i + 1), "%d events, %d 403s seen"
                     % (blocked, seen))
    proxy = loadlib.LoadProxy(work, up, name="kill-final", log_dir=logs)
    proxy.start()
    stats = asyncio.run(scenarios.flood(proxy.port, 500, 10))
    status = proxy.stop()
    events, problems = loadlib.check_log(path)
    report.check(status == 0 and stats.errors == 0 and stats.blocked == 500,
                 "restart on the same folder serves and stops cleanly",
                 "exit %r, %d 403s, %d errors" % (status, stats.blocked,
                                                  stats.errors))
    report.check(not problems and events and
                 events[-1]["seq"] == len(events),
                 "the chain continues across %d kills and restarts" % rounds,
                 "%d lines, last seq %s%s" % (
                     len(events), events[-1]["seq"] if events else "-",
                     (", " + "; ".join(problems[:3])) if problems else ""))
    verdict = loadlib.audit_verify(logs)
    if verdict is None:
        report.note("sandgate audit verify: not built; the chain was "
                    "checked by this script (eventlog.h's rules)")
    else:
        report.check(verdict[0] == 0, "sandgate audit verify says OK",
                     "exit %d: %s" % (verdict[0], verdict[1][-300:]))


# ------------------------------------------------------------ full disk

@contextlib.contextmanager
def small_tmpfs(path, size=TMPFS_SIZE):
    os.makedirs(path)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s,mode=0750" % size,
                    "tmpfs", path], check=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", path])


def fill(path):
    """Write filler until the file system is full; the filler's path."""
    filler = os.path.join(path, "filler")
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for _ in range(1 << 16):
            os.write(fd, b"\0" * 1024)
    except OSError as e:
        if e.errno != errno.ENOSPC:
            raise
    try:
        for _ in range(1024):
            os.write(fd, b"\0")
    except OSError as e:
        if e.errno != errno.ENOSPC:
            raise
    finally:
        os.close(fd)
    return filler


async def ask(port, head, connect=False):
    """(status, X-Sandgate-Reason, reason phrase) or an error string."""
    try:
        r, w = await loadlib.connect(port)
        w.write(head)
        line = await asyncio.wait_for(r.readuntil(b"\r\n\r\n"), 15)
        await loadlib.close_quietly(w)
    except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError) as e:
        return "error %r" % e
    lines = line.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    reason = [l.split(":", 1)[1].strip() for l in lines
              if l.lower().startswith("x-sandgate-reason:")]
    return int(parts[1]), reason[0] if reason else None, \
        parts[2] if len(parts) > 2 else ""


def probes(proxy, up, report, label):
    """An allowlisted GET, a blocked GET, an allowlisted CONNECT, another
    allowlisted GET: each must be refused with log_unavailable and none
    may reach the upstream."""
    allowed = "allowed.test:%d" % up.ports["http"]
    before = up.stats()["requests"]
    asks = [("allowlisted GET", loadlib.get_head(allowed, "/must-not-pass")),
            ("blocked GET", loadlib.get_head("blocked.test", "/b")),
            ("allowlisted CONNECT", ("CONNECT %s HTTP/1.1\r\nHost: %s\r\n"
                                     "\r\n" % (allowed, allowed)).encode()),
            ("allowlisted GET again", loadlib.get_head(allowed, "/again"))]
    for what, head in asks:
        got = asyncio.run(ask(proxy.port, head))
        if what.startswith("blocked"):
            # Refused by the policy anyway: a 403 is fail-closed; which
            # reason it names is reported.
            report.check(isinstance(got, tuple) and got[0] == 403,
                         "%s: %s is refused" % (label, what),
                         "got %r" % (got,))
            continue
        report.check(isinstance(got, tuple) and got[0] == 403 and
                     got[1] == "log_unavailable" and FAIL_CLOSED in got[2],
                     "%s: %s gets the fail-closed answer" % (label, what),
                     "got %r" % (got,))
    reached = up.stats()["requests"] - before
    report.check(reached == 0, "%s: nothing reached the upstream" % label,
                 "%d requests reached it" % reached)


def recovery(proxy, up, report, label, filler):
    """Free the space: within a few seconds (the proxy checks the folder
    every second) allowlisted requests pass again, and the log goes on:
    whole chained lines, apart from lines a full disk cut short (which
    eventlog.h says the verifier reports)."""
    os.unlink(filler)
    allowed = "allowed.test:%d" % up.ports["http"]
    first = asyncio.run(ask(proxy.port, loadlib.get_head("blocked.test")))
    deadline = time.monotonic() + 5
    while True:
        got = asyncio.run(ask(proxy.port, loadlib.get_head(allowed, "/ok")))
        if (isinstance(got, tuple) and got[0] == 200) or \
                time.monotonic() >= deadline:
            break
        time.sleep(0.2)
    report.check(isinstance(got, tuple) and got[0] == 200,
                 "%s: space freed: allowlisted requests pass again" % label,
                 "blocked GET right after got %r, allowlisted GET %r"
                 % (first, got))
    asyncio.run(ask(proxy.port, loadlib.get_head("blocked.test", "/z")))
    events, problems = loadlib.check_log(proxy.log_path)
    torn = [p for p in problems if "not JSON" in p]
    report.check(len(torn) == len(problems), "%s: the log after recovery "
                 "is chained, apart from torn lines" % label,
                 "%d lines, %d torn: %s" % (len(events), len(torn),
                                            problems[:3] or "none"))
    verdict = loadlib.audit_verify(os.path.dirname(proxy.log_path))
    if verdict is not None:
        report.note("%s: sandgate audit verify: exit %d: %s"
                    % (label, verdict[0], verdict[1][-300:]))


def full_at_start(work, up, report):
    print("log folder on a full %s tmpfs before the proxy starts" % TMPFS_SIZE)
    with small_tmpfs(os.path.join(work, "tmpfs-full-start")) as d:
        filler = fill(d)
        proxy = loadlib.LoadProxy(work, up, name="full-start", log_dir=d)
        try:
            proxy.start()
        except loadlib.proxylib.ProxyError as e:
            report.check(True, "the proxy refuses to start", str(e)[:200])
            return
        try:
            report.note("the proxy started with a full log folder")
            probes(proxy, up, report, "full at start")
            recovery(proxy, up, report, "full at start", filler)
        finally:
            proxy.stop()


def full_while_running(work, up, report):
    print("log folder (%s tmpfs) fills while the proxy runs" % TMPFS_SIZE)
    with small_tmpfs(os.path.join(work, "tmpfs-full-run")) as d:
        proxy = loadlib.LoadProxy(work, up, name="full-run", log_dir=d)
        proxy.start()
        try:
            stats = asyncio.run(scenarios.flood(proxy.port, 40, 4))
            report.check(stats.blocked == 40, "blocked requests logged "
                         "while there is space", "%d 403s" % stats.blocked)
            allowed = "allowed.test:%d" % up.ports["http"]
            got = asyncio.run(ask(proxy.port,
                                  loadlib.get_head(allowed, "/before")))
            report.check(isinstance(got, tuple) and got[0] == 200,
                         "allowlisted requests pass while there is space",
                         "got %r" % (got,))
            filler = fill(d)
            before = up.stats()["requests"]
            got = asyncio.run(ask(proxy.port,
                                  loadlib.get_head(allowed, "/first")))
            reached = up.stats()["requests"] - before
            report.note("full while running: an allowlisted request right "
                        "after the disk filled got %r; %d reached the "
                        "upstream (the proxy looks at the folder once a "
                        "second)" % (got, reached))
            # Enough blocked requests to need new pages: a write fails.
            stats = asyncio.run(scenarios.flood(proxy.port, 40, 4))
            report.check(stats.blocked == 40, "full while running: blocked "
                         "requests are refused", "%d 403s, %d errors %s"
                         % (stats.blocked, stats.errors, stats.samples[:2]))
            time.sleep(1.5)
            probes(proxy, up, report, "full while running")
            recovery(proxy, up, report, "full while running", filler)
        finally:
            proxy.stop()
