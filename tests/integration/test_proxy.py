#!/usr/bin/env python3
"""Integration tests of sandgate-proxy against loopback upstreams.

Run: python3 tests/integration/test_proxy.py [-v] [unittest names...]
Env: SANDGATE_BIN (folder holding sandgate-proxy), SANDGATE_SRC (source
root); SANDGATE_KEEP=1 keeps the temporary folder (logs, stderr, policy).

The contract under test is docs/proxy.md, "What a blocked client sees",
and docs/audit.md, "Security events". Every upstream and every name is on loopback.
"""

import hashlib
import http.client
import json
import os
import random
import re
import socket
import ssl
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proxylib  # noqa: E402
from proxylib import RawConn, get_request, connect_request  # noqa: E402

PREFIX = "network blocked by policy: "
LOG_FIELDS = ("ts", "seq", "event", "sandbox", "src", "method", "host",
              "port", "sni", "resolved", "reason", "message", "policy_sets",
              "rule", "prev", "hash")
TS_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")

W = {}  # the module's fixtures: workdir, upstreams, proxy


def setUpModule():
    for k in proxylib.PROXY_ENV:
        os.environ.pop(k, None)
    W["dir"] = tempfile.mkdtemp(prefix="sg-proxytest-")
    W["proxies"] = []
    try:
        W["up"] = proxylib.Upstreams(W["dir"]).start()
        W["proxy"] = start_proxy("proxy")
    except BaseException:
        tearDownModule()  # unittest does not call it when setup fails
        raise


def tearDownModule():
    proxylib.teardown(W, W.get("proxies", []))


def start_proxy(name, **kw):
    p = proxylib.Proxy(W["dir"], W["up"], name=name, **kw)
    W["proxies"].append(p)
    return p.start()


def stop_and_check(p):
    """Stop p; return a list of problems (sanitizer reports, no exit)."""
    return proxylib.stop_and_check(p)


def entry_line(proxy, host, nth=0):
    """Line of the nth "- host: HOST" entry in the generated test.yaml."""
    with open(proxy.policy_file) as f:
        lines = [i + 1 for i, line in enumerate(f)
                 if line.strip() == "- host: %s" % host]
    return lines[nth]


def message(host, port):
    return "%sdestination %s:%d not allowlisted" % (PREFIX, host, port)


class ProxyTest(unittest.TestCase):
    maxDiff = None

    @property
    def proxy(self):
        return W["proxy"]

    @property
    def up(self):
        return W["up"]

    def curl(self, *args, proxy=None, timeout=30):
        p = proxy or self.proxy
        return proxylib.run(["curl", "-sS", "--max-time", str(timeout - 5),
                             "-x", "http://127.0.0.1:%d" % p.port]
                            + list(args), timeout=timeout)

    def url(self, host="allowed.test", port=None, path="/"):
        return "http://%s:%d%s" % (host, port or self.up.http_port, path)

    def allowed_get(self, path="/x"):
        h = "allowed.test:%d" % self.up.http_port
        return get_request("http://%s%s" % (h, path), h)

    def assert_serves(self, proxy=None, what=""):
        """A normal request through the proxy still gets 200 from upstream."""
        p = proxy or self.proxy
        self.assertTrue(p.alive(), "proxy died %s; stderr:\n%s"
                        % (what, p.stderr()[-3000:]))
        try:
            resp = proxylib.raw_request(p.port, self.allowed_get("/alive"))
        except (OSError, proxylib.Closed) as e:
            self.fail("proxy no longer serves %s: %r" % (what, e))
        self.assertEqual(resp.status, 200, "after %s: %r" % (what, resp))
        self.assertEqual(resp.json()["path"], "/alive")

    def assert_block(self, resp, code, msg=None, status=403):
        """resp is the block response docs/proxy.md describes."""
        self.assertIsInstance(resp, proxylib.Response,
                              "expected a %d response, got %r" % (status, resp))
        self.assertEqual(resp.status, status, repr(resp))
        self.assertTrue(resp.reason.startswith(PREFIX),
                        "reason phrase %r lacks %r" % (resp.reason, PREFIX))
        if msg is not None:
            self.assertEqual(resp.reason, msg)
        self.assertEqual(resp.header("X-Sandgate-Reason"), code, repr(resp))
        self.assertTrue(resp.header("Proxy-Status"),
                        "no Proxy-Status header: %r" % resp.headers)
        body = resp.body.decode("utf-8", "replace")
        self.assertEqual(body.split("\n", 1)[0].rstrip("\r"), resp.reason,
                         "body's first line is not the message: %r" % body)
        self.assertIn("policy.d/", body, "no advice line in body %r" % body)

    def assert_logged(self, mark, proxy=None, **fields):
        """An egress.blocked event after mark with these field values."""
        p = proxy or self.proxy

        def match(e):
            return e.get("event") == "egress.blocked" and all(
                e.get(k) == v for k, v in fields.items())
        ev = p.wait_event(match, start=mark)
        if ev is None:
            self.fail("no egress.blocked event with %r; events after "
                      "mark:\n%s" % (fields, "\n".join(
                          json.dumps(e) for e in p.events()[mark:])))
        missing = [f for f in LOG_FIELDS if f not in ev]
        self.assertEqual(missing, [], "event lacks fields: %r" % ev)
        return ev

    def assert_refused(self, outcome, what):
        """outcome (RawConn.outcome()) is a 4xx or a close."""
        if outcome == "closed":
            return
        self.assertTrue(400 <= outcome.status < 500,
                        "%s: expected a 4xx or a close, got %r"
                        % (what, outcome))

    def tunnel(self, authority, proxy=None, timeout=10):
        """A RawConn through which CONNECT authority got 200."""
        p = proxy or self.proxy
        c = RawConn(p.port, timeout=timeout)
        c.send(connect_request(authority))
        resp = c.read_response(method="CONNECT")
        if resp.status != 200:
            c.close()
            self.fail("CONNECT %s: %r" % (authority, resp))
        return c

    def tls_client_ctx(self):
        ctx = ssl.create_default_context(cafile=self.up.ca_file)
        return ctx


