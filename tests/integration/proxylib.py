"""Harness of the sandgate-proxy integration tests (standard library only).

Pieces:
  Upstreams   loopback test servers: plain HTTP and TLS (test CA made with the
              openssl CLI), both echoing the request as JSON, plus a port that
              refuses connections.
  Proxy       one sandgate-proxy process with a policy folder generated from
              tests/data/proxy/policy/*.yaml.in, a hosts file and its own log
              folder; started and stopped by the tests.
  RawConn     a client socket that sends exact bytes and parses responses
              (the tests need malformed requests no client library sends).

Everything listens on loopback only; every name is under .test.
"""

import hashlib
import http.client
import http.server
import json
import os
import re
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import sys
import threading
import time
import urllib.parse

SRC = os.environ.get("SANDGATE_SRC") or os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("SANDGATE_BIN") or os.path.join(SRC, "build", "bin")
DATA = os.path.join(SRC, "tests", "data", "proxy")
PROXY_BIN = os.path.join(BIN, "sandgate-proxy")

# Proxy variables would send curl or urllib elsewhere; tests set proxies
# explicitly.
PROXY_ENV = ("http_proxy", "https_proxy", "all_proxy", "no_proxy",
             "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


def clean_env(extra=None):
    """os.environ without proxy variables, plus extra."""
    env = {k: v for k, v in os.environ.items() if k not in PROXY_ENV}
    if extra:
        env.update(extra)
    return env


def free_port(family=socket.AF_INET, host="127.0.0.1"):
    """A port nobody listens on right now (bound, then released)."""
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def ipv6_loopback_available():
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


# ---------------------------------------------------------------- upstreams

class Counters:
    """Thread-safe counters the upstream servers update."""

    def __init__(self):
        self.lock = threading.Lock()
        self.values = {}
        self.snis = []
        self.paths = []

    def saw_path(self, needle):
        """1 when a request path containing needle reached the server."""
        with self.lock:
            return any(needle in p for p in self.paths)

    def bump(self, name):
        with self.lock:
            self.values[name] = self.values.get(name, 0) + 1

    def get(self, name):
        with self.lock:
            return self.values.get(name, 0)


def _read_chunked(rfile):
    """Decode a chunked request body from rfile; returns the bytes."""
    body = bytearray()
    while True:
        line = rfile.readline(1024)
        if not line.endswith(b"\r\n"):
            raise ValueError("bad chunk-size line %r" % line)
        size = int(line.split(b";", 1)[0].strip(), 16)
        if size == 0:
            break
        body += rfile.read(size)
        if rfile.read(2) != b"\r\n":
            raise ValueError("chunk without CRLF")
    while True:  # trailer section
        line = rfile.readline(8192)
        if line in (b"\r\n", b""):
            break
    return bytes(body)


class EchoHandler(http.server.BaseHTTPRequestHandler):
    """Echoes method, path, Host, headers and body (length, sha256) as JSON.

    /big?n=BYTES streams BYTES bytes (a repeating pattern) with
    Content-Length; /close answers then closes the connection.
    """
    protocol_version = "HTTP/1.1"
    server_version = "sandgate-test-upstream"
    # An answer's head and body are two writes: with Nagle on, the body
    # waited for the proxy's delayed ACK, 40 ms a request on a kept
    # connection (a real server sends both at once).
    disable_nagle_algorithm = True

    def log_message(self, fmt, *args):
        pass

    def _body(self):
        te = self.headers.get("Transfer-Encoding")
        if te is not None:
            if te.strip().lower() != "chunked":
                raise ValueError("unexpected Transfer-Encoding %r" % te)
            return _read_chunked(self.rfile), "chunked"
        cl = self.headers.get("Content-Length")
        if cl is not None:
            return self.rfile.read(int(cl)), "length"
        return b"", "none"

    def _handle(self):
        self.server.counters.bump("requests")
        with self.server.counters.lock:
            self.server.counters.paths.append(self.path)
        url = urllib.parse.urlsplit(self.path)
        if url.path == "/big":
            return self._big(int(urllib.parse.parse_qs(url.query)["n"][0]))
        try:
            body, framing = self._body()
        except ValueError as e:
            self.send_error(400, str(e))
            return
        doc = {
            "method": self.command,
            "path": self.path,
            "host": self.headers.get("Host"),
            "headers": [[k, v] for k, v in self.headers.items()],
            "body_len": len(body),
            "body_sha256": hashlib.sha256(body).hexdigest(),
            "body_framing": framing,
            "tls": isinstance(self.connection, ssl.SSLSocket),
        }
        out = json.dumps(doc).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        if url.path == "/close":
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(out)

    def _big(self, n):
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(n))
        self.end_headers()
        block = big_pattern(65536)
        left = n
        try:
            while left > 0:
                k = min(left, len(block))
                self.wfile.write(block[:k])
                left -= k
        except OSError:
            self.close_connection = True

    do_GET = do_POST = do_PUT = do_HEAD = do_DELETE = do_OPTIONS = _handle


