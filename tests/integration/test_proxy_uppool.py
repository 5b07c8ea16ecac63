#!/usr/bin/env python3
"""Upstream TLS connections of terminated sessions kept for reuse (issue
18, docs/proxy.md "Upstream connection reuse"), end to end with the real
proxy binary, real curl and a real TLS upstream on loopback.

The upstream is a small Python TLS server that counts the connections it
accepts and answers every request with the number of the connection that
carried it ({"conn": N, "n": request number on it}), so a test sees which
requests shared an upstream connection. Paths make it misbehave the way
servers do: /idle-close closes the connection 0.3 s after answering,
/close-next closes it when the next request arrives (before answering),
/stray sends bytes nobody asked for after its answer, /slow trickles its
answer over 1.5 s (a request in flight while the policy changes),
/die on a connection that answered before waits 1.5 s and closes it
unanswered (on a new one it answers). Every
request head it got is kept (heads), with the connection's number.

Each curl is a new CONNECT and a new TLS session with the proxy; the
tests that look at reuse first show it happens (two tunnels, one
upstream connection), so each fails on a proxy without the pool.

Run: python3 tests/integration/test_proxy_uppool.py [-v] [names...]
Env: SANDGATE_BIN (folder holding sandgate-proxy), SANDGATE_SRC.
"""

import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proxylib  # noqa: E402
from test_proxy_terminate import make_ca, make_cas, make_leaf  # noqa: E402

W = {}

POLICY = """\
description: a terminated upstream (upstream connection reuse tests)
allow:
  - host: up.test
    ports: [{PORT}]
    allow_private: true
    tls: terminate
    ca_file: ca/upca.pem
    credentials: {{header: Authorization, secret: up-token}}
    rationale: the pooled upstream of the reuse tests
"""


class Upstream:
    """A keep-alive HTTPS server on loopback; see the module text."""

    def __init__(self, cert, key, hello_delay=0):
        self.hello_delay = hello_delay
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(cert, key)
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.lock = threading.Lock()
        self.accepts = 0
        self.closed_unanswered = 0
        self.auth = []
        self.heads = []
        threading.Thread(target=self.accept_loop, daemon=True).start()

    def accept_loop(self):
        while True:
            try:
                raw, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                self.accepts += 1
                n = self.accepts
            threading.Thread(target=self.serve, args=(raw, n),
                             daemon=True).start()

    def serve(self, raw, conn):
        time.sleep(self.hello_delay)
        try:
            t = self.ctx.wrap_socket(raw, server_side=True)
        except (OSError, ssl.SSLError):
            raw.close()
            return
        buf, n, idle, close_next = b"", 0, 10.0, False
        try:
            while True:
                t.settimeout(idle)
                while b"\r\n\r\n" not in buf:
                    data = t.recv(65536)
                    if not data:
                        return
                    buf += data
                head, buf = buf.split(b"\r\n\r\n", 1)
                lines = head.decode("latin-1").split("\r\n")
                path = lines[0].split(" ")[1]
                if close_next or (path == "/die" and n > 0):
                    if not close_next:
                        time.sleep(1.5)
                    with self.lock:
                        self.closed_unanswered += 1
                    return
                n += 1
                with self.lock:
                    self.heads.append((conn, head.decode("latin-1")))
                for line in lines[1:]:
                    if line.lower().startswith("authorization:"):
                        with self.lock:
                            self.auth.append(line.split(":", 1)[1].strip())
                body = json.dumps({"conn": conn, "n": n,
                                   "path": path}).encode()
                if path == "/slow":
                    t.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d"
                              b"\r\n\r\n" % (len(body) + 15))
                    for _ in range(15):
                        t.sendall(b" ")
                        time.sleep(0.1)
                    t.sendall(body)
                    continue
                t.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: "
                          b"application/json\r\nContent-Length: %d\r\n\r\n"
                          % len(body) + body)
                if path == "/idle-close":
                    idle = 0.3
                elif path == "/close-next":
                    close_next = True
                elif path == "/stray":
                    time.sleep(0.2)
                    t.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"
                              b"\r\nstray")
        except (OSError, ssl.SSLError, socket.timeout):
            pass
        finally:
            try:
                t.close()
            except OSError:
                pass

    def stop(self):
        self.sock.close()