# 1 ------------------------------------------------------------ allowed

class T01Allowed(ProxyTest):
    def test_curl_http_allowed(self):
        r = self.curl("-w", "\n%{http_code}", self.url(path="/x"))
        self.assertEqual(r.returncode, 0, r.stderr)
        body, _, code = r.stdout.rpartition("\n")
        self.assertEqual(code, "200", r.stdout)
        doc = json.loads(body)
        self.assertEqual(doc["method"], "GET")
        self.assertEqual(doc["path"], "/x",
                         "upstream must get origin-form, got %r" % doc["path"])
        self.assertEqual(doc["host"], "allowed.test:%d" % self.up.http_port)

    def test_curl_connect_tls(self):
        before = self.up.tls_counters.get("handshakes")
        r = self.curl("--cacert", self.up.ca_file, "-w", "\n%{http_code}",
                      "https://allowed.test:%d/y" % self.up.tls_port)
        self.assertEqual(r.returncode, 0, r.stderr)
        body, _, code = r.stdout.rpartition("\n")
        self.assertEqual(code, "200", r.stdout)
        doc = json.loads(body)
        self.assertTrue(doc["tls"])
        self.assertEqual(doc["path"], "/y")
        self.assertEqual(self.up.tls_counters.get("handshakes"), before + 1)
        self.assertIn("allowed.test", self.up.tls_counters.snis)

    def test_other_name_on_same_upstream(self):
        r = self.curl("--cacert", self.up.ca_file, "-w", "\n%{http_code}",
                      "https://other.test:%d/o" % self.up.tls_port)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.endswith("\n200"), r.stdout)

    def test_urllib_allowed(self):
        opener = urllib.request.build_opener(urllib.request.ProxyHandler(
            {"http": "http://127.0.0.1:%d" % self.proxy.port}))
        with opener.open(self.url(path="/u"), timeout=10) as resp:
            self.assertEqual(resp.status, 200)
            self.assertEqual(json.load(resp)["path"], "/u")

    def test_plain_http_in_tls_optional_tunnel(self):
        with self.tunnel("allowed.test:%d" % self.up.http_port) as c:
            c.send(b"GET /in-tunnel HTTP/1.1\r\nHost: allowed.test\r\n"
                   b"Connection: close\r\n\r\n")
            resp = c.read_response()
        self.assertEqual(resp.status, 200, repr(resp))
        self.assertEqual(resp.json()["path"], "/in-tunnel")


# 2 ------------------------------------------------------------ blocked

