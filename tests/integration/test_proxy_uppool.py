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
/stray sends bytes nobody asked for after its answer.

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
from test_proxy_terminate import make_cas, make_leaf  # noqa: E402

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

    def __init__(self, cert, key):
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
                if close_next:
                    with self.lock:
                        self.closed_unanswered += 1
                    return
                n += 1
                lines = head.decode("latin-1").split("\r\n")
                path = lines[0].split(" ")[1]
                for line in lines[1:]:
                    if line.lower().startswith("authorization:"):
                        with self.lock:
                            self.auth.append(line.split(":", 1)[1].strip())
                body = json.dumps({"conn": conn, "n": n,
                                   "path": path}).encode()
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


def setUpModule():
    for k in proxylib.PROXY_ENV:
        os.environ.pop(k, None)
    W["dir"] = tempfile.mkdtemp(prefix="sg-uppool-")
    W["proxies"] = []
    pki = make_cas(W)
    W["upstream"] = Upstream(*make_leaf(pki, "up", "up.test"))
    W["up"] = proxylib.Upstreams(W["dir"]).start()


def tearDownModule():
    proxylib.teardown(W, W.get("proxies", []),
                      [lambda: W["upstream"].stop()] if "upstream" in W
                      else [])


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


if __name__ == "__main__":
    proxylib.run_tests(sys.modules[__name__])