class TicketUpstream(Upstream):
    """A TLS 1.3 server sending two session tickets, which can hold a
    connection's handshake (hold_next: the next connection waits 2.5 s
    before reading the client's Finished, so its tickets reach the proxy
    late). Answers {"conn": N, "resumed": bool}; /slow trickles its
    answer over 4.5 s. handshakes: (N, "full" or "resumed")."""

    def __init__(self, cert, key):
        super().__init__(cert, key)
        self.ctx.minimum_version = ssl.TLSVersion.TLSv1_3
        self.ctx.num_tickets = 2
        self.hold_next, self.handshakes = False, []

    def handshake(self, raw, o, inb, outb, hold):
        flights = 0
        while True:
            try:
                o.do_handshake()
                raw.sendall(outb.read())
                return True
            except ssl.SSLWantReadError:
                raw.sendall(outb.read())
            d = raw.recv(65536)
            if not d:
                return False
            flights += 1
            if flights == 2 and hold:
                time.sleep(2.5)		# the client's Finished waits
            inb.write(d)

    def serve(self, raw, n):
        with self.lock:
            hold, self.hold_next = self.hold_next, False
        inb, outb = ssl.MemoryBIO(), ssl.MemoryBIO()
        o = self.ctx.wrap_bio(inb, outb, server_side=True)
        try:
            if not self.handshake(raw, o, inb, outb, hold):
                return
            self.handshakes.append((n, "resumed" if o.session_reused
                                    else "full"))
            buf = b""
            while True:
                try:
                    buf += o.read(65536)
                    continue
                except ssl.SSLWantReadError:
                    raw.sendall(outb.read())
                if b"\r\n\r\n" not in buf:
                    d = raw.recv(65536)
                    if not d:
                        return
                    inb.write(d)
                    continue
                head, buf = buf.split(b"\r\n\r\n", 1)
                body = json.dumps({"conn": n, "resumed":
                                   o.session_reused}).encode()
                slow = b"/slow" in head.split(b"\r\n")[0]
                o.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n"
                        % (len(body) + (30 if slow else 0)))
                for _ in range(30 if slow else 0):
                    o.write(b".")
                    raw.sendall(outb.read())
                    time.sleep(0.15)
                o.write(body)
                raw.sendall(outb.read())
        except (OSError, ssl.SSLError):
            pass
        finally:
            raw.close()


def setUpModule():
    for k in proxylib.PROXY_ENV:
        os.environ.pop(k, None)
    W["dir"] = tempfile.mkdtemp(prefix="sg-uppool-")
    W["proxies"] = []
    pki = make_cas(W)
    W["leaf"] = make_leaf(pki, "up", "up.test")
    W["upstream"] = Upstream(*W["leaf"])
    W["up"] = proxylib.Upstreams(W["dir"]).start()


def tearDownModule():
    proxylib.teardown(W, W.get("proxies", []),
                      [lambda: [W[k].stop() for k in ("upstream", "slowup",
                                                      "ticketup")
                                if k in W]])


def start_proxy(name):
    """A terminating proxy with a control socket (p.ctl) and the secret
    up-token in its --secrets-dir (p.secrets)."""
    secrets = os.path.join(W["dir"], name + "-secrets")
    os.makedirs(secrets, mode=0o700)
    ctl = os.path.join(W["dir"], name + ".sock")
    p = proxylib.Proxy(W["dir"], W["up"], name=name, sets="test,term",
                       extra_args=["--log-allowed", "--ca-cert", W["sgca"],
                                   "--ca-key", W["sgkey"], "--secrets-dir",
                                   secrets, "--control-socket", ctl])
    p.ctl, p.secrets = ctl, secrets
    set_secret(p, "Bearer one")
    os.makedirs(os.path.join(p.policy_dir, "ca"))
    with open(W["upca"]) as src, \
            open(os.path.join(p.policy_dir, "ca", "upca.pem"), "w") as dst:
        dst.write(src.read())
    with open(os.path.join(p.policy_dir, "term.yaml"), "w") as f:
        f.write(POLICY.format(PORT=W["upstream"].port))
    with open(p.hosts, "a") as f:
        f.write("127.0.0.1\tup.test\n")
    W["proxies"].append(p)
    p.start()
    proxylib.wait_unix_socket(ctl)
    return p