class T02Blocked(ProxyTest):
    def test_curl_https_blocked(self):
        mark = self.proxy.mark()
        r = self.curl("-v", "https://blocked.test:443/")
        self.assertNotEqual(r.returncode, 0, "curl must fail")
        want = "< HTTP/1.1 403 " + message("blocked.test", 443)
        self.assertIn(want, r.stderr)
        ev = self.assert_logged(mark, method="CONNECT", host="blocked.test",
                                port=443, reason="not_allowlisted")
        self.assertEqual(ev["message"], message("blocked.test", 443))

    def test_curl_http_blocked(self):
        mark = self.proxy.mark()
        r = self.curl("-v", "--fail", "http://blocked.test/")
        self.assertNotEqual(r.returncode, 0, "curl --fail must fail")
        self.assertIn("< HTTP/1.1 403 " + message("blocked.test", 80),
                      r.stderr)
        ev = self.assert_logged(mark, method="GET", host="blocked.test",
                                port=80, reason="not_allowlisted")
        self.assertEqual(ev["message"], message("blocked.test", 80))

    def test_urllib_https_blocked(self):
        opener = urllib.request.build_opener(urllib.request.ProxyHandler(
            {"https": "http://127.0.0.1:%d" % self.proxy.port}))
        with self.assertRaises(OSError) as cm:
            opener.open("https://blocked.test:443/", timeout=10)
        text = str(cm.exception)
        # Python: "<urlopen error Tunnel connection failed: 403 REASON>"
        self.assertIn(message("blocked.test", 443), text)
        print("\n  urllib https error text: %s" % text, file=sys.stderr)

    def test_urllib_http_blocked(self):
        opener = urllib.request.build_opener(urllib.request.ProxyHandler(
            {"http": "http://127.0.0.1:%d" % self.proxy.port}))
        with self.assertRaises(urllib.error.HTTPError) as cm:
            opener.open("http://blocked.test/", timeout=10)
        self.assertEqual(cm.exception.code, 403)
        self.assertIn(message("blocked.test", 80), str(cm.exception))
        body = cm.exception.read().decode()
        self.assertIn(message("blocked.test", 80), body)
        self.assertIn("policy.d/", body)

    def test_connect_block_response(self):
        resp = proxylib.raw_request(self.proxy.port,
                                    connect_request("blocked.test:443"),
                                    method="CONNECT")
        self.assert_block(resp, "not_allowlisted",
                          message("blocked.test", 443))

    def test_get_block_response(self):
        h = "blocked.test:%d" % self.up.http_port
        before = self.up.http_counters.get("accepts")
        resp = proxylib.raw_request(self.proxy.port,
                                    get_request("http://%s/" % h, h))
        self.assert_block(resp, "not_allowlisted",
                          message("blocked.test", self.up.http_port))
        self.assertEqual(self.up.http_counters.get("accepts"), before,
                         "a blocked request reached the upstream")

    def test_port_not_allowed(self):
        mark = self.proxy.mark()
        resp = proxylib.raw_request(
            self.proxy.port, get_request("http://allowed.test:9/",
                                         "allowed.test:9"))
        self.assert_block(resp, "port_not_allowed")
        self.assertIn("allowed.test:9", resp.reason)
        self.assert_logged(mark, host="allowed.test", port=9,
                           reason="port_not_allowed")

    def test_log_event_fields(self):
        mark = self.proxy.mark()
        h = "private.test:%d" % self.up.http_port
        proxylib.raw_request(self.proxy.port,
                             get_request("http://%s/" % h, h))
        ev = self.assert_logged(mark, reason="private_address")
        self.assertRegex(ev["src"], r"^127\.0\.0\.1:\d+$")
        self.assertEqual(ev["policy_sets"], ["test"])
        self.assertIsNone(ev["sandbox"], "no sandbox is registered")
        self.assertEqual(ev["rule"], "%s:%d" % (
            self.proxy.policy_file, entry_line(self.proxy, "private.test")))
        self.assertEqual(ev["method"], "GET")

    def test_log_lines_are_chained(self):
        proxylib.raw_request(self.proxy.port,
                             connect_request("blocked.test:443"),
                             method="CONNECT")
        time.sleep(0.2)
        lines = self.proxy.log_lines()
        self.assertGreater(len(lines), 0)
        prev = None
        for i, line in enumerate(lines):
            ev = json.loads(line)
            self.assertEqual([f for f in LOG_FIELDS if f not in ev], [],
                             "line %d lacks fields: %s" % (i + 1, line))
            self.assertRegex(ev["ts"], TS_RE)
            self.assertRegex(ev["hash"], r"^[0-9a-f]{64}$")
            if prev is not None:
                self.assertEqual(ev["seq"], prev["seq"] + 1,
                                 "line %d seq" % (i + 1))
                self.assertEqual(ev["prev"], prev["hash"],
                                 "line %d prev" % (i + 1))
            prev = ev


# 3 ------------------------------------------------------------ SNI checks