def big_pattern(n):
    """The bytes /big?n=... sends, repeated in 64 KiB blocks."""
    unit = bytes(range(256))
    return (unit * (n // 256 + 1))[:n]


def big_digest(n):
    h = hashlib.sha256()
    block = big_pattern(65536)
    left = n
    while left > 0:
        k = min(left, len(block))
        h.update(block[:k])
        left -= k
    return h.hexdigest()


class CountingServer(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr, handler, counters):
        self.counters = counters
        super().__init__(addr, handler)

    def get_request(self):
        conn, addr = self.socket.accept()
        self.counters.bump("accepts")
        return conn, addr


class TLSEchoHandler(EchoHandler):
    """EchoHandler behind a TLS handshake done in the handler's thread.

    Before the handshake it peeks: a connection whose peer sends any byte
    counts as "bytes_seen", so a test can tell "the upstream got a
    ClientHello" apart from "the upstream got a bare TCP connection".
    """

    def setup(self):
        raw = self.request
        raw.settimeout(10)
        try:
            first = raw.recv(1, socket.MSG_PEEK)
        except OSError:
            first = b""
        if first:
            self.server.counters.bump("bytes_seen")
        self.request = self.server.tls_ctx.wrap_socket(
            raw, server_side=True, do_handshake_on_connect=False)
        try:
            self.request.do_handshake()
            self.server.counters.bump("handshakes")
        except (OSError, ssl.SSLError):
            self.server.counters.bump("handshake_failures")
            self.request = raw
            self.handshake_failed = True
        super().setup()

    def handle(self):
        if getattr(self, "handshake_failed", False):
            return
        super().handle()


def make_test_pki(folder, names=("allowed.test", "other.test")):
    """Test CA and a leaf for names (allowed.test and other.test), via
    openssl(1).

    Returns (ca_pem, leaf_pem, leaf_key).
    """
    def run(*args):
        subprocess.run(["openssl"] + list(args), cwd=folder, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"]
    run("req", "-x509", *ec, "-nodes", "-keyout", "ca.key", "-out",
        "ca.pem", "-days", "2", "-subj", "/CN=sandgate test CA",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    run("req", *ec, "-nodes", "-keyout", "leaf.key", "-out", "leaf.csr",
        "-subj", "/CN=" + names[0])
    with open(os.path.join(folder, "leaf.ext"), "w") as f:
        f.write("basicConstraints=CA:FALSE\n"
                "keyUsage=critical,digitalSignature\n"
                "extendedKeyUsage=serverAuth\n"
                "subjectAltName=%s\n" % ",".join("DNS:" + n
                                                  for n in names))
    run("x509", "-req", "-in", "leaf.csr", "-CA", "ca.pem", "-CAkey",
        "ca.key", "-CAcreateserial", "-out", "leaf.pem", "-days", "2",
        "-extfile", "leaf.ext")
    return (os.path.join(folder, "ca.pem"), os.path.join(folder, "leaf.pem"),
            os.path.join(folder, "leaf.key"))


class Upstreams:
    """The loopback upstream servers. start() then stop()."""

    def __init__(self, workdir):
        self.workdir = workdir
        self.http_counters = Counters()
        self.tls_counters = Counters()
        self.servers = []

    def start(self):
        pki = os.path.join(self.workdir, "pki")
        os.makedirs(pki, exist_ok=True)
        self.ca_file, leaf, key = make_test_pki(pki)
        http_srv = CountingServer(("127.0.0.1", 0), EchoHandler,
                                  self.http_counters)
        tls_srv = CountingServer(("127.0.0.1", 0), TLSEchoHandler,
                                 self.tls_counters)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(leaf, key)
        counters = self.tls_counters

        def on_sni(sslsock, name, context):
            with counters.lock:
                counters.snis.append(name)
        ctx.sni_callback = on_sni
        tls_srv.tls_ctx = ctx
        for srv in (http_srv, tls_srv):
            t = threading.Thread(target=srv.serve_forever, daemon=True)
            t.start()
            self.servers.append(srv)
        self.http_port = http_srv.server_address[1]
        self.tls_port = tls_srv.server_address[1]
        # Allowed by policy, nothing listens: connection refused.
        self.refused_port = free_port()
        return self

    def stop(self):
        for srv in self.servers:
            srv.shutdown()
            srv.server_close()
        self.servers = []


# -------------------------------------------------------------------- proxy

def make_policy_dir(dest, ports):
    """Fill dest with DATA/policy/*.yaml.in, @NAME@ replaced from ports."""
    os.makedirs(dest, exist_ok=True)
    src = os.path.join(DATA, "policy")
    for name in sorted(os.listdir(src)):
        if not name.endswith(".yaml.in"):
            continue
        with open(os.path.join(src, name)) as f:
            text = f.read()
        for key, value in ports.items():
            text = text.replace("@%s@" % key, str(value))
        left = re.findall(r"@[A-Z_]+@", text)
        if left:
            raise ValueError("%s: no value for %s" % (name, left))
        with open(os.path.join(dest, name[:-len(".in")]), "w") as f:
            f.write(text)
    return dest


def make_hosts_file(dest):
    shutil.copyfile(os.path.join(DATA, "hosts"), dest)
    return dest


LISTEN_RE = re.compile(r"sandgate-proxy: listening on (\S+)")
SANITIZER_RE = re.compile(r"(ERROR: AddressSanitizer|ERROR: LeakSanitizer|"
                          r"runtime error:|Sanitizer:DEADLYSIGNAL)")


class ProxyError(Exception):
    pass


def blocked_attempts(events, pred=None):
    """Blocked attempts the events stand for: one per egress.blocked line,
    `count` per egress.blocked_summary line (the proxy writes a burst of
    full lines per client, destination and reason, then counts the rest;
    docs/audit.md). pred, when given, picks the events counted."""
    n = 0
    for e in events:
        if pred is not None and not pred(e):
            continue
        if e.get("event") == "egress.blocked":
            n += 1
        elif e.get("event") == "egress.blocked_summary":
            n += e["count"]
    return n


def would_block_attempts(events, pred=None):
    """The same for egress.would_block lines and their summaries."""
    n = 0
    for e in events:
        if pred is not None and not pred(e):
            continue
        if e.get("event") == "egress.would_block":
            n += 1
        elif e.get("event") == "egress.would_block_summary":
            n += e["count"]
    return n


class Proxy:
    """One sandgate-proxy process.

    listens: list of "ADDR:PORT" strings (default one free 127.0.0.1 port).
    After start(): .port (the first listener's), .pid, .log_path.
    """

    def __init__(self, workdir, upstreams, listens=None, sets="test",
                 extra_args=(), env=None, name="proxy"):
        self.dir = os.path.join(workdir, name)
        os.makedirs(self.dir)
        self.policy_dir = make_policy_dir(
            os.path.join(self.dir, "policy.d"),
            {"HTTP_PORT": upstreams.http_port,
             "TLS_PORT": upstreams.tls_port,
             "REFUSED_PORT": upstreams.refused_port})
        self.policy_file = os.path.join(self.policy_dir, "test.yaml")
        self.hosts = make_hosts_file(os.path.join(self.dir, "hosts"))
        self.log_dir = os.path.join(self.dir, "logs")
        os.makedirs(self.log_dir)
        self.log_path = os.path.join(self.log_dir, "security-events.jsonl")
        self.stderr_path = os.path.join(self.dir, "stderr.txt")
        if listens is None:
            listens = ["127.0.0.1:%d" % free_port()]
        self.listens = listens
        self.sets = sets
        self.extra_args = list(extra_args)
        self.env = clean_env(env)
        self.proc = None

    def argv(self):
        args = [PROXY_BIN]
        for addr in self.listens:
            args += ["--listen", addr]
        args += ["--policy-dir", self.policy_dir, "--log-dir", self.log_dir,
                 "--sets", self.sets, "--hosts", self.hosts]
        return args + self.extra_args

    def start(self, timeout=15):
        if not os.access(PROXY_BIN, os.X_OK):
            raise ProxyError("no executable %s (set SANDGATE_BIN)"
                             % PROXY_BIN)
        self._stderr = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(self.argv(), stdin=subprocess.DEVNULL,
                                     stdout=self._stderr,
                                     stderr=self._stderr, env=self.env)
        self.pid = self.proc.pid
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            seen = LISTEN_RE.findall(self.stderr())
            if len(seen) >= len(self.listens):
                self.listening = seen
                self.port = int(seen[0].rsplit(":", 1)[1])
                return self
            if self.proc.poll() is not None:
                raise ProxyError("sandgate-proxy exited with %d before "
                                 "listening; stderr:\n%s"
                                 % (self.proc.returncode, self.stderr()))
            time.sleep(0.05)
        self.kill()
        raise ProxyError("sandgate-proxy did not print 'listening on' for "
                         "every --listen within %ds; stderr:\n%s"
                         % (timeout, self.stderr()))

    def stderr(self):
        try:
            with open(self.stderr_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except FileNotFoundError:
            return ""

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout=10):
        """SIGTERM, wait; SIGKILL past timeout. Returns the exit status,
        or None when it had to be killed."""
        if self.proc is None:
            return None
        status = self.proc.poll()
        if status is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                status = self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
                status = None
        self._stderr.close()
        return status

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def sanitizer_report(self):
        """The stderr text from the first sanitizer report, or None."""
        text = self.stderr()
        m = SANITIZER_RE.search(text)
        return text[max(0, m.start() - 200):] if m else None

    def rss_kib(self):
        """VmRSS of the process in KiB, from /proc/PID/status."""
        with open("/proc/%d/status" % self.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise ProxyError("no VmRSS in /proc/%d/status" % self.pid)

    # -- the security-event log

    def log_lines(self):
        try:
            with open(self.log_path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return []
        return data.decode("utf-8", "replace").splitlines()

    def events(self):
        """Every log line parsed; a line that is not JSON raises."""
        return [json.loads(line) for line in self.log_lines()]

    def blocked_events(self):
        return [e for e in self.events() if e.get("event") == "egress.blocked"]

    def blocked_attempts(self, start=0, pred=None):
        """blocked_attempts() of the events from index start on."""
        return blocked_attempts(self.events()[start:], pred)

    def wait_event(self, pred, start=0, timeout=5.0):
        """The first event at index >= start that pred accepts, waiting up
        to timeout seconds for it to be written; None if none came."""
        deadline = time.monotonic() + timeout
        while True:
            evs = self.events()
            for e in evs[start:]:
                if pred(e):
                    return e
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.05)

    def mark(self):
        """The number of log lines now: pass it as start to wait_event."""
        return len(self.log_lines())


def stop_and_check(p):
    """Stop proxy p once; the problems seen (it died during the tests,
    did not exit on SIGTERM, or left a sanitizer report)."""
    if p.proc is None or getattr(p, "checked", False):
        return []
    p.checked = True
    problems = []
    alive = p.alive()
    status = p.stop()
    if not alive:
        problems.append("%s: died during the tests (status %r); stderr "
                        "ends:\n%s" % (p.dir, p.proc.returncode,
                                       p.stderr()[-3000:]))
    elif status is None:
        problems.append("%s: did not exit within 10 s of SIGTERM" % p.dir)
    report = p.sanitizer_report()
    if report:
        problems.append("%s: sanitizer report:\n%s" % (p.dir, report[:4000]))
    return problems


def teardown(world, proxies=(), cleanups=()):
    """The end of a test module: stop and check each proxy, run the
    cleanups, stop the upstream world["up"], remove world["dir"] (kept
    with SANDGATE_KEEP set); raise with every problem seen."""
    problems = []
    for p in proxies:
        problems += stop_and_check(p)
    for c in cleanups:
        c()
    if "up" in world:
        world["up"].stop()
    if os.environ.get("SANDGATE_KEEP"):
        print("kept %s" % world["dir"], file=sys.stderr)
    elif "dir" in world:
        shutil.rmtree(world["dir"], ignore_errors=True)
    if problems:
        raise AssertionError("\n".join(problems))


# ------------------------------------------------------------- raw clients

class Closed(Exception):
    """The peer closed (EOF or reset) before a whole response arrived."""


class Response:
    def __init__(self, version, status, reason, headers, body, raw_head):
        self.version = version
        self.status = status
        self.reason = reason
        self.headers = headers          # list of (name, value)
        self.body = body
        self.raw_head = raw_head

    def header(self, name):
        name = name.lower()
        for k, v in self.headers:
            if k.lower() == name:
                return v
        return None

    def json(self):
        return json.loads(self.body)

    def __repr__(self):
        return "<Response %d %r headers=%r body=%r>" % (
            self.status, self.reason, self.headers, self.body[:300])


class RawConn:
    """A TCP client connection that sends exact bytes and reads responses.

    read_response() parses one response (Content-Length, chunked, or to
    EOF) and keeps any bytes after it for the next call.
    """

    def __init__(self, port, host="127.0.0.1", timeout=10.0):
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.sock = socket.socket(family, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect((host, port))
        self.buf = b""

    def send(self, data):
        self.sock.sendall(data)

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _fill(self):
        try:
            data = self.sock.recv(65536)
        except (ConnectionResetError, BrokenPipeError):
            data = b""
        if not data:
            raise Closed("connection closed with %d bytes pending: %r"
                         % (len(self.buf), self.buf[:200]))
        self.buf += data

    def read_exact(self, n):
        while len(self.buf) < n:
            self._fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def read_line(self):
        while b"\r\n" not in self.buf:
            self._fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def read_until_close(self, limit=1 << 26):
        while len(self.buf) < limit:
            try:
                self._fill()
            except Closed:
                break
        out, self.buf = self.buf, b""
        return out

    def read_head(self):
        while b"\r\n\r\n" not in self.buf:
            self._fill()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        version, status, reason = (lines[0].split(" ", 2) + [""])[:3]
        headers = []
        for line in lines[1:]:
            k, _, v = line.partition(":")
            headers.append((k.strip(), v.strip()))
        return version, int(status), reason, headers, head

    def read_response(self, head_only=False, method="GET"):
        version, status, reason, headers, head = self.read_head()
        resp = Response(version, status, reason, headers, b"", head)
        if head_only or method == "HEAD" or status in (204, 304) or \
                100 <= status < 200 or (method == "CONNECT" and
                                        200 <= status < 300):
            return resp
        te = resp.header("Transfer-Encoding")
        cl = resp.header("Content-Length")
        if te and "chunked" in te.lower():
            resp.body = self._read_chunked()
        elif cl is not None:
            resp.body = self.read_exact(int(cl))
        else:
            resp.body = self.read_until_close()
        return resp

    def _read_chunked(self):
        body = b""
        while True:
            size = int(self.read_line().split(b";")[0], 16)
            if size == 0:
                while self.read_line() != b"":
                    pass
                return body
            body += self.read_exact(size)
            self.read_line()

    def outcome(self):
        """One response, or the string "closed" when the peer closed first.

        A timeout propagates (socket.timeout): a hung connection is neither.
        """
        try:
            return self.read_response()
        except Closed:
            return "closed"


def closed_by_peer(c, timeout=5.0):
    """True when the peer of RawConn c closes (EOF or reset) within
    timeout seconds; what it sends before that is read and dropped."""
    c.sock.settimeout(timeout)
    while True:
        try:
            data = c.sock.recv(65536)
        except socket.timeout:
            return False
        except (ConnectionResetError, BrokenPipeError):
            return True
        if not data:
            return True


def run_tests(module):
    """Run a test module's tests (names from argv, -v for verbose), print
    "N passed, N failed"; the exit status."""
    import sys
    import unittest
    verbosity = 2 if "-v" in sys.argv else 1
    argv = [a for a in sys.argv[1:] if a != "-v"]
    loader = unittest.TestLoader()
    if argv:
        suite = loader.loadTestsFromNames(argv, module)
    else:
        suite = loader.loadTestsFromModule(module)
    result = unittest.TextTestRunner(verbosity=verbosity).run(suite)
    failed = len(result.failures) + len(result.errors) + \
        len(result.unexpectedSuccesses)
    passed = result.testsRun - failed - len(result.skipped)
    sys.stderr.flush()
    if result.skipped:
        print("%d skipped" % len(result.skipped))
    print("%d passed, %d failed" % (max(passed, 0), failed))
    return 0 if failed == 0 and result.testsRun > 0 else 1


def raw_request(port, data, host="127.0.0.1", timeout=10.0, method="GET"):
    """Send data on a new connection and return its first response."""
    with RawConn(port, host, timeout) as c:
        c.send(data)
        return c.read_response(method=method)


def get_request(url, host_header, extra=""):
    """A proxy-form GET request head."""
    return ("GET %s HTTP/1.1\r\nHost: %s\r\n%s\r\n"
            % (url, host_header, extra)).encode()


def connect_request(authority, host_header=None):
    return ("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n"
            % (authority, host_header or authority)).encode()


def run(cmd, timeout=30, input=None):
    """Run cmd (a list) with proxy variables removed; CompletedProcess with
    text stdout/stderr."""
    return subprocess.run(cmd, input=input, capture_output=True,
                          timeout=timeout, env=clean_env(), text=True,
                          errors="replace",
                          stdin=None if input is not None
                          else subprocess.DEVNULL)


# --------------------------------------------------------- control socket

class UnixHTTPConnection(http.client.HTTPConnection):
    """http.client over a unix socket (the proxy's control socket)."""

    def __init__(self, path, timeout=10):
        super().__init__("proxy", timeout=timeout)
        self.unix_path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(self.timeout)
        self.sock.connect(self.unix_path)


def control(sock_path, method, path, body=None):
    """(status, parsed JSON body) of one control-socket request."""
    c = UnixHTTPConnection(sock_path)
    try:
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json"} if data else {}
        c.request(method, path, body=data, headers=headers)
        r = c.getresponse()
        raw = r.read()
        return r.status, json.loads(raw) if raw.strip() else None
    finally:
        c.close()


def wait_unix_socket(path, timeout=10.0):
    """Wait until the Unix socket at path takes a connection (a proxy's
    control socket: "listening on" is said once it listens, older proxies
    said it before)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.socket(socket.AF_UNIX) as s:
                s.connect(path)
            return
        except OSError:
            time.sleep(0.05)


def bound_socket(src, port, dst="127.0.0.1", timeout=10.0):
    """A TCP socket from source address src to dst:port."""
    family = socket.AF_INET6 if ":" in dst else socket.AF_INET
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(timeout)
    if src is not None:
        s.bind((src, 0))
    s.connect((dst, port))
    return s


def bound_conn(src, port, dst="127.0.0.1", timeout=10.0):
    """A RawConn whose socket is bound to source address src."""
    c = RawConn.__new__(RawConn)
    c.sock = bound_socket(src, port, dst, timeout)
    c.buf = b""
    return c


# ------------------------------------------------------------ DNS server

class DnsServer:
    """A loopback DNS server (UDP) for the proxy's --resolver.

    records: {name: "a.b.c.d"} answered with one A record (AAAA: none);
    every other name gets NXDOMAIN. delays: {name: seconds}: answers to
    that name are sent that long after its first query. .queries lists
    (name, qtype) as they came. bind: where it listens (loopback, a port
    of its own, unless told).
    """

    def __init__(self, records=None, delays=None, bind=("127.0.0.1", 0)):
        self.records = dict(records or {})
        self.delays = dict(delays or {})
        self.queries = []
        self.first = {}
        self.lock = threading.Lock()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(bind)
        self.port = self.sock.getsockname()[1]
        self.stopped = False
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.stopped = True
        self.sock.close()

    def asked(self, name):
        with self.lock:
            return [q for q in self.queries if q[0] == name]

    @staticmethod
    def _name(data, off):
        labels = []
        while data[off] != 0:
            n = data[off]
            labels.append(data[off + 1:off + 1 + n].decode("latin-1"))
            off += 1 + n
        return ".".join(labels).lower(), off + 1

    def _answer(self, data, addr, name, qtype, qend):
        qid = data[:2]
        question = data[12:qend + 4]
        ip = self.records.get(name)
        if ip is None:
            out = qid + struct.pack(">HHHHH", 0x8183, 1, 0, 0, 0) + question
        elif qtype == 1:
            out = (qid + struct.pack(">HHHHH", 0x8180, 1, 1, 0, 0) + question
                   + b"\xc0\x0c" + struct.pack(">HHIH", 1, 1, 60, 4)
                   + socket.inet_aton(ip))
        else:
            out = qid + struct.pack(">HHHHH", 0x8180, 1, 0, 0, 0) + question
        try:
            self.sock.sendto(out, addr)
        except OSError:
            pass

    def _serve(self):
        while not self.stopped:
            try:
                data, addr = self.sock.recvfrom(4096)
            except OSError:
                return
            try:
                name, qend = self._name(data, 12)
                qtype = struct.unpack(">H", data[qend:qend + 2])[0]
            except (IndexError, struct.error):
                continue
            with self.lock:
                self.queries.append((name, qtype))
                t0 = self.first.setdefault(name, time.monotonic())
            delay = self.delays.get(name)
            if delay is None:
                self._answer(data, addr, name, qtype, qend)
                continue
            wait = max(0.0, t0 + delay - time.monotonic())
            threading.Timer(wait, self._answer,
                            (data, addr, name, qtype, qend)).start()


# ------------------------------------------------------- TLS ClientHello

P256_GENERATOR = bytes.fromhex(
    "04"
    "6b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296"
    "4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5")
X25519_BASE = bytes([9]) + bytes(31)
GROUP_P256, GROUP_X25519 = 0x0017, 0x001d
HRR_RANDOM = bytes.fromhex(
    "cf21ad74e59a6111be1d8c021e65b891c2a211167abb8c5e079e09e2c8a8339c")


def tls_ext(ext_type, data):
    return struct.pack(">HH", ext_type, len(data)) + data


def client_hello(names=(), share=(GROUP_P256, P256_GENERATOR),
                 groups=(GROUP_P256, GROUP_X25519), extra=(), cookie=None,
                 random=None, session_id=None, record_size=16384,
                 raw_sni=None, suites=(0x1301,)):
    """The records of a TLS 1.3 ClientHello, built byte by byte.

    names: server_name host names (bytes or str; several make an invalid
    list); share: the one key share (group, key); extra: (type, data)
    extensions added at the end; raw_sni: a whole server_name extension
    body used as is.
    """
    names = [n.encode() if isinstance(n, str) else n for n in names]
    exts = b""
    if raw_sni is not None:
        exts += tls_ext(0, raw_sni)
    elif names:
        lst = b"".join(b"\x00" + struct.pack(">H", len(n)) + n for n in names)
        exts += tls_ext(0, struct.pack(">H", len(lst)) + lst)
    g = b"".join(struct.pack(">H", x) for x in groups)
    exts += tls_ext(10, struct.pack(">H", len(g)) + g)
    sa = b"".join(struct.pack(">H", x) for x in (0x0403, 0x0804, 0x0401))
    exts += tls_ext(13, struct.pack(">H", len(sa)) + sa)
    exts += tls_ext(43, b"\x02\x03\x04")
    ks = struct.pack(">HH", share[0], len(share[1])) + share[1]
    exts += tls_ext(51, struct.pack(">H", len(ks)) + ks)
    exts += tls_ext(45, b"\x01\x01")
    if cookie is not None:
        exts += tls_ext(44, struct.pack(">H", len(cookie)) + cookie)
    for t, d in extra:
        exts += tls_ext(t, d)
    cs = b"".join(struct.pack(">H", x) for x in suites)
    body = (b"\x03\x03" + (random or os.urandom(32)) + b"\x20"
            + (session_id or os.urandom(32)) + struct.pack(">H", len(cs))
            + cs + b"\x01\x00" + struct.pack(">H", len(exts)) + exts)
    hs = b"\x01" + len(body).to_bytes(3, "big") + body
    out = b""
    for i in range(0, len(hs), record_size):
        chunk = hs[i:i + record_size]
        out += b"\x16\x03\x01" + struct.pack(">H", len(chunk)) + chunk
    return out


def read_record(sock):
    """One TLS record (type, payload) from sock; None at EOF."""
    head = b""
    while len(head) < 5:
        data = sock.recv(5 - len(head))
        if not data:
            return None
        head += data
    n = struct.unpack(">H", head[3:5])[0]
    body = b""
    while len(body) < n:
        data = sock.recv(n - len(body))
        if not data:
            return None
        body += data
    return head[0], body


def server_hello(sock):
    """Read records until the server's first handshake message: returns
    ("hello", random, extensions) for a ServerHello, ("retry", random,
    extensions) for a HelloRetryRequest, ("alert", payload) or ("closed",).
    """
    while True:
        try:
            rec = read_record(sock)
        except (ConnectionResetError, socket.timeout):
            rec = None
        if rec is None:
            return ("closed",)
        ctype, body = rec
        if ctype == 21:
            return ("alert", body)
        if ctype != 22:
            continue
        if body[0] != 2:
            return ("other", body[0])
        rnd = body[6:38]
        off = 38
        sid_len = body[off]
        off += 1 + sid_len + 2 + 1
        ext_len = struct.unpack(">H", body[off:off + 2])[0]
        exts, p = {}, off + 2
        while p < off + 2 + ext_len:
            t, n = struct.unpack(">HH", body[p:p + 4])
            exts[t] = body[p + 4:p + 4 + n]
            p += 4 + n
        return ("retry" if rnd == HRR_RANDOM else "hello", rnd, exts)


def sanitized():
    """The proxy under test is built with AddressSanitizer (RSS bounds
    then do not apply: its redzones and quarantine hold memory on
    purpose)."""
    try:
        with open(PROXY_BIN, "rb") as f:
            return b"__asan_init" in f.read()
    except OSError:
        return False


def recv_until(sock, marker):
    """Bytes from sock until marker is among them; None when the peer
    closed first."""
    data = b""
    while marker not in data:
        chunk = sock.recv(4096)
        if not chunk:
            return None
        data += chunk
    return data


def read_until_closed(sock):
    """Every byte sock sends until the peer closes."""
    data = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk


def get_status(port, host, src=None, timeout=10.0):
    """One proxy-form GET of http://host/ on a connection of its own
    (from source address src if given); the response's status code."""
    with socket.socket() as s:
        s.settimeout(timeout)
        if src is not None:
            s.bind((src, 0))
        s.connect(("127.0.0.1", port))
        s.sendall(get_request("http://%s/" % host, host,
                              "Connection: close\r\n"))
        return int(read_until_closed(s).split(b" ", 2)[1])


def flood(port, hosts, threads=8, want=403):
    """get_status() for every name in hosts, from `threads` clients at
    once; raises AssertionError on any error or other status."""
    errors, lock = [], threading.Lock()
    hosts = list(hosts)

    def client(part):
        for host in part:
            try:
                code = get_status(port, host)
                if code != want:
                    raise AssertionError("%s: status %d" % (host, code))
            except Exception as e:  # noqa: BLE001
                with lock:
                    errors.append(repr(e))
    ts = [threading.Thread(target=client, args=(hosts[i::threads],))
          for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise AssertionError("%d of %d requests failed: %s"
                             % (len(errors), len(hosts), errors[:5]))


def control_post(sock_path, path, body):
    """POST body as JSON to the proxy's control socket; (status, JSON)."""
    return control(sock_path, "POST", path, body)


def full_lines_args():
    """Options that give every blocked attempt a line of its own (no block
    summaries), for tests that count lines; [] for a proxy without them."""
    r = subprocess.run([PROXY_BIN, "--help"], capture_output=True,
                       text=True, timeout=10)
    if "--block-burst" not in r.stdout:
        return []
    return ["--block-burst", "10000000", "--block-budget", "10000000"]


def never_reading_upstream(rcvbuf=None, backlog=8):
    """A listener on loopback that accepts and never reads nor closes
    (with rcvbuf, that receive buffer): the socket and the accepted
    ones, to close."""
    srv = socket.socket()
    if rcvbuf is not None:
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    srv.bind(("127.0.0.1", 0))
    srv.listen(backlog)
    held = []

    def serve():
        while True:
            try:
                c, _ = srv.accept()
            except OSError:
                return
            held.append(c)
    threading.Thread(target=serve, daemon=True).start()
    return srv, held