def set_secret(p, value):
    path = os.path.join(p.secrets, "up-token")
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.write(fd, (value + "\n").encode())
    os.close(fd)
    os.rename(tmp, path)


def register(p, addr, sandbox):
    status, body = proxylib.control(p.ctl, "POST", "/register", {
        "address": addr, "sandbox": sandbox, "sets": "test,term"})
    assert status == 200, (status, body)


def reload(p):
    mark = p.mark()
    p.proc.send_signal(signal.SIGHUP)
    ev = p.wait_event(lambda e: e.get("event") == "policy.reloaded", mark)
    assert ev is not None, p.log_lines()


def get(p, path, src=None):
    """One curl: CONNECT, a TLS session with the proxy (trusting the
    sandgate CA alone), one GET, close. (exit code, JSON body or None,
    curl's stderr)."""
    cmd = ["curl", "-sS", "--max-time", "20", "--proxy",
           "http://127.0.0.1:%d" % p.port, "--cacert", W["sgca"]]
    if src is not None:
        cmd += ["--interface", src]
    cmd.append("https://up.test:%d%s" % (W["upstream"].port, path))
    r = subprocess.run(cmd, capture_output=True, text=True,
                       env=proxylib.clean_env(), timeout=60)
    try:
        body = json.loads(r.stdout)
    except ValueError:
        body = None
    return r.returncode, body, r.stderr + r.stdout


class Session:
    """One terminated session kept open: CONNECT up.test, TLS trusting
    the sandgate CA, then keep-alive requests, each answered with
    (status line, JSON body or None, head)."""

    def __init__(self, p, port=None):
        port = port or W["upstream"].port
        self.port = port
        s = socket.create_connection(("127.0.0.1", p.port), timeout=20)
        s.sendall(b"CONNECT up.test:%d HTTP/1.1\r\nHost: up.test:%d\r\n"
                  b"\r\n" % (port, port))
        got = b""
        while b"\r\n\r\n" not in got:
            data = s.recv(1)
            assert data, got
            got += data
        assert b" 200 " in got.split(b"\r\n")[0], got
        ctx = ssl.create_default_context(cafile=W["sgca"])
        self.t = ctx.wrap_socket(s, server_hostname="up.test")
        self.buf = b""

    def get(self, path):
        self.t.sendall(b"GET %s HTTP/1.1\r\nHost: up.test:%d\r\n\r\n"
                       % (path.encode(), self.port))
        while b"\r\n\r\n" not in self.buf:
            data = self.t.recv(65536)
            if not data:
                raise AssertionError("closed: %r" % self.buf)
            self.buf += data
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        head = head.decode("latin-1")
        n = 0
        for line in head.split("\r\n")[1:]:
            if line.lower().startswith("content-length:"):
                n = int(line.split(":")[1])
        while len(self.buf) < n:
            data = self.t.recv(65536)
            if not data:
                break
            self.buf += data
        body, self.buf = self.buf[:n], self.buf[n:]
        try:
            body = json.loads(body)
        except ValueError:
            body = None
        return head.split("\r\n")[0], body, head

    def get_during(self, path, change):
        """get(path) with change() run while its answer is in flight."""
        res = []
        th = threading.Thread(target=lambda: res.append(self.get(path)))
        th.start()
        time.sleep(0.5)
        change()
        th.join()
        return res[0]

    def close(self):
        try:
            self.t.close()
        except OSError:
            pass


def write_ca(p, pem):
    """The entry's ca_file now holds pem's CA."""
    with open(pem) as src, \
            open(os.path.join(p.policy_dir, "ca", "upca.pem"), "w") as dst:
        dst.write(src.read())


class Case(unittest.TestCase):
    def conn(self, p, path="/ok", src=None):
        """The upstream connection number that served one request."""
        rc, body, out = get(p, path, src)
        self.assertEqual(rc, 0, out)
        self.assertIsNotNone(body, out)
        self.assertEqual(body["path"], path, body)
        return body["conn"]

    def accepts(self):
        return W["upstream"].accepts

    def settle(self):
        """Let the proxy see the last curl's close (the tunnel's end is
        what hands its upstream to the pool)."""
        time.sleep(0.15)


