#!/usr/bin/env python3
"""TLS termination for entries with `tls: terminate` (issue 18), end to end
with the real proxy binary and real curl.

The proxy runs with a sandgate CA (--ca-cert, --ca-key); curl trusts that
CA alone, so every terminated request shows the proxy minted a certificate
for the CONNECT host. Upstreams are Python TLS servers on loopback, with
certificates from a test CA that the entries name as ca_file: a good one
(reg.test), a self-signed one, an expired one, one for another name, one
checked against the system store alone (untrusted), and a port nothing
listens on. Names are under .test; the proxy resolves them from its
--hosts file.

Run: python3 tests/integration/test_proxy_terminate.py [-v] [names...]
Env: SANDGATE_BIN (folder holding sandgate-proxy), SANDGATE_SRC.
"""

import json
import os
import shutil
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

PREFIX = "network blocked by policy: "
W = {}


def openssl(folder, *args):
    subprocess.run(["openssl"] + list(args), cwd=folder, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"]
RSA = ["-newkey", "rsa:2048"]


def make_ca(folder, name, cn):
    openssl(folder, "req", "-x509", *EC, "-nodes", "-keyout", name + ".key",
            "-out", name + ".pem", "-days", "2", "-subj", "/CN=" + cn,
            "-addext", "basicConstraints=critical,CA:TRUE,pathlen:0",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    os.chmod(os.path.join(folder, name + ".key"), 0o600)
    return os.path.join(folder, name + ".pem")


def make_cas(world):
    """The upstreams' CA and the sandgate CA, in world["dir"]/pki (the
    folder returned): world["upca"], world["sgca"], world["sgkey"]."""
    pki = os.path.join(world["dir"], "pki")
    os.makedirs(pki)
    world["upca"] = make_ca(pki, "upca", "sandgate test upstream CA")
    world["sgca"] = make_ca(pki, "sgca", "sandgate test CA")
    world["sgkey"] = os.path.join(pki, "sgca.key")
    return pki


def make_leaf(folder, name, dns, days="2", ca="upca", self_signed=False,
              san=True, key=EC):
    """A leaf for dns; san=False: the name in the subject CN alone."""
    ext = os.path.join(folder, name + ".ext")
    with open(ext, "w") as f:
        f.write("basicConstraints=CA:FALSE\n"
                "keyUsage=critical,digitalSignature\n"
                "extendedKeyUsage=serverAuth\n")
        if san:
            f.write("subjectAltName=DNS:%s\n" % dns)
    if self_signed:
        openssl(folder, "req", "-x509", *key, "-nodes", "-keyout",
                name + ".key", "-out", name + ".pem", "-days", days,
                "-subj", "/CN=" + dns, "-addext",
                "subjectAltName=DNS:" + dns)
    else:
        openssl(folder, "req", *key, "-nodes", "-keyout", name + ".key",
                "-out", name + ".csr", "-subj", "/CN=" + dns)
        openssl(folder, "x509", "-req", "-in", name + ".csr", "-CA",
                ca + ".pem", "-CAkey", ca + ".key", "-CAcreateserial",
                "-out", name + ".pem", "-days", days, "-extfile", ext)
    return (os.path.join(folder, name + ".pem"),
            os.path.join(folder, name + ".key"))


class TraceHandler(proxylib.TLSEchoHandler):
    """Answers TRACE and TRACK as RFC 9110 and Apache's default do: the
    request head as received, in a message/http body."""

    def _trace(self):
        self.server.counters.bump("requests")
        body = (self.requestline + "\r\n" + str(self.headers)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "message/http")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_TRACE = do_TRACK = do_trace = _trace


def tls_server(cert, key, handler=proxylib.TLSEchoHandler):
    """A TLS echo server (proxylib's handler) on loopback; its port."""
    counters = proxylib.Counters()
    srv = proxylib.CountingServer(("127.0.0.1", 0), handler, counters)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    srv.tls_ctx = ctx
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    W["servers"].append(srv)
    return srv.server_address[1], counters


NODE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                    "trailers.js")


def node_server(cert, key):
    """Node's HTTPS server (trailers.js serve) on loopback; its port."""
    p = subprocess.Popen(["node", NODE, "serve", cert, key],
                         stdout=subprocess.PIPE, text=True)
    W["procs"].append(p)
    return int(p.stdout.readline())


def noread_server(cert, key):
    """A TLS server that reads 100 bytes of each connection, then
    nothing; its port."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    W["noread"] = []

    def serve():
        while True:
            try:
                c, _ = srv.accept()
                c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                t = ctx.wrap_socket(c, server_side=True)
                t.recv(100)
                W["noread"].append(t)
            except OSError:
                return
    threading.Thread(target=serve, daemon=True).start()
    return srv.getsockname()[1]


def big_leaf(folder, fillers):
    """A leaf for *.big.test whose subjectAltName also lists fillers
    names, so it weighs tens of KB; (cert, key)."""
    ext = os.path.join(folder, "big.ext")
    with open(ext, "w") as f:
        f.write("basicConstraints=CA:FALSE\n"
                "keyUsage=critical,digitalSignature\n"
                "extendedKeyUsage=serverAuth\n"
                "subjectAltName=DNS:*.big.test")
        for i in range(fillers):
            f.write(",DNS:filler-%05d.padding.big.invalid" % i)
        f.write("\n")
    openssl(folder, "req", *EC, "-nodes", "-keyout", "big.key", "-out",
            "big.csr", "-subj", "/CN=big.test")
    openssl(folder, "x509", "-req", "-in", "big.csr", "-CA", "upca.pem",
            "-CAkey", "upca.key", "-CAcreateserial", "-out", "big.pem",
            "-days", "2", "-extfile", ext)
    return os.path.join(folder, "big.pem"), os.path.join(folder, "big.key")


def dhe_server(cert, key):
    """openssl s_server offering TLS 1.2 with finite-field DHE alone (its
    group chosen by the server: up to 10000 bits, a second of the proxy's
    CPU per handshake); its port."""
    port = proxylib.free_port()
    proc = subprocess.Popen(
        ["openssl", "s_server", "-accept", "127.0.0.1:%d" % port, "-cert",
         cert, "-key", key, "-tls1_2", "-cipher",
         "DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384", "-www",
         "-quiet"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL)
    W["procs"].append(proc)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return port
        except OSError:
            time.sleep(0.05)
    raise AssertionError("openssl s_server did not start")


def hello_server():
    """Keeps the first TLS record of each connection (the proxy's
    ClientHello), then closes; its port and the list of records."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    got = []

    def serve():
        while True:
            try:
                c, _ = srv.accept()
            except OSError:
                return
            c.settimeout(10)
            data = b""
            try:
                while len(data) < 5 or len(data) < 5 + int.from_bytes(
                        data[3:5], "big"):
                    chunk = c.recv(65536)
                    if not chunk:
                        break
                    data += chunk
            except OSError:
                pass
            got.append(data)
            c.close()
    threading.Thread(target=serve, daemon=True).start()
    W["sockets"].append(srv)
    return srv.getsockname()[1], got


def hello_suites(record):
    """The cipher suites a ClientHello record offers."""
    b = record[5:]
    if b[:1] != b"\x01":
        raise AssertionError("not a ClientHello: %r" % record[:16])
    i = 4 + 2 + 32
    i += 1 + b[i]
    n = int.from_bytes(b[i:i + 2], "big")
    return {int.from_bytes(b[j:j + 2], "big")
            for j in range(i + 2, i + 2 + n, 2)}


def suites_of(kx):
    """Every suite OpenSSL knows whose key exchange is kx ("DH", "RSA")."""
    out = subprocess.run(["openssl", "ciphers", "-V",
                          "ALL:COMPLEMENTOFALL:@SECLEVEL=0"],
                         capture_output=True, text=True, check=True).stdout
    ids = set()
    for line in out.splitlines():
        f = line.split()
        if "Kx=%s" % kx in f:
            hi, lo = f[0].split(",")
            ids.add(int(hi, 16) << 8 | int(lo, 16))
    return ids


POLICY = """\
description: terminated entries (issue 18 tests)
allow:
  - host: noread.test
    ports: [{NOREAD}]
    allow_private: true
    tls: terminate
    ca_file: ca/upca.pem
    rationale: an upstream that stops reading (uploads held to the budget)
  - host: reg.test
    ports: [{REG}]
    allow_private: true
    tls: terminate
    ca_file: ca/upca.pem
    methods: [GET, HEAD]
    paths: [/simple/, /ok, /big]
    rationale: a registry read through the proxy; uploads refused
  - host: self.test
    ports: [{SELF}]
    allow_private: true
    tls: terminate
    ca_file: ca/upca.pem
    rationale: an upstream with a self-signed certificate
  - host: expired.test
    ports: [{EXPIRED}]
    allow_private: true
    tls: terminate
    ca_file: ca/upca.pem
    rationale: an upstream whose certificate has expired
  - host: wrongname.test
    ports: [{REG}]
    allow_private: true
    tls: terminate
    ca_file: ca/upca.pem
    rationale: an upstream whose certificate names reg.test only
  - host: cnonly.test
    ports: [{CNONLY}]
    allow_private: true
    tls: terminate
    ca_file: ca/upca.pem
    rationale: an upstream whose certificate names it in the CN alone
  - host: untrusted.test
    ports: [{UNTRUSTED}]
    allow_private: true
    tls: terminate
    rationale: an upstream checked against the system store alone
  - host: down.test
    ports: [{DOWN}]
    allow_private: true
    tls: terminate
    rationale: nothing listens there
  - host: cred.test
    ports: [{REG}]
    allow_private: true
    tls: terminate
    ca_file: ca/upca.pem
    credentials: {header: Authorization, secret: reg-token}
    rationale: a registry that wants a token the sandbox never holds
  - host: nocred.test
    ports: [{REG}]
    allow_private: true
    tls: terminate
    ca_file: ca/upca.pem
    credentials: {header: X-Registry-Token, secret: not-set}
    rationale: a credential whose secret is not set
  - host: git.test
    ports: [{REG}]
    allow_private: true
    tls: terminate
    ca_file: ca/upca.pem
    methods: [GET, POST]
    paths:
      - /repo.git/info/refs?service=git-upload-pack
      - /repo.git/git-upload-pack
    rationale: git fetch, never push (a prefix with a query)
  - host: trace.test
    ports: [{TRACE}]
    allow_private: true
    tls: terminate
    ca_file: ca/upca.pem
    credentials: {header: Authorization, secret: reg-token}
    rationale: a credential entry without methods, its upstream echoing
      TRACE as Apache does by default
  - host: trailer.test
    ports: [{TRAILER}]
    allow_private: true
    tls: terminate
    ca_file: ca/upca.pem
    methods: [POST]
    paths: [/upload/]
    credentials: {header: Authorization, secret: reg-token}
    rationale: uploads with a token, to Node's server (trailers)
  - host: trailfree.test
    ports: [{TRAILER}]
    allow_private: true
    tls: terminate
    ca_file: ca/upca.pem
    rationale: the same server with no rules and no credential
  - host: dhe.test
    ports: [{DHE}]
    allow_private: true
    tls: terminate
    ca_file: ca/upca.pem
    rationale: an upstream that offers finite-field DHE alone
  - host: hello.test
    ports: [{HELLO}]
    allow_private: true
    tls: terminate
    ca_file: ca/upca.pem
    rationale: an upstream that keeps the proxy's ClientHello
"""

TOKEN = "Bearer sg-test-token-7f3a9c1e5d"

HOSTS = ("127.0.0.1\treg.test self.test expired.test wrongname.test "
         "untrusted.test down.test cred.test nocred.test git.test "
         "noread.test cnonly.test dhe.test hello.test trace.test trailer.test "
         "trailfree.test\n")


def setUpModule():
    for k in proxylib.PROXY_ENV:
        os.environ.pop(k, None)
    W["dir"] = tempfile.mkdtemp(prefix="sg-terminate-")
    W["servers"] = []
    W["proxies"] = []
    W["procs"] = []
    W["sockets"] = []
    pki = make_cas(W)
    reg = make_leaf(pki, "reg",
                    "reg.test,DNS:cred.test,DNS:nocred.test,DNS:git.test")
    W["reg_port"], W["reg_counters"] = tls_server(*reg)
    W["trace_port"], W["trace_counters"] = tls_server(
        *make_leaf(pki, "trace", "trace.test"), TraceHandler)
    W["noread_port"] = noread_server(*make_leaf(pki, "noread",
                                                "noread.test"))
    W["self_port"], _ = tls_server(*make_leaf(pki, "self", "self.test",
                                              self_signed=True))
    W["expired_port"], _ = tls_server(*make_leaf(pki, "expired",
                                                 "expired.test", days="-1"))
    W["untrusted_port"], _ = tls_server(*make_leaf(pki, "untrusted",
                                                   "untrusted.test"))
    W["cnonly_port"], W["cnonly_counters"] = tls_server(
        *make_leaf(pki, "cnonly", "cnonly.test", san=False))
    W["down_port"] = proxylib.free_port()
    W["dhe_port"] = dhe_server(*make_leaf(pki, "dhe", "dhe.test", key=RSA))
    W["hello_port"], W["hellos"] = hello_server()
    W["big_port"], _ = tls_server(*big_leaf(pki, 1800))
    W["trailer_port"] = proxylib.free_port()
    if shutil.which("node") is not None:
        W["trailer_port"] = node_server(*make_leaf(
            pki, "trailer", "trailer.test,DNS:trailfree.test"))
    W["up"] = proxylib.Upstreams(W["dir"]).start()


def tearDownModule():
    def close(srv):
        srv.shutdown()
        srv.server_close()
    proxylib.teardown(W, W.get("proxies", []),
                      [lambda s=s: close(s) for s in W.get("servers", [])] +
                      [p.kill for p in W.get("procs", [])] +
                      [p.wait for p in W.get("procs", [])] +
                      [s.close for s in W.get("sockets", [])])


def start_proxy(name, with_ca=True, more=(), policy="", hosts=""):
    extra = ["--log-allowed", "--block-burst", "100",
             "--block-budget", "1000"] + list(more)
    if with_ca:
        extra += ["--ca-cert", W["sgca"], "--ca-key", W["sgkey"]]
    secrets = os.path.join(W["dir"], name + "-secrets")
    os.makedirs(secrets, mode=0o700)
    fd = os.open(os.path.join(secrets, "reg-token"),
                 os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, (TOKEN + "\n").encode())
    os.close(fd)
    extra += ["--secrets-dir", secrets]
    p = proxylib.Proxy(W["dir"], W["up"], name=name, sets="test,term",
                       extra_args=extra)
    write_policy(p, policy, hosts)
    W["proxies"].append(p)
    return p.start()


def write_policy(p, more="", hosts=""):
    """The terminated entries (set "term") and more, their ca_file and
    names."""
    text = POLICY + more
    for k, v in (("REG", W["reg_port"]), ("SELF", W["self_port"]),
                 ("NOREAD", W["noread_port"]),
                 ("EXPIRED", W["expired_port"]),
                 ("UNTRUSTED", W["untrusted_port"]),
                 ("CNONLY", W["cnonly_port"]),
                 ("DOWN", W["down_port"]), ("DHE", W["dhe_port"]),
                 ("HELLO", W["hello_port"]),
                 ("TRACE", W["trace_port"]),
                 ("TRAILER", W["trailer_port"])):
        text = text.replace("{%s}" % k, str(v))
    os.makedirs(os.path.join(p.policy_dir, "ca"))
    shutil.copy(W["upca"], os.path.join(p.policy_dir, "ca", "upca.pem"))
    with open(os.path.join(p.policy_dir, "term.yaml"), "w") as f:
        f.write(text)
    with open(p.hosts, "a") as f:
        f.write(HOSTS + hosts)


def curl(p, url, *args):
    """curl through the proxy, trusting the sandgate CA alone. Returns
    (exit code, status, headers text, body text, stderr)."""
    hdr = os.path.join(W["dir"], "curl-headers")
    cmd = ["curl", "-sS", "--max-time", "20", "--proxy",
           "http://127.0.0.1:%d" % p.port, "--cacert", W["sgca"],
           "-D", hdr, "-o", "-", "-w", "\n%{http_code}"] + list(args) + [url]
    r = subprocess.run(cmd, capture_output=True, text=True,
                       env=proxylib.clean_env(), timeout=60)
    out, _, code = r.stdout.rpartition("\n")
    try:
        with open(hdr) as f:
            headers = f.read()
        os.unlink(hdr)
    except FileNotFoundError:
        headers = ""
    return r.returncode, int(code or 0), headers, out, r.stderr


class Case(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.p = start_proxy(cls.__name__.lower())

    def url(self, host, port, path):
        return "https://%s:%d%s" % (host, port, path)

    def reg(self, path):
        return self.url("reg.test", W["reg_port"], path)

    def last_block(self, reason, host=None):
        ev = self.p.wait_event(lambda e: e.get("event") == "egress.blocked"
                               and e.get("reason") == reason and
                               host in (None, e.get("host")))
        self.assertIsNotNone(ev, "no egress.blocked %s in %s" %
                             (reason, self.p.log_lines()))
        return ev


class T01Allowed(Case):
    def test_get_through_a_minted_certificate(self):
        rc, status, headers, body, err = curl(self.p, self.reg("/simple/x"))
        self.assertEqual(rc, 0, err)
        self.assertEqual(status, 200, headers)
        doc = json.loads(body)
        self.assertEqual(doc["method"], "GET")
        self.assertEqual(doc["path"], "/simple/x")
        self.assertEqual(doc["host"], "reg.test:%d" % W["reg_port"])
        self.assertTrue(doc["tls"])
        ev = self.p.wait_event(lambda e: e.get("event") == "egress.allowed"
                               and e.get("path") == "/simple/x")
        self.assertIsNotNone(ev, self.p.log_lines())
        self.assertEqual(ev["method"], "GET")
        self.assertEqual(ev["host"], "reg.test")
        self.assertEqual(ev["status"], 200)
        self.assertGreater(ev["bytes_down"], len(body))
        r = subprocess.run(
            [os.path.join(proxylib.BIN, "sandgate"), "audit", "--log-dir",
             self.p.log_dir], capture_output=True, text=True,
            env=proxylib.clean_env())
        self.assertRegex(r.stdout, r"egress\.allowed .*reg\.test:%d GET "
                         r"/simple/x +- \(status 200\)" % W["reg_port"])

    def test_long_path_logged_cut(self):
        path = "/simple/" + "a" * 600
        rc, status, headers, body, err = curl(self.p, self.reg(path))
        self.assertEqual(status, 200, headers)
        ev = self.p.wait_event(lambda e: e.get("event") == "egress.allowed"
                               and e.get("path", "").startswith(
                                   "/simple/aaaa"))
        self.assertIsNotNone(ev, self.p.log_lines())
        self.assertLessEqual(len(ev["path"]), 256)
        self.assertTrue(ev["path"].endswith("..."), ev["path"])

    def test_keep_alive_requests_share_a_session(self):
        before = W["reg_counters"].get("accepts")
        rc, status, headers, body, err = curl(
            self.p, self.reg("/ok"), "--next", "--proxy",
            "http://127.0.0.1:%d" % self.p.port, "--cacert", W["sgca"],
            self.reg("/simple/y"))
        self.assertEqual(rc, 0, err)
        self.assertIn('"path": "/ok"', body)
        self.assertIn('"path": "/simple/y"', body)
        # One upstream connection at most: an earlier test's may be
        # taken from the pool (uppool.h) instead of a new one.
        self.assertLessEqual(W["reg_counters"].get("accepts") - before, 1)
        self.assertIn("Re-using existing connection", subprocess.run(
            ["curl", "-sv", "--proxy", "http://127.0.0.1:%d" % self.p.port,
             "--cacert", W["sgca"], "-o", "/dev/null", self.reg("/ok"),
             "-o", "/dev/null", self.reg("/ok")], capture_output=True,
            text=True, env=proxylib.clean_env()).stderr)

    def test_minted_certificate_names_the_host(self):
        r = subprocess.run(
            ["curl", "-sv", "--proxy", "http://127.0.0.1:%d" % self.p.port,
             "--cacert", W["sgca"], "-o", "/dev/null", self.reg("/ok")],
            capture_output=True, text=True, env=proxylib.clean_env())
        self.assertIn("subject: CN=reg.test", r.stderr)
        self.assertIn("issuer: CN=sandgate test CA", r.stderr)
        self.assertIn("ALPN: server accepted http/1.1", r.stderr)


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def sockets_of(pid):
    """The socket descriptors process pid holds."""
    fds = os.path.join("/proc/%d/fd" % pid)
    out = []
    for name in os.listdir(fds):
        try:
            if os.readlink(os.path.join(fds, name)).startswith("socket:"):
                out.append(name)
        except OSError:
            pass
    return out


class T10Bounded(Case):
    """A terminated session's TLS filter encrypted into its socket's
    output without bound: a sandbox that stopped reading a large download
    made the proxy hold it all (400 MiB, past --max-buffer-per-client);
    the filter now stops at the socket's write watermark and the budget
    and back-pressure see what is left."""

    def session(self, p, host, port, small=None):
        """A terminated session to host:port through p; small names a
        socket buffer (SO_RCVBUF, SO_SNDBUF) set to 4 KiB first."""
        s = socket.create_connection(("127.0.0.1", p.port), 10)
        if small is not None:
            s.setsockopt(socket.SOL_SOCKET, small, 4096)
        s.sendall(b"CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n"
                  % (host.encode(), port, host.encode(), port))
        head = b""
        while b"\r\n\r\n" not in head:
            head += s.recv(1)
        self.assertIn(b" 200 ", head)
        ctx = ssl.create_default_context(cafile=W["sgca"])
        return ctx.wrap_socket(s, server_hostname=host)

    def test_stalled_download_held_to_the_budget(self):
        port = W["reg_port"]
        t = self.session(self.p, "reg.test", port, socket.SO_RCVBUF)
        base = rss_kib(self.p.pid)
        t.sendall(b"GET /big?n=%d HTTP/1.1\r\nHost: reg.test:%d\r\n\r\n"
                  % (300 << 20, port))
        peak = base
        for _ in range(40):
            time.sleep(0.1)
            peak = max(peak, rss_kib(self.p.pid))
        t.close()
        print("\n  stalled terminated download: proxy RSS %d -> %d KiB" % (
            base, peak), file=sys.stderr)
        # The default budget is 16 MiB; before, the proxy took it all.
        # ASan builds hold freed memory in quarantine: room for it.
        self.assertLess(peak - base, 96 << 10)


    def test_upload_to_a_stalled_upstream_held_to_the_budget(self):
        port = W["noread_port"]
        t = self.session(self.p, "noread.test", port)
        n = 200 << 20
        t.sendall(b"POST /up HTTP/1.1\r\nHost: noread.test:%d\r\n"
                  b"Content-Length: %d\r\n\r\n" % (port, n))
        base = rss_kib(self.p.pid)
        t.settimeout(4)
        sent, block = 0, b"u" * 65536
        try:
            while sent < n:
                sent += t.send(block)
        except (socket.timeout, ssl.SSLError, OSError):
            pass
        peak = rss_kib(self.p.pid)
        t.close()
        for u in W["noread"]:  # the proxy's upstream side ends too
            u.close()
        print("\n  upload to a stalled upstream: %d MiB taken, proxy RSS "
              "%d -> %d KiB" % (sent >> 20, base, peak), file=sys.stderr)
        self.assertLess(sent, 64 << 20, "the proxy took the whole upload")
        # ASan builds hold freed memory in quarantine: room for it.
        self.assertLess(peak - base, 96 << 10)

    def test_upload_trickled_in_one_byte_records_held_in_bytes(self):
        """A body sent as 1-byte TLS records to an upstream that stops
        reading: every record the filter read became a chain of its own
        (1-4 KiB) moved whole upstream, so the 256 KiB the watermark
        counts took 84.7 MiB of heap (atk15r11 F7). Bytes are copied
        now, and memory follows them."""
        port = W["noread_port"]
        # A proxy of its own: one body, one stop that waits for it.
        p = start_proxy("onebyte")
        base_socks = len(sockets_of(p.pid))
        t = self.session(p, "noread.test", port, socket.SO_SNDBUF)
        t.sendall(b"POST /up HTTP/1.1\r\nHost: noread.test:%d\r\n"
                  b"Content-Length: %d\r\n\r\n" % (port, 1 << 30))
        base = rss_kib(p.pid)
        t.settimeout(3)
        sent = 0
        try:
            while sent < 2 << 20:  # until the proxy stops reading
                sent += t.send(b"x")
        except (socket.timeout, ssl.SSLError, OSError):
            pass
        peak = rss_kib(p.pid)
        for u in W["noread"]:
            u.close()
        t.close()
        # The proxy keeps a socket with a send queue until its peer takes
        # it or 10 s pass: let it go before the class's proxy is stopped.
        for _ in range(150):
            if len(sockets_of(p.pid)) <= base_socks:
                break
            time.sleep(0.1)
        W["proxies"].remove(p)
        self.assertIsNotNone(p.stop(timeout=30), p.stderr()[-2000:])
        print("\n  1-byte records to a stalled upstream: %d KiB taken, "
              "proxy RSS %d -> %d KiB" % (sent >> 10, base, peak),
              file=sys.stderr)
        self.assertGreater(sent, 256 << 10, "the proxy stopped early")
        self.assertLess(sent, 2 << 20, "the proxy took the whole upload")
        if not proxylib.sanitized():
            self.assertLess(peak - base, 6 << 10, "RSS grew %d KiB"
                            % (peak - base))


def connect_tls(p, host, port, ctx, session=None):
    """CONNECT host:port through p, then TLS with SNI host; the socket."""
    s = socket.create_connection(("127.0.0.1", p.port), timeout=10)
    s.sendall(b"CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n" %
              (host.encode(), port, host.encode(), port))
    head = b""
    while b"\r\n\r\n" not in head:
        b = s.recv(1)
        if not b:
            raise AssertionError("proxy closed after CONNECT: %r" % head)
        head += b
    if not head.startswith(b"HTTP/1.1 200"):
        raise AssertionError("CONNECT refused: %r" % head)
    return ctx.wrap_socket(s, server_hostname=host, session=session)


def get_ok(t, host, port):
    t.sendall(b"GET /ok HTTP/1.1\r\nHost: %s:%d\r\n\r\n" %
              (host.encode(), port))
    return t.recv(4096).split(b"\r\n")[0]


BIG_NAMES = 320


class T17SessionCache(Case):
    """The upstream sessions the proxy keeps hold the upstream's chain
    (here 70 KB of certificate, over 300 KB once parsed): one per name
    and port, 1024 of them, made 330 MB of a proxy that no client owned
    once its connections were gone. They are bounded in bytes too
    (TLSTERM_SESSIONS_BYTES, 8 MiB counted as encoded). The bound this
    test holds: RSS grows by less than 48 MiB over 300 names (measured:
    17 MiB; without the byte bound 93 MiB)."""

    @classmethod
    def setUpClass(cls):
        entries = "".join(
            "  - host: b%d.big.test\n"
            "    ports: [%d]\n"
            "    allow_private: true\n"
            "    tls: terminate\n"
            "    ca_file: ca/upca.pem\n"
            "    rationale: one kept upstream session per name\n" %
            (i, W["big_port"]) for i in range(BIG_NAMES))
        names = " ".join("b%d.big.test" % i for i in range(BIG_NAMES))
        cls.p = start_proxy(cls.__name__.lower(), policy=entries,
                            hosts="127.0.0.1\t%s\n" % names)

    def fetch(self, ctx, names, errors):
        for name in names:
            try:
                t = connect_tls(self.p, name, W["big_port"], ctx)
                t.sendall(b"GET /ok HTTP/1.1\r\nHost: %s:%d\r\n"
                          b"Connection: close\r\n\r\n" %
                          (name.encode(), W["big_port"]))
                data = proxylib.read_until_closed(t)
                t.close()
                if not data.startswith(b"HTTP/1.1 200"):
                    errors.append((name, data[:200]))
            except (OSError, AssertionError) as e:
                errors.append((name, e))

    def test_many_names_held_to_the_bound(self):
        ctx = ssl.create_default_context(cafile=W["sgca"])
        errors = []
        self.fetch(ctx, ["b%d.big.test" % i for i in range(20)], errors)
        base = rss_kib(self.p.pid)
        names = ["b%d.big.test" % i for i in range(20, BIG_NAMES)]
        threads = [threading.Thread(target=self.fetch,
                                    args=(ctx, names[k::4], errors))
                   for k in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        self.assertEqual(errors, [])
        time.sleep(1)
        grown = rss_kib(self.p.pid) - base
        print("\nT17: proxy RSS %d KiB, grown %d KiB over %d names" %
              (rss_kib(self.p.pid), grown, BIG_NAMES - 20),
              file=sys.stderr)
        if not proxylib.sanitized():
            self.assertLess(grown, 48 * 1024)


class T18HalfHello(Case):
    """The bound docs/threat-model.md states for what OpenSSL reserves on
    a terminated session's ClientHello header (the length it announces,
    up to 131,396 bytes, outside --max-buffer-per-client): 250
    connections that each send 9 bytes of it grow the proxy by less than
    250 x 200 KiB (measured: 42 MiB), and give it back when they close."""

    def test_reserved_hello_bounded_and_freed(self):
        hello = b"\x16\x03\x01\x00\x04\x01\x02\x01\x44"
        port = W["reg_port"]
        base = rss_kib(self.p.pid)
        socks = []
        for _ in range(250):
            s = socket.create_connection(("127.0.0.1", self.p.port), 10)
            s.sendall(b"CONNECT reg.test:%d HTTP/1.1\r\nHost: reg.test:%d"
                      b"\r\n\r\n" % (port, port) + hello)
            socks.append(s)
        for s in socks:
            self.assertIn(b" 200 ", s.recv(4096))
        time.sleep(1)
        held = rss_kib(self.p.pid) - base
        for s in socks:
            s.close()
        time.sleep(1)
        after = rss_kib(self.p.pid) - base
        print("\nT18: 250 half hellos: RSS +%d KiB, +%d KiB after they "
              "closed" % (held, after), file=sys.stderr)
        if not proxylib.sanitized():
            self.assertLess(held, 250 * 200)
            self.assertLess(after, 16 * 1024)


class T11NoResumption(Case):
    """A TLS session made for one terminated name resumes on no other
    name and no other connection: every handshake shows a certificate
    minted for its CONNECT host."""

    def resume(self, version):
        ctx = ssl.create_default_context(cafile=W["sgca"])
        ctx.maximum_version = version
        port = W["reg_port"]
        t = connect_tls(self.p, "reg.test", port, ctx)
        self.assertEqual(get_ok(t, "reg.test", port), b"HTTP/1.1 200 OK")
        sess = t.session
        t.close()
        for host in ("cred.test", "reg.test"):
            t = connect_tls(self.p, host, port, ctx, session=sess)
            self.assertEqual(get_ok(t, host, port), b"HTTP/1.1 200 OK")
            self.assertFalse(t.session_reused,
                             "%s resumed a session of reg.test (%s)" %
                             (host, t.version()))
            self.assertIn(('DNS', host),
                          t.getpeercert()["subjectAltName"])
            t.close()

    def test_tls13(self):
        self.resume(ssl.TLSVersion.TLSv1_3)

    def test_tls12(self):
        self.resume(ssl.TLSVersion.TLSv1_2)


class T12Timeouts(Case):
    """The handshake of a terminated CONNECT runs under the hello timeout
    (10 s) and its first request under --head-timeout, not the 60 s
    keep-alive wait."""

    @classmethod
    def setUpClass(cls):
        cls.p = start_proxy(cls.__name__.lower(),
                            more=["--head-timeout", "3"])

    def closed_after(self, sock):
        t0 = time.monotonic()
        sock.settimeout(30)
        try:
            while sock.recv(4096):
                pass
        except (socket.timeout, TimeoutError):
            return None
        except (OSError, ssl.SSLError):
            pass
        return time.monotonic() - t0

    def test_no_hello_and_no_request(self):
        port = W["reg_port"]
        res = {}

        def no_hello():
            s = socket.create_connection(("127.0.0.1", self.p.port))
            s.sendall(b"CONNECT reg.test:%d HTTP/1.1\r\n\r\n" % port)
            head = b""
            while b"\r\n\r\n" not in head:
                head += s.recv(1)
            res["hello"] = self.closed_after(s)
            s.close()

        th = threading.Thread(target=no_hello)
        th.start()
        ctx = ssl.create_default_context(cafile=W["sgca"])
        t = connect_tls(self.p, "reg.test", port, ctx)
        res["head"] = self.closed_after(t)
        t.close()
        th.join(40)
        self.assertIsNotNone(res["head"], "no close within 30 s")
        self.assertLess(res["head"], 8, "handshake done, no request")
        self.assertIsNotNone(res.get("hello"), "no close within 30 s")
        self.assertLess(res["hello"], 15, "no ClientHello")


class T14Groups(Case):
    """A terminated session's key exchange is an elliptic curve: a client
    offering only finite-field groups (ffdhe8192 costs the proxy's one
    thread about 100 times an X25519 handshake) is refused, not served."""

    def s_client(self, groups):
        r = subprocess.run(
            ["openssl", "s_client", "-proxy", "127.0.0.1:%d" % self.p.port,
             "-connect", "reg.test:%d" % W["reg_port"], "-servername",
             "reg.test", "-groups", groups, "-CAfile", W["sgca"],
             "-verify_return_error", "-brief"],
            input="", capture_output=True, text=True, timeout=30)
        return r.returncode, r.stdout + r.stderr

    def test_finite_field_groups_refused(self):
        for groups in ("ffdhe8192", "ffdhe2048:ffdhe4096"):
            rc, out = self.s_client(groups)
            self.assertNotEqual(rc, 0, out)
            self.assertNotIn("DH, ", out)
            self.assertNotIn("Verification: OK", out)

    def test_curves_served(self):
        for groups in ("X25519", "P-256", "P-384"):
            rc, out = self.s_client(groups)
            self.assertEqual(rc, 0, out)
            self.assertIn("Verification: OK", out)


class T15UpstreamKeyExchange(Case):
    """The upstream's key exchange is an elliptic curve too: the proxy
    offers no finite-field DHE suite (whose group the server picks, up to
    10000 bits) and no RSA key transport, so an upstream that has only
    those gets a 502 with its reason."""

    def test_clienthello_offers_no_dhe(self):
        n = len(W["hellos"])
        rc, status, headers, body, err = curl(
            self.p, self.url("hello.test", W["hello_port"], "/"))
        self.assertEqual(status, 502, headers + body)
        self.assertGreater(len(W["hellos"]), n)
        offered = hello_suites(W["hellos"][-1])
        self.assertTrue(offered, W["hellos"][-1][:64])
        dhe, rsa = suites_of("DH"), suites_of("RSA")
        self.assertGreater(len(dhe), 10)
        self.assertEqual(sorted("%04x" % x for x in offered & dhe), [])
        self.assertEqual(sorted("%04x" % x for x in offered & rsa), [])
        self.assertIn(0xc02b, offered)      # ECDHE-ECDSA-AES128-GCM

    def test_dhe_only_upstream_refused(self):
        rc, status, headers, body, err = curl(
            self.p, self.url("dhe.test", W["dhe_port"], "/"))
        self.assertEqual(rc, 0, err)
        self.assertEqual(status, 502, headers + body)
        self.assertIn("upstream_tls_failed", headers)
        ev = self.last_block("upstream_tls_failed", "dhe.test")
        self.assertIn("handshake failure", ev["message"])
        self.assertEqual(ev["status"], 502)


class T02Refused(Case):
    def check_403(self, reason, *args, path="/upload"):
        rc, status, headers, body, err = curl(self.p, self.reg(path), *args)
        self.assertEqual(rc, 0, err)
        self.assertEqual(status, 403, headers + body)
        self.assertIn(PREFIX, body)
        self.assertIn("Proxy-Status: sandgate; error=http_request_denied",
                      headers)
        ev = self.last_block(reason)
        self.assertEqual(ev["host"], "reg.test")
        self.assertEqual(ev["status"], 403)
        self.assertEqual(ev["path"], path)
        return ev, body

    def test_denied_path(self):
        before = W["reg_counters"].get("requests")
        ev, body = self.check_403("path_not_allowed")
        self.assertIn("path", body)
        self.assertEqual(ev["method"], "GET")
        self.assertEqual(W["reg_counters"].get("requests"), before)

    def test_denied_method(self):
        ev, body = self.check_403("method_not_allowed", "-X", "POST",
                                  "--data", "x", path="/simple/")
        self.assertEqual(ev["method"], "POST")

    def test_host_other_than_sni(self):
        ev, body = self.check_403("host_mismatch", "-H",
                                  "Host: other.test", path="/simple/")

    def test_sni_other_than_connect(self):
        s = socket.create_connection(("127.0.0.1", self.p.port), timeout=10)
        s.sendall(("CONNECT reg.test:%d HTTP/1.1\r\nHost: reg.test:%d"
                   "\r\n\r\n" % (W["reg_port"], W["reg_port"])).encode())
        self.assertIn(b" 200 ", s.recv(4096))
        ctx = ssl.create_default_context(cafile=W["sgca"])
        ctx.check_hostname = False
        with self.assertRaises((ssl.SSLError, OSError)):
            ctx.wrap_socket(s, server_hostname="other.test")
        s.close()
        ev = self.last_block("sni_mismatch")
        self.assertEqual(ev["sni"], "other.test")

    def terminated_tunnel(self):
        s = socket.create_connection(("127.0.0.1", self.p.port), timeout=10)
        s.sendall(("CONNECT reg.test:%d HTTP/1.1\r\nHost: reg.test:%d"
                   "\r\n\r\n" % (W["reg_port"], W["reg_port"])).encode())
        self.assertIn(b" 200 ", s.recv(4096))
        return s

    def test_client_that_does_not_trust_the_ca(self):
        """A client without the sandgate CA refuses the minted
        certificate with an alert: the session ends before any request,
        and before, nothing was logged, so neither the agent's
        network_blocked nor the security log said why."""
        s = self.terminated_tunnel()
        ctx = ssl.create_default_context()      # the system bundle only
        with self.assertRaises(ssl.SSLCertVerificationError):
            ctx.wrap_socket(s, server_hostname="reg.test")
        s.close()
        ev = self.last_block("client_tls_failed")
        self.assertEqual(ev["host"], "reg.test")
        self.assertEqual(ev["method"], "CONNECT")
        self.assertIn("unknown ca", ev["message"])
        self.assertIn("trust the sandgate CA", ev["message"])

    def test_plain_http_inside_a_terminated_tunnel(self):
        s = self.terminated_tunnel()
        s.sendall(b"GET /simple/ HTTP/1.1\r\nHost: reg.test\r\n\r\n")
        s.settimeout(10)
        try:
            while s.recv(4096):
                pass
        except OSError:
            pass
        s.close()
        ev = self.p.wait_event(
            lambda e: e.get("reason") == "client_tls_failed" and
            "http request" in e.get("message", ""))
        self.assertIsNotNone(ev, self.p.log_lines())
        self.assertEqual(ev["host"], "reg.test")

    def test_plain_http_to_a_terminated_entry(self):
        rc, status, headers, body, err = curl(
            self.p, "http://reg.test:%d/simple/" % W["reg_port"])
        self.assertEqual(status, 403, headers + body)
        self.last_block("not_tls")


class T03Upstream(Case):
    def check_502(self, host, port, reason, words, perr):
        rc, status, headers, body, err = curl(self.p,
                                              self.url(host, port, "/"))
        self.assertEqual(rc, 0, err)
        self.assertEqual(status, 502, headers + body)
        self.assertIn(words, body)
        self.assertIn("Proxy-Status: sandgate; error=" + perr, headers)
        ev = self.last_block(reason, host)
        self.assertIn(words, ev["message"])
        self.assertEqual(ev["status"], 502)
        self.assertEqual(ev["resolved"], "127.0.0.1")

    def test_self_signed(self):
        self.check_502("self.test", W["self_port"],
                       "upstream_cert_self_signed", "self-signed",
                       "tls_certificate_error")

    def test_expired(self):
        self.check_502("expired.test", W["expired_port"],
                       "upstream_cert_expired", "outside its validity",
                       "tls_certificate_error")

    def test_another_name(self):
        self.check_502("wrongname.test", W["reg_port"],
                       "upstream_cert_name_mismatch",
                       "certificate for another name",
                       "tls_certificate_error")

    def test_name_in_the_cn_alone(self):
        """The name must be in subjectAltName: no fallback to the CN."""
        self.check_502("cnonly.test", W["cnonly_port"],
                       "upstream_cert_name_mismatch",
                       "certificate for another name",
                       "tls_certificate_error")
        self.assertEqual(W["cnonly_counters"].get("requests"), 0)

    def test_untrusted(self):
        self.check_502("untrusted.test", W["untrusted_port"],
                       "upstream_cert_untrusted", "no trusted CA",
                       "tls_certificate_error")

    def test_unreachable(self):
        self.check_502("down.test", W["down_port"], "upstream_unreachable",
                       "is unreachable", "connection_refused")


class T05Credentials(Case):
    def cred_url(self, path):
        return self.url("cred.test", W["reg_port"], path)

    def test_header_set_and_the_sandbox_one_replaced(self):
        for extra in ([], ["-H", "Authorization: Bearer from-the-sandbox",
                           "-H", "authorization: Basic again"]):
            rc, status, headers, body, err = curl(
                self.p, self.cred_url("/simple/pkg/"), *extra)
            self.assertEqual(status, 200, headers + body)
            got = [v for k, v in json.loads(body)["headers"]
                   if k.lower() == "authorization"]
            self.assertEqual(got, [TOKEN])

    def test_every_request_of_a_kept_session(self):
        rc, status, headers, body, err = curl(
            self.p, self.cred_url("/a"), "--next", "--proxy",
            "http://127.0.0.1:%d" % self.p.port, "--cacert", W["sgca"],
            self.cred_url("/b"))
        self.assertEqual(rc, 0, err)
        self.assertEqual(body.count(TOKEN), 2, body)

    def test_secret_not_set(self):
        rc, status, headers, body, err = curl(
            self.p, self.url("nocred.test", W["reg_port"], "/"))
        self.assertEqual(status, 503, headers + body)
        self.assertIn("sandgate secret set not-set", body)
        self.last_block("credential_missing")

    def test_token_nowhere_in_the_proxy_output(self):
        curl(self.p, self.cred_url("/simple/"))
        curl(self.p, self.cred_url("/refused"), "-X", "DELETE")
        for where, text in (("log", "\n".join(self.p.log_lines())),
                            ("stderr", self.p.stderr())):
            self.assertNotIn("sg-test-token", text, where)


class T16EchoingMethods(Case):
    """TRACE and TRACK echo the request head, the header the proxy sets
    too: on an entry with credentials they are refused in words, whatever
    methods says (here it says nothing), and never reach the upstream."""

    def test_trace_refused_on_a_credential_entry(self):
        for method in ("TRACE", "TRACK", "trace"):
            before = W["trace_counters"].get("requests")
            rc, status, headers, body, err = curl(
                self.p, self.url("trace.test", W["trace_port"], "/x"),
                "-X", method, "-H", "Authorization: mine")
            self.assertEqual(rc, 0, err)
            self.assertEqual(status, 403, headers + body)
            self.assertNotIn("sg-test-token", headers + body)
            self.assertIn(PREFIX + "destination trace.test:%d not "
                          "allowlisted for this method" % W["trace_port"],
                          body)
            self.assertIn("Proxy-Status: sandgate; "
                          "error=http_request_denied", headers)
            ev = self.p.wait_event(
                lambda e: e.get("event") == "egress.blocked" and
                e.get("reason") == "method_not_allowed" and
                e.get("method") == method)
            self.assertIsNotNone(ev, self.p.log_lines())
            self.assertEqual(ev["host"], "trace.test")
            self.assertEqual(ev["path"], "/x")
            self.assertEqual(W["trace_counters"].get("requests"), before)
        rc, status, headers, body, err = curl(
            self.p, self.url("trace.test", W["trace_port"], "/x"))
        self.assertEqual(status, 200, headers + body)


class T19RequestLineStands(Case):
    """What methods and paths decide is the request line: a request that
    passes them must not ask the upstream for another method or path.
    A body on GET could be read by the upstream as the next request (one
    nobody decided); a method-override header asks a framework for
    another method. Both are refused on entries with such rules."""

    SMUGGLED = "GET /admin HTTP/1.1\r\nHost: reg.test\r\n\r\n"

    def refused(self, url, status, reason, *args):
        before = W["reg_counters"].get("requests")
        rc, got, headers, body, err = curl(self.p, url, *args)
        self.assertEqual(rc, 0, err)
        self.assertEqual(got, status, headers + body)
        ev = self.last_block(reason)
        self.assertEqual(ev["method"], "GET")
        self.assertEqual(W["reg_counters"].get("requests"), before,
                         "the request went upstream")
        return body

    def test_get_with_a_body_refused(self):
        body = self.refused(self.reg("/simple/"), 400, "malformed_request",
                            "-X", "GET", "--data-binary", self.SMUGGLED)
        self.assertIn("a body on this method is refused on an entry with "
                      "methods or paths", body)

    def test_body_where_no_rules_or_it_means_something(self):
        rc, status, headers, body, err = curl(
            self.p, self.url("cred.test", W["reg_port"], "/x"), "-X",
            "GET", "--data-binary", "q=1")
        self.assertEqual(status, 200, headers + body)
        rc, status, headers, body, err = curl(
            self.p, self.url("git.test", W["reg_port"],
                             "/repo.git/git-upload-pack"),
            "--data-binary", "0000")
        self.assertEqual(status, 200, headers + body)

    def test_method_override_refused(self):
        for name, value in (("X-HTTP-Method-Override", "DELETE"),
                            ("X-HTTP-Method", "put"),
                            ("x-method-override", "POST")):
            body = self.refused(self.reg("/simple/"), 403,
                                "method_not_allowed", "-H",
                                "%s: %s" % (name, value))
            self.assertIn("not allowlisted for this method", body)

    def test_method_override_the_policy_allows(self):
        rc, status, headers, body, err = curl(
            self.p, self.reg("/simple/"), "-H",
            "X-HTTP-Method-Override: head")
        self.assertEqual(status, 200, headers + body)
        cred = self.url("cred.test", W["reg_port"], "/x")
        rc, status, headers, body, err = curl(
            self.p, cred, "-H", "X-HTTP-Method-Override: DELETE")
        self.assertEqual(status, 200, headers + body)
        # TRACE echoes the credential: refused on it even as an override.
        rc, status, headers, body, err = curl(
            self.p, cred, "-H", "X-HTTP-Method-Override: trace")
        self.assertEqual(status, 403, headers + body)

    def test_underscore_header_names_refused(self):
        """CGI and WSGI gateways read X_HTTP_METHOD_OVERRIDE as
        X-HTTP-Method-Override (both become HTTP_X_HTTP_METHOD_OVERRIDE):
        on an entry with methods, paths or a credential a name with '_'
        is refused, whatever it spells."""
        for name in ("X_HTTP_METHOD_OVERRIDE", "X_HTTP_Method",
                     "x-method_override", "X_Forwarded_For"):
            body = self.refused(self.reg("/simple/"), 400,
                                "malformed_request", "-H",
                                "%s: DELETE" % name)
            self.assertIn("a header name with '_' is refused", body)
        before = W["reg_counters"].get("requests")
        rc, status, headers, body, err = curl(
            self.p, self.url("cred.test", W["reg_port"], "/x"), "-H",
            "Authorization_: mine")
        self.assertEqual(status, 400, headers + body)
        self.assertEqual(W["reg_counters"].get("requests"), before)


class T20Trailers(Case):
    """Chunked trailer fields, which a gateway may merge into the header
    fields (Tomcat does for the names it is told to), are refused (400,
    malformed_request) on an entry with methods, paths or a credential,
    before a byte of them goes upstream: no check of the head sees them,
    so an override, an Authorization beside the credential or a '_' name
    would pass there. Node's client sends them, Node's server parses
    them; on an entry without rules they pass as before."""

    @classmethod
    def setUpClass(cls):
        if shutil.which("node") is None:
            raise unittest.SkipTest("node is not installed (scripts/"
                                    "setup.sh installs nodejs)")
        super().setUpClass()

    def send(self, host, path, trailers):
        r = subprocess.run(["node", NODE, "send", str(self.p.port), host,
                            str(W["trailer_port"]), W["sgca"], path,
                            json.dumps(trailers)], capture_output=True,
                           text=True, timeout=30, env=proxylib.clean_env())
        status, _, body = r.stdout.partition("\n")
        return status, body

    def test_trailers_refused_on_a_ruled_entry(self):
        """The refusal is logged once, as a block with its status and the
        entry whose rules refuse it; never also as allowed (the request
        was allowed before its trailer came)."""
        for i, trailers in enumerate(({"X_HTTP_METHOD_OVERRIDE": "DELETE"},
                                      {"X-HTTP-Method-Override": "DELETE"},
                                      {"Authorization": "Bearer mine"},
                                      {"X-Checksum": "abc"})):
            path = "/upload/refused%d" % i
            status, body = self.send("trailer.test", path, trailers)
            self.assertEqual(status, "400", "trailers %s: %s %s" %
                             (trailers, status, body))
            self.assertIn("a trailer field is refused on an entry with "
                          "methods, paths or a credential", body)
            ev = self.p.wait_event(lambda e: e.get("event") ==
                                   "egress.blocked" and
                                   e.get("path") == path)
            self.assertIsNotNone(ev, self.p.log_lines())
            self.assertEqual(ev["reason"], "malformed_request")
            self.assertEqual(ev["method"], "POST")
            self.assertEqual(ev.get("status"), 400)
            self.assertRegex(ev.get("rule") or "", r"/term\.yaml:\d+$")
        self.assertNotIn("Bearer mine", "".join(self.p.log_lines()))
        status, body = self.send("trailfree.test", "/seen", {})
        self.assertEqual(status, "200", body)
        self.assertEqual([s for s in json.loads(body)["seen"]
                          if s["url"].startswith("/upload/") and
                          s["trailers"]], [], "trailers reached the upstream")
        self.assertIsNotNone(self.p.wait_event(
            lambda e: e.get("event") == "egress.allowed" and
            e.get("path") == "/seen"))
        self.assertEqual([e for e in self.p.events()
                          if e.get("event") == "egress.allowed" and
                          (e.get("path") or "").startswith("/upload/ref")],
                         [], "a refused request logged as allowed")

    def test_no_trailers_and_entries_without_rules_pass(self):
        status, body = self.send("trailer.test", "/upload/a", {})
        self.assertEqual(status, "200", body)
        got = json.loads(body)
        self.assertEqual(got["auth"], TOKEN)
        self.assertEqual(got["trailers"], {})
        status, body = self.send("trailfree.test", "/x",
                                 {"X-Checksum": "abc"})
        self.assertEqual(status, "200", body)
        self.assertEqual(json.loads(body)["trailers"],
                         {"x-checksum": "abc"})


def control_proxy(name, policy="", hosts=""):
    """A proxy with the terminated entries (and policy, hosts) and a
    control socket, started; (proxy, socket path)."""
    sock = os.path.join(W["dir"], name + "-ctl", "control.sock")
    os.makedirs(os.path.dirname(sock))
    secrets = os.path.join(W["dir"], name + "-secrets")
    os.makedirs(secrets, mode=0o700)
    p = proxylib.Proxy(
        W["dir"], W["up"], name=name, sets="test,term",
        extra_args=["--log-allowed", "--ca-cert", W["sgca"],
                    "--ca-key", W["sgkey"], "--secrets-dir", secrets,
                    "--control-socket", sock])
    write_policy(p, policy, hosts)
    W["proxies"].append(p)
    return p.start(), sock


class ControlCase(unittest.TestCase):
    def ctl(self, method, path, body=None):
        st, doc = proxylib.control(self.sock, method, path, body)
        self.assertEqual(st, 200, doc)
        return doc


def tls_session(p, host, port):
    """CONNECT host:port through p and TLS to the minted certificate: the
    TLS socket, its reads timing out after 30 s."""
    s = socket.create_connection(("127.0.0.1", p.port), timeout=10)
    s.sendall(("CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n" %
               (host, port, host, port)).encode())
    got = b""
    while b"\r\n\r\n" not in got:
        chunk = s.recv(4096)
        if not chunk:
            raise AssertionError("CONNECT %s:%d: %r" % (host, port, got))
        got += chunk
    if b" 200 " not in got.split(b"\r\n")[0]:
        raise AssertionError("CONNECT %s:%d: %r" % (host, port, got))
    ctx = ssl.create_default_context(cafile=W["sgca"])
    t = ctx.wrap_socket(s, server_hostname=host)
    t.settimeout(30)
    return t


def tls_tunnel(p, host, port, head):
    """CONNECT host:port through p, TLS to the minted certificate, send
    head; the bytes of the last answer read (the answers to the heads
    sent, in order: one per head, framed by Content-Length), or all the
    proxy sent before it closed."""
    t = tls_session(p, host, port)
    t.sendall(head)
    out = b""
    for _ in range(head.count(b"\r\n\r\n")):
        answer = read_answer(t)
        if not answer:
            break
        out = answer
    t.close()
    return out


def conn_of(answer):
    """The X-Conn field of an answer's head (LazyHandler's)."""
    for line in answer.split(b"\r\n\r\n", 1)[0].split(b"\r\n"):
        if line.lower().startswith(b"x-conn:"):
            return int(line.split(b":", 1)[1])
    raise AssertionError("no X-Conn in %r" % answer)


def read_answer(t):
    """One answer (head and Content-Length body) from t, or what came
    before it closed."""
    out = b""
    try:
        while b"\r\n\r\n" not in out:
            chunk = t.recv(65536)
            if not chunk:
                return out
            out += chunk
        head = out.split(b"\r\n\r\n", 1)[0].lower()
        want = 0
        for line in head.split(b"\r\n"):
            if line.startswith(b"content-length:"):
                want = int(line.split(b":", 1)[1])
        while len(out) - len(head) - 4 < want:
            chunk = t.recv(65536)
            if not chunk:
                break
            out += chunk
    except (ssl.SSLError, OSError):
        pass
    return out


class T21RefusedHeadsNameTheSession(Case):
    """A head the parser (or the session's origin-form rule) refuses
    inside a terminated session is logged with the session's CONNECT host
    and port, as every other request there is (atk18k F1): an audit of
    what a sandbox tried against a host sees it. Before, host and port
    were null, as for a malformed request to the proxy itself."""

    OK = b"GET /ok HTTP/1.1\r\nHost: reg.test\r\n\r\n"
    HEADS = (
        ("TE and CL", b"POST /ok HTTP/1.1\r\nHost: reg.test\r\n"
         b"Content-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", None),
        ("obs-fold", b"GET /ok HTTP/1.1\r\nHost: reg.test\r\nX-A: 1\r\n"
         b" folded\r\n\r\n", None),
        ("bad request line", b"GET  /ok HTTP/1.1\r\nHost: reg.test\r\n\r\n",
         None),
        ("PRI", b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", None),
        ("absolute-form", b"GET http://reg.test/ok HTTP/1.1\r\n"
         b"Host: reg.test\r\n\r\n", "GET"),
        ("after an allowed request", OK + b"DELETE /ok HTTP/1.1\r\n"
         b"Host: reg.test\r\nContent-Length: 0\r\nContent-Length: 1"
         b"\r\n\r\n", None),
    )

    def test_parse_refusals_carry_host_and_port(self):
        for name, head, method in self.HEADS:
            with self.subTest(name):
                mark = self.p.mark()
                out = tls_tunnel(self.p, "reg.test", W["reg_port"], head)
                self.assertIn(b"HTTP/1.1 400 ", out)
                self.assertIn(b"Proxy-Status: sandgate", out)
                ev = self.p.wait_event(
                    lambda e: e.get("event") == "egress.blocked" and
                    e.get("reason") == "malformed_request", start=mark)
                self.assertIsNotNone(ev, self.p.log_lines()[mark:])
                self.assertEqual(ev["host"], "reg.test", ev)
                self.assertEqual(ev["port"], W["reg_port"], ev)
                self.assertEqual(ev.get("method"), method, ev)
                self.assertEqual(ev["status"], 400, ev)
                self.assertEqual(len([
                    e for e in self.p.events()[mark:]
                    if e.get("event") == "egress.blocked"]), 1,
                    self.p.log_lines()[mark:])


GRANT_POLICY = """\
  - host: x.grant.test
    ports: [443, {GRANT}]
    allow_private: true
    tls: terminate
    ca_file: ca/upca.pem
    methods: [GET]
    paths: [/ok]
    rationale: read /ok only, whatever a grant says
grants:
  under: [grant.test]
  allow_private: true
"""


class T22GrantsDoNotWidenATerminatedEntry(ControlCase):
    """A grant never opens a tls: terminate entry's host (atk18k F2, atk18l
    F1): the requests inside the session are decided by the entry alone,
    and a refusal keeps its own reason and words. Before, on port 443 a
    method or path refusal became not_tls ("must carry TLS", from inside
    TLS); then a grant of the entry's other port let plain-HTTP requests
    through (DELETE http://host:port/admin: no TLS, no methods, no paths),
    and one of a port the entry does not list spliced a tunnel past it.
    Now the proxy refuses a grant of such a host, on any port, and ends
    one a reload finds covering a newly terminated host. `policy explain`
    says no grant opens such a request, and why."""

    @classmethod
    def setUpClass(cls):
        cls.port, cls.counters = tls_server(*make_leaf(
            os.path.join(W["dir"], "pki"), "grant", "x.grant.test"))
        cls.other = proxylib.free_port()
        cls.p, cls.sock = control_proxy(
            "grant", GRANT_POLICY.replace("{GRANT}", str(cls.port)),
            "127.0.0.1\tx.grant.test y.grant.test\n")
        proxylib.control(cls.sock, "POST", "/register", {
            "address": "127.0.0.1", "sandbox": "sbx_grant",
            "sets": "test,term"})

    def ask(self, port, method, path):
        """(status line, body, the one event) of a request in a session."""
        mark = self.p.mark()
        out = tls_tunnel(self.p, "x.grant.test", port, (
            "%s %s HTTP/1.1\r\nHost: x.grant.test:%d\r\n\r\n" %
            (method, path, port)).encode())
        return self.answer(out, mark, method, path)

    def plain(self, host, port, method, path):
        """(status line, body, the one event) of a plain-HTTP request."""
        mark = self.p.mark()
        with socket.create_connection(("127.0.0.1", self.p.port),
                                      timeout=30) as s:
            s.sendall(("%s http://%s:%d%s HTTP/1.1\r\nHost: %s:%d\r\n"
                       "Connection: close\r\n\r\n" % (
                           method, host, port, path, host,
                           port)).encode())
            out = read_answer(s)
        # A plain-HTTP refusal's event names no path.
        return self.answer(out, mark, method, None, host, port)

    def answer(self, out, mark, method, path, host=None, port=None):
        ev = self.p.wait_event(
            lambda e: e.get("event") in ("egress.blocked", "egress.allowed")
            and e.get("path") == path and e.get("method") == method and
            host in (None, e.get("host")) and port in (None, e.get("port")),
            start=mark)
        self.assertIsNotNone(ev, self.p.log_lines()[mark:])
        head, _, body = out.partition(b"\r\n\r\n")
        return head.split(b"\r\n")[0].decode(), body.decode(), ev

    def grant(self, host, port):
        """(status, document) of POST /grants for sbx_grant."""
        return proxylib.control(self.sock, "POST", "/grants", {
            "sandbox": "sbx_grant", "host": host, "port": port,
            "seconds": 600, "by": "tester",
            "rationale": "the task needs it"})

    def refusals(self, label):
        for port in (self.port, 443):
            for method, path, reason in (
                    ("GET", "/admin", "path_not_allowed"),
                    ("DELETE", "/ok", "method_not_allowed")):
                with self.subTest(label, port=port, method=method):
                    before = self.counters.get("requests")
                    line, body, ev = self.ask(port, method, path)
                    self.assertIn(" 403 ", line, body)
                    self.assertNotIn("must carry TLS", body)
                    self.assertEqual(ev["event"], "egress.blocked", ev)
                    self.assertEqual(ev["reason"], reason, ev)
                    self.assertRegex(ev.get("rule") or "",
                                     r"/term\.yaml:\d+$")
                    self.assertEqual(self.counters.get("requests"),
                                     before, "the request went upstream")

    def plain_refused(self, host):
        """Plain HTTP to host's terminated port and to a port it lacks."""
        for port, reason in ((self.port, "not_tls"),
                             (self.other, "port_not_allowed")):
            with self.subTest(host=host, port=port):
                before = self.counters.get("bytes_seen")
                line, body, ev = self.plain(host, port, "DELETE", "/admin")
                self.assertIn(" 403 ", line, body)
                self.assertEqual(ev["event"], "egress.blocked", ev)
                self.assertEqual(ev["reason"], reason, ev)
                self.assertEqual(self.counters.get("bytes_seen"), before,
                                 "the request went upstream")

    def test_no_grant_opens_a_terminated_host(self):
        line, body, ev = self.ask(self.port, "GET", "/ok")
        self.assertIn(" 200 ", line, body)
        self.refusals("no grant")
        for port in (self.port, 443, self.other):
            with self.subTest(port=port):
                st, doc = self.grant("x.grant.test", port)
                self.assertEqual(st, 403, doc)
                self.assertIn("x.grant.test is a host the proxy "
                              "terminates: the tls: terminate entry "
                              "\"x.grant.test\"", doc["error"])
        st, doc = proxylib.control(self.sock, "GET",
                                   "/grants?sandbox=sbx_grant")
        self.assertEqual(st, 200, doc)
        self.assertNotIn("x.grant.test", json.dumps(doc))
        self.refusals("grants refused")
        self.plain_refused("x.grant.test")
        line, body, ev = self.ask(self.port, "GET", "/ok")
        self.assertIn(" 200 ", line, body)
        self.assertRegex(ev.get("rule") or "", r"/term\.yaml:\d+$")

    def test_grant_ends_when_its_host_becomes_terminated(self):
        for port in (self.port, self.other):
            st, doc = self.grant("y.grant.test", port)
            self.assertEqual(st, 200, doc)
        mark = self.p.mark()
        path = os.path.join(self.p.policy_dir, "term.yaml")
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(text.replace("grants:\n", (
                "  - host: y.grant.test\n"
                "    ports: [%d]\n"
                "    allow_private: true\n"
                "    tls: terminate\n"
                "    ca_file: ca/upca.pem\n"
                "    methods: [GET]\n"
                "    rationale: terminated from now on\n"
                "grants:\n") % self.port))
        self.ctl("POST", "/reload")
        for port in (self.port, self.other):
            ev = self.p.wait_event(
                lambda e: e.get("event") == "grant.ended" and
                e.get("host") == "y.grant.test" and e.get("port") == port,
                start=mark)
            self.assertIsNotNone(ev, self.p.log_lines()[mark:])
            self.assertIn("y.grant.test is a host the proxy terminates",
                          ev.get("rule") or "")
        doc = self.ctl("GET", "/grants?sandbox=sbx_grant")
        self.assertNotIn("y.grant.test", json.dumps(doc))
        self.plain_refused("y.grant.test")

    def test_explain_says_no_grant_opens_it(self):
        for args, reason in ((("--method", "DELETE", "--path", "/ok"),
                              "method_not_allowed"),
                             (("--path", "/admin"), "path_not_allowed")):
            for port in (443, self.port):
                with self.subTest(args=args, port=port):
                    r = subprocess.run(
                        [os.path.join(proxylib.BIN, "sandgate"), "policy",
                         "explain", "--policy-dir", self.p.policy_dir,
                         "--sets", "term"] + list(args) +
                        ["x.grant.test:%d" % port], capture_output=True,
                        text=True, env=proxylib.clean_env())
                    self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
                    self.assertIn("BLOCK %s" % reason, r.stdout)
                    self.assertNotIn("a grant may open it", r.stdout)
                    self.assertIn("no grant may open it: a request inside "
                                  "the TLS session the proxy terminates "
                                  "for x.grant.test:%d is decided by the "
                                  "entry \"x.grant.test\"" % port,
                                  r.stdout)
        # The plain-HTTP request and a port the entry lacks: no grant.
        for target, reason in (("x.grant.test:%d" % self.other,
                                "port_not_allowed"),
                               ("y.grant.test:%d" % self.other,
                                "not_allowlisted")):
            with self.subTest(target=target):
                r = subprocess.run(
                    [os.path.join(proxylib.BIN, "sandgate"), "policy",
                     "explain", "--policy-dir", self.p.policy_dir,
                     "--sets", "term", target], capture_output=True,
                    text=True, env=proxylib.clean_env())
                self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
                self.assertIn("BLOCK %s" % reason, r.stdout)
                if target.startswith("x."):
                    self.assertIn("no grant may open it: x.grant.test is "
                                  "a host the proxy terminates", r.stdout)
                else:
                    self.assertIn("a grant may open it", r.stdout)
        # The session itself (the CONNECT) is the entry's to allow.
        r = subprocess.run(
            [os.path.join(proxylib.BIN, "sandgate"), "policy", "explain",
             "--policy-dir", self.p.policy_dir, "--sets", "term",
             "x.grant.test:443"], capture_output=True, text=True,
            env=proxylib.clean_env())
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


class LazyHandler(proxylib.TLSEchoHandler):
    """An upload server as many are (Python's http.server, keep-alive):
    POST /upload/NAME answers 415 without reading its body unless its
    Content-Type is application/octet-stream, and otherwise stores the
    body under NAME; POST /debug/echo answers with its body; GET
    /simple/NAME answers with what is stored under NAME and whether an
    Authorization came. X-Conn names the connection (the proxy's port)."""

    store = {}

    def reply(self, status, body):
        try:
            self.send_response(status)
            self.send_header("X-Conn", str(self.client_address[1]))
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except OSError:
            self.close_connection = True

    def do_POST(self):
        self.server.counters.bump("requests")
        n = int(self.headers.get("Content-Length", "0"))
        if self.path.startswith("/upload/"):
            if self.headers.get("Content-Type") != "application/octet-stream":
                return self.reply(415, b"unsupported\n")
            LazyHandler.store[self.path[len("/upload/"):]] = self.rfile.read(n)
            return self.reply(200, b"stored\n")
        if self.path == "/debug/echo":
            return self.reply(200, b"ECHO:" + self.rfile.read(n))
        self.reply(404, b"")

    def do_GET(self):
        self.server.counters.bump("requests")
        got = LazyHandler.store.get(self.path[len("/simple/"):], b"")
        self.reply(200, b"STORED:%s\nauth=%s\n" % (
            got, b"yes" if self.headers.get("Authorization") else b"no"))


LAZY_POLICY = """\
  - host: lazy.test
    ports: [{LAZY}]
    allow_private: true
    tls: terminate
    ca_file: ca/upca.pem
    methods: [GET, POST]
    paths: [/upload/, /simple/]
    credentials: {header: Authorization, secret: reg-token}
    rationale: uploads and reads with a token; /debug/ is not allowed
"""


class T23NoRequestAfterABody(Case):
    """An upstream connection that carried a request body carries no other
    request (atk18l F4). An upstream that answers without reading the body
    (an early 415 here) reads it as the next request: the sandbox hides
    one there that waits for a body of its own, and got the proxy's next
    head, its credential in it, as that body: echoed back by a path the
    entry refuses, or stored by an allowed upload and read back. Before,
    the connection was kept for the session's next request and pooled for
    the next session; now it is closed after its answer and the next
    request opens a new one, with the credential set as ever."""

    SECRET = TOKEN.split()[-1].encode()

    @classmethod
    def setUpClass(cls):
        cls.port, cls.counters = tls_server(*make_leaf(
            os.path.join(W["dir"], "pki"), "lazy", "lazy.test"), LazyHandler)
        cls.p = start_proxy("lazy", policy=LAZY_POLICY.replace(
            "{LAZY}", str(cls.port)), hosts="127.0.0.1\tlazy.test\n")

    def head(self, method, path, body=b"", more=""):
        return ("%s %s HTTP/1.1\r\nHost: lazy.test:%d\r\n%s"
                "Content-Length: %d\r\n\r\n" % (method, path, self.port,
                                                more, len(body))).encode() + \
            body

    def upload(self, t, smuggled, more=""):
        """The allowed POST with smuggled as its body, on t: its answer."""
        t.sendall(self.head("POST", "/upload/x", smuggled, more))
        answer = read_answer(t)
        self.assertTrue(answer.startswith(b"HTTP/1.1 415 "), answer)
        return answer

    def fetch(self, t, name):
        """GET /simple/NAME on t, which must be served with the credential
        and carry no byte of it back."""
        t.sendall(self.head("GET", "/simple/" + name))
        answer = read_answer(t)
        self.assertNotIn(self.SECRET, answer)
        self.assertTrue(answer.startswith(b"HTTP/1.1 200 "), answer)
        self.assertIn(b"auth=yes", answer)
        return answer

    def smuggled(self, method, path, ctype=""):
        return self.head(method, path, more=ctype).replace(
            b"Content-Length: 0", b"Content-Length: 90")

    def test_refused_echo_path_gets_no_head(self):
        t = tls_session(self.p, "lazy.test", self.port)
        up = self.upload(t, self.smuggled("POST", "/debug/echo"))
        self.assertNotEqual(conn_of(self.fetch(t, "x")), conn_of(up),
                            "the GET went on the POST's connection")
        t.close()

    def test_allowed_upload_stores_no_head(self):
        t = tls_session(self.p, "lazy.test", self.port)
        self.upload(t, self.smuggled(
            "POST", "/upload/loot",
            "Content-Type: application/octet-stream\r\n"))
        self.fetch(t, "x")
        t.close()
        t = tls_session(self.p, "lazy.test", self.port)
        self.fetch(t, "loot")
        t.close()

    def test_pooled_connection_after_a_body_not_taken(self):
        t = tls_session(self.p, "lazy.test", self.port)
        self.upload(t, self.smuggled("POST", "/debug/echo"),
                    "Connection: close\r\n")
        t.close()
        t = tls_session(self.p, "lazy.test", self.port)
        self.fetch(t, "x")
        t.close()

    def test_requests_without_a_body_share_a_connection(self):
        t = tls_session(self.p, "lazy.test", self.port)
        conns = {conn_of(self.fetch(t, "x")) for _ in range(3)}
        t.close()
        self.assertEqual(len(conns), 1, conns)


PROXY_UID = 65532


class UidProxy(proxylib.Proxy):
    """The proxy as the uid `sandgate proxy start` gives it (root can)."""

    def argv(self):
        return ["setpriv", "--reuid=%d" % PROXY_UID,
                "--regid=%d" % PROXY_UID, "--clear-groups"] + \
            super().argv()


def sandgate(state, *args, stdin=None):
    return subprocess.run(
        [os.path.join(proxylib.BIN, "sandgate")] + list(args),
        input=stdin, capture_output=True, text=True, timeout=60,
        env=proxylib.clean_env({"SANDGATE_STATE": state}))


@unittest.skipUnless(os.geteuid() == 0, "needs root (the proxy's uid)")
class T06SecretCommand(unittest.TestCase):
    """`sandgate secret set` writes what the proxy (as its own uid) reads;
    a running proxy picks a new value up at once (set reloads it)."""

    def test_set_list_rm_through_the_proxy(self):
        top = tempfile.mkdtemp(prefix="sg-secret-")
        os.chmod(top, 0o755)
        state = os.path.join(top, "state")
        tok1, tok2 = "Bearer sg-cli-token-one", "Bearer sg-cli-token-two"
        try:
            r = sandgate(state, "secret", "set", "reg-token",
                         stdin=tok1 + "\n")
            self.assertEqual(r.returncode, 0, r.stderr)
            sdir = os.path.join(state, "proxy", "secrets")
            st = os.stat(sdir)
            self.assertEqual((st.st_uid, st.st_mode & 0o777),
                             (PROXY_UID, 0o700))
            st = os.stat(os.path.join(sdir, "reg-token"))
            self.assertEqual((st.st_uid, st.st_mode & 0o777),
                             (PROXY_UID, 0o600))
            r = sandgate(state, "secret", "list")
            self.assertEqual(r.stdout, "reg-token\n")
            run = os.path.join(state, "proxy", "run")
            os.makedirs(run)
            p = UidProxy(top, W["up"], name="uid", sets="test,term",
                         extra_args=[
                             "--ca-cert", os.path.join(top, "ca.pem"),
                             "--ca-key", os.path.join(top, "ca.key"),
                             "--secrets-dir", sdir,
                             "--control-socket",
                             os.path.join(run, "control.sock")])
            write_policy(p)
            shutil.copy(W["sgca"], os.path.join(top, "ca.pem"))
            shutil.copy(W["sgkey"], os.path.join(top, "ca.key"))
            # the proxy's own files; the state root, and the folders
            # above it and in it that the controller keeps, stay root's
            # (sandgate refuses a state root another uid could change)
            # (searchable, so that the proxy, run here on the host
            # rather than in its container, reaches its folders)
            roots = (top, state, os.path.join(state, "proxy"))
            for d, _, files in os.walk(top):
                for n in [d] + [os.path.join(d, f) for f in files]:
                    if not n.startswith(sdir) and n not in roots:
                        os.chown(n, PROXY_UID, PROXY_UID)
            for n in roots[1:]:
                os.chmod(n, 0o711)
            W["proxies"].append(p)
            p.start()
            url = "https://cred.test:%d/simple/" % W["reg_port"]
            rc, status, headers, body, err = curl(p, url)
            self.assertEqual(status, 200, headers + body + p.stderr())
            self.assertIn(tok1, body)
            r = sandgate(state, "secret", "set", "reg-token", stdin=tok2)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("the proxy reloaded", r.stdout)
            rc, status, headers, body, err = curl(p, url)
            self.assertIn(tok2, body)
            self.assertNotIn(tok1, body)
            r = sandgate(state, "secret", "rm", "reg-token")
            self.assertEqual(r.returncode, 0, r.stderr)
            rc, status, headers, body, err = curl(p, url)
            self.assertEqual(status, 503, headers + body)
            self.assertIn("credential_missing", headers)
            for where, text in (("log", "\n".join(p.log_lines())),
                                ("stderr", p.stderr())):
                self.assertNotIn("sg-cli-token", text, where)
            self.assertEqual(proxylib.stop_and_check(p), [])
        finally:
            for p in W["proxies"]:
                if p.dir.startswith(top):
                    proxylib.stop_and_check(p)
            shutil.rmtree(top, ignore_errors=True)


@unittest.skipUnless(os.geteuid() == 0, "needs root (the proxy's uid)")
class T13CaKeyKept(unittest.TestCase):
    """A proxy holding the CA key is not dumpable, with or without
    --secrets-dir; a CA key inside --log-dir is refused."""

    def test_not_dumpable_without_secrets(self):
        top = tempfile.mkdtemp(prefix="sg-cakey-")
        try:
            os.chmod(top, 0o755)
            p = UidProxy(top, W["up"], name="nodump", sets="test,term",
                         extra_args=[
                             "--ca-cert", os.path.join(top, "ca.pem"),
                             "--ca-key", os.path.join(top, "ca.key")])
            write_policy(p)
            shutil.copy(W["sgca"], os.path.join(top, "ca.pem"))
            shutil.copy(W["sgkey"], os.path.join(top, "ca.key"))
            for d, _, files in os.walk(top):
                for n in [d] + [os.path.join(d, f) for f in files]:
                    os.chown(n, PROXY_UID, PROXY_UID)
            W["proxies"].append(p)
            p.start()
            # The kernel gives a process that is not dumpable /proc files
            # of root's; a dumpable one's are its own uid's.
            st = os.stat("/proc/%d/environ" % p.pid)
            self.assertEqual(st.st_uid, 0, "the proxy holding the CA key "
                             "is dumpable")
            self.assertEqual(proxylib.stop_and_check(p), [])
        finally:
            shutil.rmtree(top, ignore_errors=True)

    def test_key_in_the_log_folder_refused(self):
        p = proxylib.Proxy(W["dir"], W["up"], name="keyinlog",
                           sets="test,term")
        key = os.path.join(p.log_dir, "ca.key")
        shutil.copy(W["sgkey"], key)
        p.extra_args += ["--ca-cert", W["sgca"], "--ca-key", key]
        write_policy(p)
        try:
            p.start()
        except proxylib.ProxyError as e:
            self.assertIn("--ca-key", str(e))
            self.assertIn("is in the log folder", str(e))
        else:
            proxylib.stop_and_check(p)
            self.fail("a CA key in the log folder was accepted")


class T08CaCreate(unittest.TestCase):
    def test_made_once_and_used(self):
        d = tempfile.mkdtemp(prefix="ca-", dir=W["dir"])
        cert, key = os.path.join(d, "ca.crt"), os.path.join(d, "ca.key")
        p = proxylib.Proxy(W["dir"], W["up"], name="cacreate",
                           sets="test,term", extra_args=[
                               "--ca-cert", cert, "--ca-key", key,
                               "--ca-create"])
        write_policy(p)
        W["proxies"].append(p)
        p.start()
        st = os.stat(key)
        self.assertEqual((st.st_uid, st.st_mode & 0o777), (os.geteuid(),
                                                            0o600))
        text = subprocess.run(["openssl", "x509", "-in", cert, "-noout",
                               "-text"], capture_output=True,
                              text=True).stdout
        self.assertIn("CA:TRUE, pathlen:0", text)
        r = subprocess.run(
            ["curl", "-sS", "--proxy", "http://127.0.0.1:%d" % p.port,
             "--cacert", cert, "https://reg.test:%d/ok" % W["reg_port"]],
            capture_output=True, text=True, env=proxylib.clean_env())
        self.assertIn('"path": "/ok"', r.stdout, r.stderr)
        with open(key, "rb") as f:
            before = f.read()
        self.assertEqual(proxylib.stop_and_check(p), [])
        p2 = proxylib.Proxy(W["dir"], W["up"], name="cacreate2",
                            sets="test,term", extra_args=[
                                "--ca-cert", cert, "--ca-key", key,
                                "--ca-create"])
        write_policy(p2)
        W["proxies"].append(p2)
        p2.start()
        with open(key, "rb") as f:
            self.assertEqual(f.read(), before, "an existing key is kept")


class T09QueryPrefix(Case):
    """A prefix with '?' matches the query too: git's fetch, not push."""

    def git(self, path, *args):
        return curl(self.p, self.url("git.test", W["reg_port"], path), *args)

    def test_fetch_allowed_push_refused(self):
        rc, status, headers, body, err = self.git(
            "/repo.git/info/refs?service=git-upload-pack")
        self.assertEqual(status, 200, headers + body)
        rc, status, headers, body, err = self.git(
            "/repo.git/git-upload-pack", "-X", "POST", "--data", "x")
        self.assertEqual(status, 200, headers + body)
        rc, status, headers, body, err = self.git(
            "/repo.git/info/refs?service=git-receive-pack")
        self.assertEqual(status, 403, headers + body)
        self.assertIn("Content-Type: text/plain", headers)
        self.assertIn(PREFIX, body)
        rc, status, headers, body, err = self.git(
            "/repo.git/git-receive-pack", "-X", "POST", "--data", "x")
        self.assertEqual(status, 403, headers + body)


class T07ShippedExamples(unittest.TestCase):
    def test_examples_validate(self):
        r = subprocess.run(
            [os.path.join(proxylib.BIN, "sandgate"), "policy", "check",
             "--policy-dir", os.path.join(proxylib.SRC, "examples",
                                          "terminate-policy")],
            capture_output=True, text=True, env=proxylib.clean_env())
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("3 sets", r.stdout)

    def test_explain_a_terminated_entry(self):
        p = proxylib.Proxy(W["dir"], W["up"], name="explain")
        write_policy(p)

        def explain(*args):
            return subprocess.run(
                [os.path.join(proxylib.BIN, "sandgate"), "policy",
                 "explain", "--policy-dir", p.policy_dir, "--sets", "term"]
                + list(args), capture_output=True, text=True,
                env=proxylib.clean_env())
        r = explain("--method", "GET", "--path", "/simple/x",
                    "cred.test:%d" % W["reg_port"])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("the proxy sets Authorization from secret reg-token",
                      r.stdout)
        self.assertNotIn("sg-test-token", r.stdout)
        r = explain("--method", "DELETE", "--path", "/simple/x",
                    "reg.test:%d" % W["reg_port"])
        self.assertEqual(r.returncode, 1)
        self.assertIn("BLOCK method_not_allowed", r.stdout)


class T04NoCA(unittest.TestCase):
    def test_refused_in_words(self):
        p = start_proxy("noca", with_ca=False)
        rc, status, headers, body, err = curl(
            p, "https://reg.test:%d/ok" % W["reg_port"])
        self.assertNotEqual(rc, 0)
        self.assertIn("503", err)
        ev = p.wait_event(lambda e: e.get("reason") ==
                          "termination_unavailable")
        self.assertIsNotNone(ev, p.log_lines())


class T11ExecAttribution(ControlCase):
    """The requests inside a terminated session are the CONNECT's exec's:
    their events and /blocks name its run id (clients send no
    Proxy-Authorization inside TLS), another exec's /blocks does not list
    them, and an ended exec's credential attributes nothing."""

    def setUp(self):
        self.p, self.sock = control_proxy("attr")

    def blocks(self, seq, run):
        doc = self.ctl("GET", "/blocks?sandbox=sbx_term&after=%d&run=%s"
                       % (seq, run))
        return [(b["host"], b.get("path")) for b in doc["blocks"]]

    def test_inner_requests_carry_the_connect_run(self):
        self.ctl("POST", "/register", {"address": "127.0.0.1",
                                       "sandbox": "sbx_term",
                                       "sets": "test,term"})
        seq = self.ctl("GET", "/status")["blocks_seq"]
        ta, tb = "c" * 32, "d" * 32
        self.ctl("POST", "/execs", {"token": ta, "sandbox": "sbx_term",
                                    "run_id": "run_A"})
        self.ctl("POST", "/execs", {"token": tb, "sandbox": "sbx_term",
                                    "run_id": "run_B"})
        user = "sandgate:" + ta
        rc, status, _, _, err = curl(self.p, self.reg("/forbidden"),
                                     "--proxy-user", user)
        self.assertEqual(status, 403, err)
        rc, status, _, _, err = curl(self.p, self.reg("/ok"),
                                     "--proxy-user", user)
        self.assertEqual(status, 200, err)
        blk = self.p.wait_event(lambda e: e.get("event") ==
                                "egress.blocked" and
                                e.get("path") == "/forbidden")
        self.assertIsNotNone(blk, self.p.log_lines())
        self.assertEqual(blk.get("run_id"), "run_A", blk)
        ok = self.p.wait_event(lambda e: e.get("event") ==
                               "egress.allowed" and e.get("path") == "/ok")
        self.assertIsNotNone(ok, self.p.log_lines())
        self.assertEqual(ok.get("run_id"), "run_A", ok)
        self.assertIn("reg.test", [h for h, _ in self.blocks(seq, "run_A")])
        self.assertNotIn("reg.test",
                         [h for h, _ in self.blocks(seq, "run_B")])
        # An ended exec's credential attributes nothing inside either.
        self.ctl("POST", "/execs/end", {"run_id": "run_A"})
        start = len(self.p.log_lines())
        rc, status, _, _, err = curl(self.p, self.reg("/forbidden2"),
                                     "--proxy-user", user)
        self.assertEqual(status, 403, err)
        late = self.p.wait_event(lambda e: e.get("path") == "/forbidden2",
                                 start=start)
        self.assertIsNotNone(late, self.p.log_lines())
        self.assertIsNone(late.get("run_id"), late)

    def reg(self, path):
        return "https://reg.test:%d%s" % (W["reg_port"], path)


if __name__ == "__main__":
    unittest.main()