class T03Sni(ProxyTest):
    def s_client(self, *args):
        return proxylib.run(
            ["openssl", "s_client", "-proxy",
             "127.0.0.1:%d" % self.proxy.port, "-connect",
             "allowed.test:%d" % self.up.tls_port, "-CAfile",
             self.up.ca_file] + list(args), input="", timeout=20)

    def check_no_upstream(self, before, what):
        """No byte from the client reached the upstream (the ClientHello
        was not forwarded)."""
        time.sleep(0.3)
        self.assertEqual(self.up.tls_counters.get("bytes_seen"),
                         before["bytes_seen"], "%s: the upstream received "
                         "bytes (ClientHello forwarded)" % what)

    def snapshot(self):
        c = self.up.tls_counters
        return {k: c.get(k) for k in ("accepts", "bytes_seen")}

    def test_s_client_sni_evil(self):
        before, mark = self.snapshot(), self.proxy.mark()
        r = self.s_client("-servername", "evil.test")
        self.assertNotIn("BEGIN CERTIFICATE", r.stdout,
                         "s_client got the upstream's certificate")
        self.check_no_upstream(before, "SNI evil.test")
        ev = self.assert_logged(mark, reason="sni_mismatch",
                                host="allowed.test", sni="evil.test")
        self.assertEqual(ev["port"], self.up.tls_port)
        self.assertEqual(ev["message"], PREFIX + "TLS SNI evil.test does "
                         "not match CONNECT host allowed.test")
        self.assertEqual(ev["rule"], "%s:%d" % (
            self.proxy.policy_file, entry_line(self.proxy, "allowed.test", 1)))

    # Stricter than check_no_upstream: not even a TCP connection. A proxy
    # that connects upstream before answering 200 (so that it can answer
    # 502 to a CONNECT whose upstream refuses) fails this: the brief asks
    # for both, the lead picks one.
    # The proxy connects upstream before answering 200 (so that a refused
    # upstream gets a 502), but not one byte of the client's goes there
    # until the ClientHello names the CONNECT host: no tunnel, no handshake.
    def test_sni_mismatch_opens_no_upstream_connection(self):
        before, mark = self.snapshot(), self.proxy.mark()
        self.s_client("-servername", "evil.test")
        self.assert_logged(mark, reason="sni_mismatch", sni="evil.test")
        time.sleep(0.3)
        self.check_no_upstream(before, "SNI evil.test")

    def test_s_client_sni_fronting_allowlisted_name(self):
        before, mark = self.snapshot(), self.proxy.mark()
        r = self.s_client("-servername", "other.test")
        self.assertNotIn("BEGIN CERTIFICATE", r.stdout)
        self.check_no_upstream(before, "SNI other.test")
        self.assert_logged(mark, reason="sni_mismatch", host="allowed.test",
                           sni="other.test")

    def test_s_client_right_sni_works(self):
        r = self.s_client("-servername", "allowed.test")
        self.assertIn("BEGIN CERTIFICATE", r.stdout, r.stdout + r.stderr)
        self.assertIn("Verify return code: 0", r.stdout)

    def test_s_client_no_sni(self):
        before, mark = self.snapshot(), self.proxy.mark()
        r = self.s_client("-noservername")
        self.assertNotIn("BEGIN CERTIFICATE", r.stdout)
        self.check_no_upstream(before, "no SNI")
        self.assert_logged(mark, reason="sni_missing", host="allowed.test",
                           port=self.up.tls_port)

    # docs/proxy.md: an SNI mismatch closes the tunnel with a TLS alert.
    def test_sni_mismatch_ends_with_tls_alert(self):
        c = self.tunnel("allowed.test:%d" % self.up.tls_port)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        with self.assertRaises(ssl.SSLError) as cm:
            s = ctx.wrap_socket(c.sock, server_hostname="evil.test")
            s.close()
        c.close()
        err = str(cm.exception)
        self.assertNotIsInstance(cm.exception, ssl.SSLEOFError,
                                 "tunnel closed without a TLS alert: %s" % err)
        self.assertIn("ALERT", err.upper(), err)

    def test_not_tls_in_tls_required_tunnel(self):
        before, mark = self.snapshot(), self.proxy.mark()
        with self.tunnel("allowed.test:%d" % self.up.tls_port) as c:
            c.send(b"GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n")
            data = c.read_until_close()
        self.assertNotIn(b"HTTP/1.1 200", data)
        self.check_no_upstream(before, "plain HTTP in a tls: required tunnel")
        self.assert_logged(mark, reason="not_tls", host="allowed.test",
                           port=self.up.tls_port)

    # A plain-HTTP forward request to a tls: required port.
    def test_plain_get_to_tls_required_port(self):
        mark = self.proxy.mark()
        h = "allowed.test:%d" % self.up.tls_port
        resp = proxylib.raw_request(self.proxy.port,
                                    get_request("http://%s/" % h, h))
        self.assert_block(resp, "not_tls")
        self.assert_logged(mark, reason="not_tls", host="allowed.test")


# 4 ------------------------------------------------------------ private

class T04Private(ProxyTest):
    def test_private_http(self):
        mark = self.proxy.mark()
        before = self.up.http_counters.get("accepts")
        h = "private.test:%d" % self.up.http_port
        resp = proxylib.raw_request(self.proxy.port,
                                    get_request("http://%s/" % h, h))
        want = (PREFIX + "destination %s resolves to private address "
                "127.0.0.1" % h)
        self.assert_block(resp, "private_address", want)
        ev = self.assert_logged(mark, reason="private_address",
                                host="private.test", port=self.up.http_port)
        self.assertIn("127.0.0.1", json.dumps(ev["resolved"]))
        self.assertEqual(ev["message"], want)
        self.assertEqual(self.up.http_counters.get("accepts"), before)

    def test_private_connect(self):
        mark = self.proxy.mark()
        a = "private.test:%d" % self.up.tls_port
        resp = proxylib.raw_request(self.proxy.port, connect_request(a),
                                    method="CONNECT")
        self.assert_block(resp, "private_address")
        self.assert_logged(mark, reason="private_address",
                           host="private.test", method="CONNECT")

    def test_private_curl(self):
        r = self.curl("-v", "--fail", self.url("private.test", path="/"))
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("< HTTP/1.1 403 " + PREFIX + "destination private.test"
                      ":%d resolves to private address 127.0.0.1"
                      % self.up.http_port, r.stderr)

    def test_allow_private_passes(self):
        self.assert_serves(what="allow_private: true")


# 5 ------------------------------------------------------------ concurrency