class T01Reuse(Case):
    @classmethod
    def setUpClass(cls):
        cls.p = start_proxy("reuse")

    def test_two_tunnels_share_one_upstream_connection(self):
        before = self.accepts()
        a = self.conn(self.p)
        self.settle()
        b = self.conn(self.p)
        self.settle()
        c = self.conn(self.p)
        self.assertEqual((a, b), (b, c), "each tunnel opened its own "
                         "upstream connection")
        # One connection at most (the first may be an earlier test's).
        self.assertLessEqual(self.accepts() - before, 1)
        # The credential is set on every request, reused connection or not.
        self.assertEqual(W["upstream"].auth[-3:], ["Bearer one"] * 3)
        r = subprocess.run(["curl", "-s", "--unix-socket", self.p.ctl,
                            "http://proxy/metrics"], capture_output=True,
                           text=True)
        self.assertRegex(r.stdout, r"sandgate_proxy_upstream_reused_total "
                         r"[1-9]")

    def test_upstream_closing_an_idle_connection_costs_nothing(self):
        a = self.conn(self.p)
        self.settle()
        self.assertEqual(self.conn(self.p, "/idle-close"), a)
        time.sleep(0.8)		# the upstream closed it at 0.3 s
        mark = self.p.mark()
        b = self.conn(self.p)
        self.assertNotEqual(a, b)
        self.assertEqual([e for e in self.p.events()[mark:]
                          if e.get("event") == "egress.blocked"], [])

    def test_close_as_the_request_arrives_is_retried(self):
        """A server may close a kept connection just as a request goes
        out on it: the request goes again on a new connection."""
        a = self.conn(self.p)
        self.settle()
        self.assertEqual(self.conn(self.p, "/close-next"), a)
        self.settle()
        before = W["upstream"].closed_unanswered
        mark = self.p.mark()
        b = self.conn(self.p)
        self.assertNotEqual(a, b)
        self.assertEqual(W["upstream"].closed_unanswered - before, 1,
                         "the request did not go out on the kept "
                         "connection")
        self.assertEqual([e for e in self.p.events()[mark:]
                          if e.get("event") == "egress.blocked"], [])

    def test_connection_with_stray_bytes_not_reused(self):
        a = self.conn(self.p)
        self.settle()
        self.assertEqual(self.conn(self.p, "/stray"), a)
        time.sleep(0.5)		# the stray answer came at 0.2 s
        rc, body, out = get(self.p, "/ok")
        self.assertEqual(rc, 0, out)
        self.assertIsNotNone(body, "the stray bytes were taken for the "
                             "answer: " + out)
        self.assertNotEqual(body["conn"], a)


class T02Sandboxes(Case):
    @classmethod
    def setUpClass(cls):
        cls.p = start_proxy("sandboxes")
        register(cls.p, "127.0.0.2", "sbx-a")
        register(cls.p, "127.0.0.3", "sbx-b")

    def test_two_sandboxes_never_share_a_connection(self):
        seen = {"127.0.0.2": set(), "127.0.0.3": set()}
        for src in ["127.0.0.2", "127.0.0.2", "127.0.0.3", "127.0.0.3",
                    "127.0.0.2", "127.0.0.3"]:
            seen[src].add(self.conn(self.p, src=src))
            self.settle()
        a, b = seen["127.0.0.2"], seen["127.0.0.3"]
        self.assertEqual((len(a), len(b)), (1, 1), "no reuse within a "
                         "sandbox: %s" % seen)
        self.assertEqual(a & b, set())


class T03Revoke(Case):
    @classmethod
    def setUpClass(cls):
        cls.p = start_proxy("revoke")

    def pair(self):
        a = self.conn(self.p)
        self.settle()
        b = self.conn(self.p)
        self.settle()
        self.assertEqual(a, b, "no reuse")
        return b

    def test_reload_empties_the_pool(self):
        a = self.pair()
        reload(self.p)
        self.assertNotEqual(self.conn(self.p), a)

    def test_secret_change_empties_the_pool(self):
        a = self.pair()
        set_secret(self.p, "Bearer two")
        reload(self.p)
        self.assertNotEqual(self.conn(self.p), a)
        self.assertEqual(W["upstream"].auth[-1], "Bearer two")

    def test_registry_change_empties_the_pool(self):
        a = self.pair()
        register(self.p, "127.0.0.9", "sbx-other")
        self.assertNotEqual(self.conn(self.p), a)

    def test_idle_bound(self):
        a = self.pair()
        time.sleep(2.0)		# UPPOOL_IDLE_MS is 1.5 s
        self.assertNotEqual(self.conn(self.p), a)


class FreshProxy(Case):
    """A proxy of its own per test (named PREFIX + the test's name), and
    self.other, an unrelated CA that signs nothing the upstream shows."""

    PREFIX = "fresh-"

    def setUp(self):
        self.p = start_proxy(self.PREFIX + self._testMethodName[-12:])
        self.other = W.get("otherca") or make_ca(
            os.path.join(W["dir"], "pki"), "otherca", "an unrelated CA")
        W["otherca"] = self.other


class T04Busy(FreshProxy):
    """A connection busy with a request while the policy, a secret or
    the registry changes finishes that request and is then closed: the
    session's next request, and any later tunnel, connect again under
    the rules in force. Here the change puts an unrelated CA in the
    entry's ca_file, so a connection made now fails verification (502
    upstream_cert_untrusted): a 200 means the old connection was used."""

    PREFIX = "busy-"

    def distrust(self):
        write_ca(self.p, self.other)
        set_secret(self.p, "Bearer two")
        reload(self.p)

    def test_session_connection_not_reused_after_a_change(self):
        s = Session(self.p)
        line, body, _ = s.get("/ok")
        self.assertIn(" 200 ", line)
        first = body["conn"]
        line, body, _ = s.get_during("/slow", self.distrust)
        self.assertIn(" 200 ", line)	# the request in flight finishes
        self.assertEqual(body["conn"], first)
        line, body, head = s.get("/ok")
        self.assertNotIn(" 200 ", line, "the session's next request went "
                         "out on the connection opened before the reload, "
                         "carrying %s" % W["upstream"].auth[-1])
        self.assertIn("upstream_cert_untrusted", head)
        s.close()

    def test_busy_connection_never_parked(self):
        s = Session(self.p)
        first = s.get("/ok")[1]["conn"]
        s.get_during("/slow", lambda: reload(self.p))
        s.close()		# the session ends: its upstream would park
        self.settle()
        self.assertNotEqual(self.conn(self.p), first, "a connection from "
                            "before the reload was kept in the pool")

    def slow_handshake_with(self, change):
        """GET /ok through an upstream that holds its ServerHello; while
        the proxy waits for it, change(policy text in force) runs. The
        curl output."""
        slow = W.get("slowup")
        if slow is None:
            slow = W["slowup"] = Upstream(*W["leaf"], hello_delay=1.5)
        policy = POLICY.format(PORT=W["upstream"].port).replace(
            "ports: [%d]" % W["upstream"].port, "ports: [%d, %d]" %
            (W["upstream"].port, slow.port))
        with open(os.path.join(self.p.policy_dir, "term.yaml"), "w") as f:
            f.write(policy)
        reload(self.p)
        res = []
        cmd = ["curl", "-sS", "--max-time", "20", "--proxy",
               "http://127.0.0.1:%d" % self.p.port, "--cacert", W["sgca"],
               "-i", "https://up.test:%d/ok" % slow.port]
        th = threading.Thread(target=lambda: res.append(subprocess.run(
            cmd, capture_output=True, text=True, env=proxylib.clean_env(),
            timeout=60)))
        th.start()
        time.sleep(0.6)		# the proxy waits for the ServerHello
        change(policy)
        th.join()
        return res[0].stdout + res[0].stderr

    def test_handshake_in_flight_at_a_reload(self):
        """A request whose upstream handshake is under way at a reload
        connects again, verified under the entry now in force."""
        out = self.slow_handshake_with(lambda policy: self.distrust())
        self.assertNotIn("200 OK", out, "verified under the ca_file the "
                         "reload replaced")
        self.assertIn("upstream_cert_untrusted", out)

    def test_handshake_in_flight_at_a_reload_to_report_mode(self):
        """The same, when the reload puts the set in report mode with
        paths that now refuse the request: it went on under the old
        entry (its ca_file as it was, its credential) with no
        would_block; now it is let through as a fresh request is, the
        entry's match cleared and the would_block logged."""
        path = os.path.join(self.p.policy_dir, "term.yaml")
        mark = self.p.mark()

        def to_report(policy):
            with open(path, "w") as f:
                f.write("mode: report\n" + policy.replace(
                    "    credentials:",
                    "    paths: [/other/]\n    credentials:"))
            reload(self.p)

        out = self.slow_handshake_with(to_report)
        self.assertNotIn("200 OK", out, "went on under the replaced entry")
        ev = self.p.wait_event(
            lambda e: e.get("event") == "egress.would_block" and
            e.get("path") == "/ok", start=mark)
        self.assertIsNotNone(ev, "no would_block for the request in flight")
        with open(path, "w") as f:
            f.write(POLICY.format(PORT=W["upstream"].port))
        reload(self.p)

    def test_late_ticket_after_a_reload_not_resumed(self):
        """A TLS 1.3 ticket may come any time after the handshake: one
        that arrives after a reload, on a connection verified under the
        ca_file as it was, must not let a fresh tunnel resume (and so
        skip verification under the ca_file now in force)."""
        up = W.get("ticketup")
        if up is None:
            up = W["ticketup"] = TicketUpstream(*W["leaf"])
        with open(os.path.join(self.p.policy_dir, "term.yaml"), "w") as f:
            f.write(POLICY.format(PORT=up.port))
        reload(self.p)
        s = Session(self.p, up.port)
        up.hold_next = True
        res = []
        th = threading.Thread(target=lambda: res.append(s.get("/slow")))
        th.start()
        time.sleep(0.7)		# the upstream holds the handshake
        write_ca(self.p, self.other)
        reload(self.p)
        time.sleep(2.3)		# its tickets have come; /slow streams on
        s2 = Session(self.p, up.port)
        line, body, head = s2.get("/ok")
        th.join()
        s.close()
        s2.close()
        self.assertIn(" 200 ", res[0][0])	# the control: it did go
        self.assertNotIn(" 200 ", line, "a fresh tunnel resumed a session "
                         "verified under the replaced ca_file: %s, "
                         "handshakes %s" % (body, up.handshakes))
        self.assertIn("upstream_cert_untrusted", head)

    def test_retry_after_a_reload_not_under_the_old_entry(self):
        """A kept connection closed unanswered while a reload moved the
        entry's ca_file to a CA that does not trust the upstream: the
        request is not sent again under the entry it was decided by."""
        self.conn(self.p)
        self.settle()		# parked
        s = Session(self.p)

        def move():
            with open(self.other) as src, open(os.path.join(
                    self.p.policy_dir, "ca", "other.pem"), "w") as dst:
                dst.write(src.read())
            with open(os.path.join(self.p.policy_dir, "term.yaml"),
                      "w") as f:
                f.write(POLICY.format(PORT=W["upstream"].port).replace(
                    "ca/upca.pem", "ca/other.pem"))
            reload(self.p)
        line, body, head = s.get_during("/die", move)
        s.close()
        self.assertNotIn(" 200 ", line, "retried after the reload under "
                         "the old entry's ca_file: %s" % body)
        self.assertIn(" 502 ", line)
        rc, body, out = get(self.p, "/ok")
        self.assertIsNone(body, out)	# the policy in force distrusts it

    def test_registry_change_while_busy(self):
        s = Session(self.p)
        first = s.get("/ok")[1]["conn"]
        s.get_during("/slow", lambda: register(self.p, "127.0.0.9",
                                                "sbx-other"))
        line, body, _ = s.get("/ok")
        self.assertIn(" 200 ", line)
        self.assertNotEqual(body["conn"], first)
        s.close()

    def test_pool_key_never_recurs(self):
        """A connection parked under a key must never match a later
        policy's. The key held the policy's and the entry's heap
        addresses; a later reload's policy often gets the same ones. A
        cycle: a session opens a connection under a ca_file that trusts
        the upstream; the ca_file changes to one that does not; reloads
        land while a request is in flight on it; the session closes. A
        fresh tunnel must then fail verification, never get that
        connection."""
        for cycle in range(3):
            write_ca(self.p, W["upca"])
            reload(self.p)
            s = Session(self.p)
            first = s.get("/ok")[1]["conn"]
            write_ca(self.p, self.other)
            s.get_during("/slow", lambda: reload(self.p))
            s.get("/ok")
            s.get_during("/slow", lambda: reload(self.p))
            s.close()
            self.settle()
            rc, body, out = get(self.p, "/ok")
            self.assertFalse(body is not None and body["conn"] == first,
                             "cycle %d: a fresh tunnel got connection %d, "
                             "which the policy in force does not trust" %
                             (cycle, first))