class T05Concurrency(ProxyTest):
    CLIENTS = 50
    PER_CLIENT = 20

    def test_1000_blocked_from_50_clients(self):
        p = start_proxy("proxy-concurrency",
                        extra_args=["--block-window", "1"])
        errors, statuses = [], []
        lock = threading.Lock()
        req = b"GET http://blocked.test/c HTTP/1.1\r\nHost: blocked.test\r\n" \
              b"Connection: close\r\n\r\n"

        def client():
            for _ in range(self.PER_CLIENT):
                try:
                    resp = proxylib.raw_request(p.port, req, timeout=30)
                    with lock:
                        statuses.append(resp.status)
                except Exception as e:  # noqa: BLE001 (collected)
                    with lock:
                        errors.append(repr(e))
        threads = [threading.Thread(target=client)
                   for _ in range(self.CLIENTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        total = self.CLIENTS * self.PER_CLIENT
        self.assertEqual(errors[:5], [], "%d client errors" % len(errors))
        self.assertEqual(statuses.count(403), total)
        # A burst of full lines, the rest counted in summary lines.
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline and p.blocked_attempts() < total:
            time.sleep(0.1)
        time.sleep(1.5)  # anything extra would show up by now
        lines = p.log_lines()
        events = []
        for i, line in enumerate(lines):
            try:
                events.append(json.loads(line))
            except ValueError:
                self.fail("line %d is not JSON: %r" % (i + 1, line[:300]))
        blocked = [e for e in events if e.get("event") in
                   ("egress.blocked", "egress.blocked_summary")]
        self.assertEqual(proxylib.blocked_attempts(events), total)
        seqs = [e["seq"] for e in events]
        self.assertEqual(seqs, list(range(seqs[0], seqs[0] + len(seqs))),
                         "seq values are not consecutive")
        for a, b in zip(events, events[1:]):
            self.assertEqual(b["prev"], a["hash"], "chain broken at seq %r"
                             % b["seq"])
        self.assertTrue(all(e["reason"] == "not_allowlisted"
                            for e in blocked))
        self.assert_serves(p, "1000 blocked requests")


# 6 ------------------------------------------------------------ robustness

class T06Robustness(ProxyTest):
    def outcome_of(self, data, timeout=10, per_byte_sleep=None):
        c = RawConn(self.proxy.port, timeout=timeout)
        try:
            try:
                if per_byte_sleep is None:
                    c.send(data)
                else:
                    for i in range(len(data)):
                        c.send(data[i:i + 1])
                        time.sleep(per_byte_sleep)
            except (BrokenPipeError, ConnectionResetError):
                pass  # refused before we finished: read what it said
            try:
                return c.outcome()
            except socket.timeout:
                self.fail("no response and no close within %ds" % timeout)
        finally:
            c.close()

    def test_random_bytes(self):
        rng = random.Random(20240917)
        for n in (1, 17, 300, 4096, 70000):
            data = bytes(rng.getrandbits(8) for _ in range(n))
            with self.subTest(n=n):
                self.assert_refused(self.outcome_of(data), "%d random bytes"
                                    % n)
                self.assert_serves(what="%d random bytes" % n)
        data = bytes(rng.getrandbits(8) for _ in range(500)) + b"\r\n\r\n"
        self.assert_refused(self.outcome_of(data), "random head")
        self.assert_serves(what="random head")

    def test_one_mib_header(self):
        h = "allowed.test:%d" % self.up.http_port
        data = ("GET http://%s/ HTTP/1.1\r\nHost: %s\r\nX-Big: " % (h, h)
                ).encode() + b"a" * (1 << 20) + b"\r\n\r\n"
        out = self.outcome_of(data)
        self.assert_refused(out, "1 MiB header")
        if out != "closed":
            self.assertEqual(out.status, 431, repr(out))
        self.assert_serves(what="1 MiB header")

    def test_nul_in_host(self):
        hp = self.up.http_port
        cases = {
            "absolute URI": get_request(
                "http://allowed.test\0.evil.test:%d/nul-uri" % hp,
                "allowed.test:%d" % hp),
            "Host header": get_request(
                "http://allowed.test:%d/nul-host" % hp,
                "allowed.test\0.evil.test:%d" % hp),
            "CONNECT": connect_request("allowed.test\0.evil.test:%d"
                                       % self.up.tls_port),
        }
        for what, data in cases.items():
            with self.subTest(what):
                self.assert_refused(self.outcome_of(data), "NUL in " + what)
                self.assert_serves(what="NUL in " + what)
        self.assertFalse(self.up.http_counters.saw_path("/nul-"),
                         "a request with NUL in the host reached upstream")

    def test_missing_host_header(self):
        hp = self.up.http_port
        out = self.outcome_of(("GET http://allowed.test:%d/nohost HTTP/1.1"
                               "\r\n\r\n" % hp).encode())
        self.assert_refused(out, "HTTP/1.1 without Host")
        self.assertFalse(self.up.http_counters.saw_path("/nohost"))

    def test_crlf_in_host(self):
        hp = self.up.http_port
        for what, data in (
                ("absolute URI", ("GET http://allowed.test%%0d%%0aX:%d/crlf "
                                  "HTTP/1.1\r\nHost: allowed.test:%d\r\n\r\n"
                                  % (hp, hp)).encode()),
                ("CONNECT", b"CONNECT allowed.test\rX-Evil: 1:443 HTTP/1.1"
                 b"\r\nHost: allowed.test:443\r\n\r\n")):
            with self.subTest(what):
                self.assert_refused(self.outcome_of(data), "CR/LF in host "
                                    + what)
                self.assert_serves(what="CR/LF in host " + what)
        self.assertFalse(self.up.http_counters.saw_path("/crlf"))

    def test_too_many_headers(self):
        h = "allowed.test:%d" % self.up.http_port
        extra = "".join("X-H%d: v\r\n" % i for i in range(150))
        out = self.outcome_of(get_request("http://%s/many" % h, h, extra))
        self.assert_refused(out, "150 header fields")
        if out != "closed":
            self.assertEqual(out.status, 431, repr(out))
        self.assertFalse(self.up.http_counters.saw_path("/many"))
        self.assert_serves(what="150 header fields")

    def test_connect_without_port(self):
        out = self.outcome_of(b"CONNECT allowed.test HTTP/1.1\r\n"
                              b"Host: allowed.test\r\n\r\n")
        self.assert_refused(out, "CONNECT without port")
        self.assert_serves(what="CONNECT without port")

    def test_single_bytes_blocked(self):
        data = b"GET http://blocked.test/ HTTP/1.1\r\nHost: blocked.test\r\n" \
               b"\r\n"
        out = self.outcome_of(data, per_byte_sleep=0.003)
        self.assertIsInstance(out, proxylib.Response, out)
        self.assert_block(out, "not_allowlisted", message("blocked.test", 80))
        self.assert_serves(what="request in single bytes")

    def test_single_bytes_allowed(self):
        out = self.outcome_of(self.allowed_get("/bytes"), per_byte_sleep=0.003)
        self.assertIsInstance(out, proxylib.Response, out)
        self.assertEqual(out.status, 200, repr(out))
        self.assertEqual(out.json()["path"], "/bytes")

    def test_half_request_then_close(self):
        for data in (b"", b"GET http://allowed.test", b"CONNECT a"):
            c = RawConn(self.proxy.port)
            c.send(data)
            c.close()
        self.assert_serves(what="clients closing mid-request")


# 7 ------------------------------------------------------------ normalization

class T07Normalization(ProxyTest):
    def test_case_and_trailing_dot(self):
        h = "ALLOWED.TEST.:%d" % self.up.http_port
        resp = proxylib.raw_request(self.proxy.port,
                                    get_request("http://%s/n" % h, h))
        self.assertEqual(resp.status, 200, repr(resp))
        self.assertEqual(resp.json()["path"], "/n")

    def test_case_and_trailing_dot_connect(self):
        c = self.tunnel("ALLOWED.TEST.:%d" % self.up.tls_port)
        s = self.tls_client_ctx().wrap_socket(c.sock,
                                              server_hostname="allowed.test")
        s.sendall(b"GET /t HTTP/1.1\r\nHost: allowed.test\r\n"
                  b"Connection: close\r\n\r\n")
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        s.close()
        self.assertTrue(data.startswith(b"HTTP/1.1 200"), data[:200])

    def test_ip_literals(self):
        port = self.up.http_port
        for spelling in ("2130706433", "127.1", "0x7f.0.0.1", "127.0.0.1"):
            with self.subTest(spelling):
                mark = self.proxy.mark()
                a = "%s:%d" % (spelling, port)
                resp = proxylib.raw_request(
                    self.proxy.port, get_request("http://%s/" % a, a))
                self.assert_block(resp, "ip_literal")
                self.assertIn("127.0.0.1:%d" % port, resp.reason)
                self.assert_logged(mark, reason="ip_literal",
                                   host="127.0.0.1", port=port)

    def test_ip_literal_curl(self):
        r = self.curl("-v", "--fail",
                      "http://2130706433:%d/" % self.up.http_port)
        self.assertNotEqual(r.returncode, 0)
        self.assertRegex(r.stderr, r"< HTTP/1.1 403 network blocked by "
                         r"policy: destination 127\.0\.0\.1:%d"
                         % self.up.http_port)

    def test_ip_literal_connect(self):
        mark = self.proxy.mark()
        resp = proxylib.raw_request(
            self.proxy.port, connect_request("127.1:%d" % self.up.tls_port),
            method="CONNECT")
        self.assert_block(resp, "ip_literal")
        self.assertIn("127.0.0.1", resp.reason)
        self.assert_logged(mark, reason="ip_literal", host="127.0.0.1")

    def test_bracketed_name(self):
        hp, tp = self.up.http_port, self.up.tls_port
        before = self.up.http_counters.get("accepts")
        for what, data, m in (
                ("GET", get_request("http://[allowed.test]:%d/" % hp,
                                    "[allowed.test]:%d" % hp), "GET"),
                ("CONNECT", connect_request("[allowed.test]:%d" % tp),
                 "CONNECT")):
            with self.subTest(what):
                with RawConn(self.proxy.port) as c:
                    c.send(data)
                    self.assert_refused(c.outcome(), "[allowed.test] " + what)
        self.assertEqual(self.up.http_counters.get("accepts"), before)

    def test_userinfo(self):
        hp, tp = self.up.http_port, self.up.tls_port
        before = self.up.http_counters.get("accepts")
        cases = (
            ("absolute URI", get_request("http://user@allowed.test:%d/" % hp,
                                         "allowed.test:%d" % hp)),
            ("absolute URI with password",
             get_request("http://user:pw@allowed.test:%d/" % hp,
                         "allowed.test:%d" % hp)),
            ("CONNECT", connect_request("user@allowed.test:%d" % tp)),
        )
        for what, data in cases:
            with self.subTest(what):
                with RawConn(self.proxy.port) as c:
                    c.send(data)
                    self.assert_refused(c.outcome(), "userinfo in " + what)
        self.assertEqual(self.up.http_counters.get("accepts"), before)


# 8 ------------------------------------------------------------ HTTP semantics

class T08HttpSemantics(ProxyTest):
    def test_keep_alive_each_request_decided(self):
        with RawConn(self.proxy.port) as c:
            c.send(self.allowed_get("/first"))
            r1 = c.read_response()
            self.assertEqual(r1.status, 200, repr(r1))
            self.assertEqual(r1.json()["path"], "/first")
            h = "blocked.test:%d" % self.up.http_port
            c.send(get_request("http://%s/second" % h, h))
            try:
                r2 = c.read_response()
            except proxylib.Closed as e:
                self.fail("second request on a kept-alive connection got no "
                          "response: %s" % e)
            self.assert_block(r2, "not_allowlisted",
                              message("blocked.test", self.up.http_port))

    def test_keep_alive_blocked_then_allowed(self):
        with RawConn(self.proxy.port) as c:
            c.send(get_request("http://evil.test/", "evil.test"))
            r1 = c.read_response()
            self.assertEqual(r1.status, 403)
            c.send(self.allowed_get("/after-block"))
            out = c.outcome()
            # The proxy may close after a block; it must not serve the next
            # request with the old decision or return garbage.
            if out != "closed":
                self.assertEqual(out.status, 200, repr(out))
                self.assertEqual(out.json()["path"], "/after-block")

    def test_pipelined(self):
        hb = "blocked.test:%d" % self.up.http_port
        data = (self.allowed_get("/p1") + self.allowed_get("/p2")
                + get_request("http://%s/p3" % hb, hb))
        with RawConn(self.proxy.port) as c:
            c.send(data)
            r1, r2 = c.read_response(), c.read_response()
            self.assertEqual((r1.status, r2.status), (200, 200))
            self.assertEqual(r1.json()["path"], "/p1")
            self.assertEqual(r2.json()["path"], "/p2")
            r3 = c.read_response()
            self.assert_block(r3, "not_allowlisted")

    def test_host_mismatch(self):
        mark = self.proxy.mark()
        before = self.up.http_counters.get("accepts")
        hp = self.up.http_port
        resp = proxylib.raw_request(
            self.proxy.port, get_request("http://allowed.test:%d/" % hp,
                                         "evil.test:%d" % hp))
        self.assert_block(resp, "host_mismatch")
        self.assert_logged(mark, reason="host_mismatch")
        self.assertEqual(self.up.http_counters.get("accepts"), before)

    def test_cl_and_te(self):
        before = self.up.http_counters.get("requests")
        h = "allowed.test:%d" % self.up.http_port
        data = ("POST http://%s/smuggle HTTP/1.1\r\nHost: %s\r\n"
                "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
                "0\r\n\r\n" % (h, h)).encode()
        with RawConn(self.proxy.port) as c:
            c.send(data)
            out = c.outcome()
        self.assertIsInstance(out, proxylib.Response, out)
        self.assertEqual(out.status, 400, repr(out))
        self.assertEqual(self.up.http_counters.get("requests"), before)

    def post(self, path, body, chunked):
        conn = http.client.HTTPConnection("127.0.0.1", self.proxy.port,
                                          timeout=20)
        h = "allowed.test:%d" % self.up.http_port
        try:
            if chunked:
                conn.request("POST", "http://%s%s" % (h, path),
                             body=iter(body), encode_chunked=True,
                             headers={"Host": h})
                body = b"".join(body)
            else:
                conn.request("POST", "http://%s%s" % (h, path), body=body,
                             headers={"Host": h})
            resp = conn.getresponse()
            data = resp.read()
            self.assertEqual(resp.status, 200, data[:300])
            doc = json.loads(data)
        finally:
            conn.close()
        self.assertEqual(doc["method"], "POST")
        self.assertEqual(doc["body_len"], len(body))
        self.assertEqual(doc["body_sha256"], hashlib.sha256(body).hexdigest())

    def test_post_chunked(self):
        rng = random.Random(7)
        parts = [bytes(rng.getrandbits(8) for _ in range(n))
                 for n in (1, 100, 5000, 70000, 3)]
        self.post("/chunked", parts, chunked=True)

    def test_post_content_length(self):
        self.post("/cl", os.urandom(300000), chunked=False)

    def test_64mib_download_streams(self):
        n = 64 << 20
        env = {"ASAN_OPTIONS": (os.environ.get("ASAN_OPTIONS", "") +
                                ":quarantine_size_mb=1").lstrip(":")}
        p = start_proxy("proxy-stream", env=env)
        base = p.rss_kib()
        h = "allowed.test:%d" % self.up.http_port
        peak = base
        with RawConn(p.port, timeout=60) as c:
            c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
            c.send(get_request("http://%s/big?n=%d" % (h, n), h))
            # Read nothing for a while: a proxy that buffers instead of
            # applying backpressure would pull the whole body now.
            for _ in range(20):
                time.sleep(0.1)
                peak = max(peak, p.rss_kib())
            version, status, reason, headers, _ = c.read_head()
            self.assertEqual(status, 200)
            digest, got = hashlib.sha256(), len(c.buf)
            digest.update(c.buf)
            c.buf = b""
            i = 0
            while got < n:
                data = c.sock.recv(1 << 20)
                if not data:
                    break
                digest.update(data)
                got += len(data)
                i += 1
                if i % 64 == 0:
                    peak = max(peak, p.rss_kib())
        self.assertEqual(got, n, "download truncated")
        self.assertEqual(digest.hexdigest(), proxylib.big_digest(n))
        grew = (peak - base) // 1024
        print("\n  proxy RSS: base %d MiB, peak %d MiB"
              % (base // 1024, peak // 1024), file=sys.stderr)
        self.assertLess(grew, 16, "proxy RSS grew by %d MiB during a 64 MiB "
                        "download (base %d KiB, peak %d KiB)"
                        % (grew, base, peak))


# 9 ------------------------------------------------------------ IPv6

class T09Ipv6(ProxyTest):
    @unittest.skipUnless(proxylib.ipv6_loopback_available(),
                         "::1 unavailable")
    def test_ipv6_listener(self):
        port = proxylib.free_port(socket.AF_INET6, "::1")
        p = start_proxy("proxy-ipv6", listens=["[::1]:%d" % port])
        self.assertEqual(p.listening, ["[::1]:%d" % port])
        r = proxylib.run(["curl", "-sS", "-w", "\n%{http_code}", "-x",
                          "http://[::1]:%d" % port, self.url(path="/v6")])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.endswith("\n200"), r.stdout)
        mark = p.mark()
        resp = proxylib.raw_request(port, connect_request("blocked.test:443"),
                                    host="::1", method="CONNECT")
        self.assert_block(resp, "not_allowlisted",
                          message("blocked.test", 443))
        ev = self.assert_logged(mark, proxy=p, host="blocked.test")
        self.assertIn("::1", str(ev["src"]))

    @unittest.skipUnless(proxylib.ipv6_loopback_available(),
                         "::1 unavailable")
    def test_ipv4_and_ipv6_listeners(self):
        p6 = proxylib.free_port(socket.AF_INET6, "::1")
        p4 = proxylib.free_port()
        p = start_proxy("proxy-dual", listens=["127.0.0.1:%d" % p4,
                                               "[::1]:%d" % p6])
        for host, port in (("127.0.0.1", p4), ("::1", p6)):
            with self.subTest(host):
                resp = proxylib.raw_request(port, self.allowed_get("/d"),
                                            host=host)
                self.assertEqual(resp.status, 200)
        self.assertIsNotNone(p)


# 10 ----------------------------------------------------------- upstream down

class T10UpstreamFailure(ProxyTest):
    def check_502(self, resp, mark):
        self.assertEqual(resp.status, 502, repr(resp))
        ps = resp.header("Proxy-Status") or ""
        self.assertIn("error=", ps, "Proxy-Status %r has no error parameter"
                      % ps)
        self.assertNotEqual(resp.header("X-Sandgate-Reason"),
                            "not_allowlisted")
        time.sleep(1.2)
        extra = [e for e in self.proxy.events()[mark:]
                 if e.get("event") == "egress.blocked"]
        self.assertEqual(extra, [], "an upstream failure was logged as "
                         "egress.blocked")

    def test_connection_refused_http(self):
        mark = self.proxy.mark()
        h = "allowed.test:%d" % self.up.refused_port
        resp = proxylib.raw_request(self.proxy.port,
                                    get_request("http://%s/" % h, h))
        self.check_502(resp, mark)
        print("\n  502 Proxy-Status: %s" % resp.header("Proxy-Status"),
              file=sys.stderr)

    def test_connection_refused_connect(self):
        mark = self.proxy.mark()
        resp = proxylib.raw_request(
            self.proxy.port,
            connect_request("allowed.test:%d" % self.up.refused_port),
            method="CONNECT")
        self.check_502(resp, mark)


# ------------------------------------------------------------ last: SIGTERM

class T99Shutdown(ProxyTest):
    def test_sigterm_exits(self):
        p = start_proxy("proxy-sigterm")
        self.assert_serves(p, "start")
        p.checked = True
        t0 = time.monotonic()
        status = p.stop()
        self.assertIsNotNone(status, "no exit within 10 s of SIGTERM")
        self.assertIn(status, (0, -15), "exit status after SIGTERM")
        self.assertLess(time.monotonic() - t0, 5)
        self.assertIsNone(p.sanitizer_report(), p.sanitizer_report())


def main():
    return proxylib.run_tests(sys.modules[__name__])


if __name__ == "__main__":
    sys.exit(main())