F3_POLICY = """\
description: two entries for one host (upstream connection reuse tests)
allow:
  - host: up.test
    ports: [{PORT}]
    allow_private: true
    tls: terminate
    ca_file: ca/upca.pem
    paths: [/a/]
    credentials: {{header: Authorization, secret: up-token}}
    rationale: A, trusting the upstream through its ca_file
  - host: up.test
    ports: [{PORT}]
    allow_private: true
    tls: terminate
    paths: [/b/]
    credentials: {{header: X-B-Token, secret: b-token}}
    rationale: B, the system store alone, which does not trust it
"""


class T05Entries(Case):
    """Within a session each request goes over a connection its own
    entry verified, with its own credential: entry B's request never
    rides the connection entry A's ca_file vouched for."""

    @classmethod
    def setUpClass(cls):
        cls.p = start_proxy("entries")
        fd = os.open(os.path.join(cls.p.secrets, "b-token"),
                     os.O_WRONLY | os.O_CREAT, 0o600)
        os.write(fd, b"SECRET-B-VALUE\n")
        os.close(fd)
        with open(os.path.join(cls.p.policy_dir, "term.yaml"), "w") as f:
            f.write(F3_POLICY.format(PORT=W["upstream"].port))
        reload(cls.p)

    def test_entry_b_after_entry_a(self):
        s = Session(self.p)
        line, _, head = s.get("/b/x")
        self.assertIn("upstream_cert_untrusted", head)
        s.close()
        s = Session(self.p)
        line, body, _ = s.get("/a/x")
        self.assertIn(" 200 ", line)
        line, body, head = s.get("/b/x")
        s.close()
        self.assertNotIn(" 200 ", line, "B's request went over A's "
                         "connection %s" % body)
        self.assertIn("upstream_cert_untrusted", head)
        self.assertFalse([h for _, h in W["upstream"].heads
                          if "SECRET-B-VALUE" in h])

    def test_same_entry_still_reused(self):
        s = Session(self.p)
        a = s.get("/a/x")[1]["conn"]
        self.assertEqual(s.get("/a/y")[1]["conn"], a)
        s.close()


class T06LoadedCA(FreshProxy):
    """The CAs an entry trusts are the ca_file's bytes its policy load
    read and digested (docs/policy.md, ca_file), whenever the first
    request comes: the file as it is later is unseen until a reload that
    is accepted. The proxy used to read the file at its first terminated
    request, so a file changed before it (with no reload, or with one
    that was rejected and kept the old policy and digest) decided."""

    PREFIX = "loaded-"

    def reload_rejected(self):
        mark = self.p.mark()
        self.p.proc.send_signal(signal.SIGHUP)
        ev = self.p.wait_event(lambda e: e.get("event") in (
            "policy.reloaded", "policy.rejected"), mark)
        self.assertEqual((ev or {}).get("event"), "policy.rejected",
                         self.p.log_lines())

    def test_rejected_reload_changes_no_trust(self):
        write_ca(self.p, self.other)
        with open(os.path.join(self.p.policy_dir, "zz-broken.yaml"),
                  "w") as f:
            f.write("allow: [ {host: \n")
        self.reload_rejected()
        _, body, out = get(self.p, "/ok")
        self.assertIsNotNone(body, "the first request after a rejected "
                             "reload was verified under the file's new "
                             "bytes, not the policy in force: %s" % out)
        self.assertEqual(body["path"], "/ok", out)

    def untrusted(self):
        _, body, out = get(self.p, "/ok")
        return body is None and "no trusted CA issued" in out

    def test_file_changed_without_a_reload_unseen(self):
        write_ca(self.p, self.other)
        time.sleep(0.3)
        self.assertFalse(self.untrusted(), "a ca_file changed after the "
                         "load was read at the first request")
        reload(self.p)
        self.assertTrue(self.untrusted())
        write_ca(self.p, W["upca"])	# trusted again, but not loaded
        time.sleep(0.3)
        self.assertTrue(self.untrusted(), "a ca_file changed after the "
                        "load was read at the first request")


if __name__ == "__main__":
    proxylib.run_tests(sys.modules[__name__])
