#!/usr/bin/env python3
"""Integration tests of sandgate-proxy's control API over TCP
(--control-listen with --control-token-file), its /healthz and /readyz,
and the reload on a Kubernetes ConfigMap's ..data swap (--policy-watch).

Run: python3 tests/integration/test_control_api.py [-v] [names...]
Env: SANDGATE_BIN (folder holding sandgate-proxy and sandgate),
SANDGATE_SRC (source root); SANDGATE_KEEP=1 keeps the temporary folder.

The contract under test is docs/proxy.md ("Control API over TCP",
"Health endpoints", "Policy from a ConfigMap"). Everything listens on
loopback; every name is under .test.
"""

import base64
import http.client
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proxylib  # noqa: E402
from proxylib import get_request  # noqa: E402

SANDGATE = os.path.join(proxylib.BIN, "sandgate")
SBX = "c0ffee0000000000000000000000000000000000000000000000000000000001"
W = {}


def tcp(method, path, token=None, body=None, port=None, raw_auth=None,
        source=None):
    """(status, parsed JSON or text, headers) of one request to the TCP
    control API (from the address source when given)."""
    c = http.client.HTTPConnection(
        "127.0.0.1", port or W["cport"], timeout=10,
        source_address=(source, 0) if source else None)
    try:
        headers = {}
        if token is not None:
            headers["Authorization"] = "Bearer " + token
        if raw_auth is not None:
            headers["Authorization"] = raw_auth
        data = json.dumps(body).encode() if body is not None else None
        if data:
            headers["Content-Type"] = "application/json"
        c.request(method, path, body=data, headers=headers)
        r = c.getresponse()
        raw = r.read().decode()
        try:
            parsed = json.loads(raw) if raw.strip() else None
        except ValueError:
            parsed = raw
        return r.status, parsed, dict(r.getheaders())
    finally:
        c.close()


def new_token(path, text=None):
    with open(path, "w") as f:
        f.write(text if text is not None else
                base64.b64encode(os.urandom(48)).decode() + "\n")
    os.chmod(path, 0o600)
    with open(path) as f:
        return f.read().strip()


def setUpModule():
    for k in proxylib.PROXY_ENV:
        os.environ.pop(k, None)
    W["dir"] = tempfile.mkdtemp(prefix="sg-ctlapi-")
    W["state"] = os.path.join(W["dir"], "state")
    W["sock"] = os.path.join(W["state"], "proxy", "run", "control.sock")
    os.makedirs(os.path.dirname(W["sock"]))
    W["tokfile"] = os.path.join(W["dir"], "control.token")
    W["token"] = new_token(W["tokfile"])
    W["cport"] = proxylib.free_port()
    try:
        W["up"] = proxylib.Upstreams(W["dir"]).start()
        W["proxy"] = proxylib.Proxy(W["dir"], W["up"], extra_args=[
            "--control-socket", W["sock"],
            "--control-listen", "127.0.0.1:%d" % W["cport"],
            "--control-token-file", W["tokfile"]])
        with open(os.path.join(W["proxy"].policy_dir, "grants.yaml"),
                  "w") as f:
            f.write("description: grants of the control API tests\n"
                    "grants:\n  under: [grant.test]\n")
        W["proxy"].start()
    except BaseException:
        tearDownModule()
        raise


def tearDownModule():
    proxylib.teardown(W, [p for p in W.get("proxies", []) +
                          [W.get("proxy")] if p is not None])


def start_proxy(name, extra_args, policy_dir=None):
    """Another proxy of the module (stopped at the end)."""
    args = list(extra_args)
    if policy_dir is not None:
        args += ["--policy-dir", policy_dir]
    p = proxylib.Proxy(W["dir"], W["up"], name=name, extra_args=args)
    W.setdefault("proxies", []).append(p)
    return p.start()


def start_fails(name, extra_args):
    """(exit status, stderr) of a proxy that must refuse to start."""
    p = proxylib.Proxy(W["dir"], W["up"], name=name, extra_args=extra_args)
    r = subprocess.run(p.argv(), capture_output=True, text=True,
                       timeout=20, env=proxylib.clean_env())
    return r.returncode, r.stderr


class Auth(unittest.TestCase):
    """Without the token: 401 and an event; with it: the socket's
    answers."""

    def test_no_token_is_401_and_logged(self):
        p = W["proxy"]
        start = p.mark()
        status, body, hdrs = tcp("GET", "/status")
        self.assertEqual(status, 401, body)
        self.assertEqual(hdrs.get("WWW-Authenticate"), "Bearer")
        self.assertNotIn("policy_digest", json.dumps(body))
        e = p.wait_event(lambda e: e["event"] == "control.unauthorized",
                         start)
        self.assertIsNotNone(e, "no control.unauthorized event")
        self.assertEqual(e["client"], "127.0.0.1")
        self.assertEqual(e["path"], "/status")
        self.assertEqual(e["reason"], "no bearer token")
        self.assertIn("policy_digest", e)

    def test_wrong_token_changes_nothing(self):
        p = W["proxy"]
        start = p.mark()
        wrong = W["token"][:-1] + ("A" if W["token"][-1] != "A" else "B")
        for auth in ("Bearer " + wrong, "Bearer " + W["token"] + "x",
                     "Bearer ", "Basic " + W["token"], W["token"]):
            status, body, _ = tcp("POST", "/register", raw_auth=auth,
                                  body={"address": "127.0.0.9",
                                        "sandbox": SBX, "sets": "test"})
            # A body behind a wrong token is refused before it is read.
            self.assertEqual(status, 413, "%r: %r" % (auth, body))
        status, st = proxylib.control(W["sock"], "GET", "/status")
        self.assertNotIn(SBX, json.dumps(st["sandboxes"]))
        refused = [e for e in p.events()[start:]
                   if e["event"] == "control.unauthorized"]
        self.assertEqual(len(refused), 5, refused)
        self.assertEqual(refused[0]["reason"], "wrong bearer token")
        self.assertEqual(refused[0]["path"], "/register")
        # The token itself is never written to the log.
        with open(p.log_path) as f:
            self.assertNotIn(W["token"][:20], f.read())

    def test_flood_of_refusals_is_counted_not_written_line_by_line(self):
        """20 control.unauthorized lines in a 10 s window, then the rest
        counted into one control.unauthorized_summary: a client that
        hammers the port cannot fill the log volume (and with it stop
        the replica's egress), and no refusal goes unrecorded."""
        port = proxylib.free_port()
        p = start_proxy("flood", [
            "--control-socket", os.path.join(W["dir"], "flood.sock"),
            "--control-listen", "127.0.0.1:%d" % port,
            "--control-token-file", W["tokfile"]])
        start = p.mark()
        for _ in range(50):
            self.assertEqual(tcp("GET", "/status", port=port)[0], 401)
        e = p.wait_event(lambda e: e["event"] ==
                         "control.unauthorized_summary", start, timeout=15)
        self.assertIsNotNone(e, "no summary of the counted refusals")
        lines = [x for x in p.events()[start:]
                 if x["event"] == "control.unauthorized"]
        self.assertEqual(len(lines), 20)
        self.assertEqual(e["count"], 30)
        self.assertIn("policy_digest", e)

    def test_with_token_same_answers_as_socket(self):
        tok = W["token"]
        status, body, _ = tcp("POST", "/register", tok, {
            "address": "127.0.0.7", "sandbox": SBX, "sets": "test"})
        self.assertEqual((status, body), (200, {"ok": True, "saved": True}))
        try:
            status, st_tcp, _ = tcp("GET", "/status", tok)
            self.assertEqual(status, 200)
            _, st_sock = proxylib.control(W["sock"], "GET", "/status")
            for key in ("policy_digest", "sandboxes", "health"):
                self.assertEqual(st_tcp[key], st_sock[key], key)
            self.assertIn(SBX, json.dumps(st_tcp["sandboxes"]))
            # A block of the registered sandbox, reported by both.
            c = proxylib.bound_conn("127.0.0.7", W["proxy"].port)
            c.send(get_request("http://blocked.test/", "blocked.test",
                               "Connection: close\r\n"))
            self.assertEqual(c.read_response().status, 403)
            c.close()
            q = "/blocks?sandbox=%s&after=%d" % (SBX, st_tcp["blocks_seq"])
            status, b_tcp, _ = tcp("GET", q, tok)
            _, b_sock = proxylib.control(W["sock"], "GET", q)
            self.assertEqual(status, 200)
            self.assertEqual(b_tcp["blocks"], b_sock["blocks"])
            self.assertEqual([b["host"] for b in b_tcp["blocks"]],
                             ["blocked.test"])
            status, g_tcp, _ = tcp("GET", "/grants", tok)
            self.assertEqual(g_tcp, proxylib.control(W["sock"], "GET",
                                                     "/grants")[1])
            status, r, _ = tcp("POST", "/reload", tok)
            self.assertEqual((status, r["digest"]),
                             (200, st_sock["policy_digest"]))
            status, m, _ = tcp("GET", "/metrics", tok)
            self.assertEqual(status, 200)
            self.assertIn("sandgate_proxy_sandboxes_registered 1", m)
        finally:
            status, body, _ = tcp("POST", "/unregister", tok,
                                  {"sandbox": SBX})
        self.assertEqual(status, 200, body)
        _, st = proxylib.control(W["sock"], "GET", "/status")
        self.assertNotIn(SBX, json.dumps(st["sandboxes"]))

    def test_grant_by_names_the_api_client(self):
        """Who gave a grant over TCP: the client's address, never a uid
        the proxy cannot know."""
        tok = W["token"]
        status, body, _ = tcp("POST", "/grants", tok, {
            "sandbox": SBX, "host": "g.grant.test", "port": 80,
            "seconds": 60, "rationale": "test", "by": "alice (uid 0)"})
        self.assertEqual(status, 200, body)
        self.assertEqual(body["grant"]["by"],
                         "alice (control API, 127.0.0.1)")
        status, body, _ = tcp("POST", "/grants/revoke", tok, {
            "sandbox": SBX, "host": "g.grant.test", "port": 80,
            "by": "alice"})
        self.assertEqual(status, 200, body)

    def test_grant_members_too_long_are_refused_not_cut(self):
        """A sandbox or run_id longer than 64 bytes is refused naming it:
        cut to fit, it named another sandbox or another exec."""
        tok = W["token"]
        base = {"sandbox": SBX, "host": "long.grant.test", "port": 80,
                "seconds": 60, "rationale": "test", "by": "alice"}
        for key, value, limit in (("sandbox", SBX + "x" * 64, 64),
                                  ("run_id", "run_" + "7" * 61, 64),
                                  ("rationale", "r" * 513, 512)):
            status, body, _ = tcp("POST", "/grants", tok,
                                  dict(base, **{key: value}))
            self.assertEqual(status, 400, body)
            self.assertIn("%s is longer than %d bytes" % (key, limit),
                          body["error"])
        _, listed, _ = tcp("GET", "/grants", tok)
        self.assertNotIn("long.grant.test", json.dumps(listed))
        # a revoke names it too (atk41g F3: "host and by are required")
        status, body, _ = tcp("POST", "/grants/revoke", tok, dict(
            base, sandbox=SBX + "x" * 64))
        self.assertEqual(status, 400, body)
        self.assertIn("sandbox is longer than 64 bytes", body["error"])

    @unittest.skipUnless(proxylib.ipv6_loopback_available(),
                         "no IPv6 on this host")
    def test_grant_by_keeps_the_whole_client_address(self):
        """Who gave a grant over TCP keeps the client's whole address,
        the part the proxy knows itself (atk41g F1: a 32-byte name from
        ::ffff:127.0.0.123 was cut to ...127.0.0.12, another address)."""
        port = proxylib.free_port()
        start_proxy("v6api", [
            "--control-socket", os.path.join(W["dir"], "v6api.sock"),
            "--control-listen", "[::]:%d" % port,
            "--control-token-file", W["tokfile"]],
            policy_dir=W["proxy"].policy_dir)
        name = "a" * 32
        status, body, _ = tcp("POST", "/grants", W["token"], {
            "sandbox": SBX, "host": "v6.grant.test", "port": 80,
            "seconds": 60, "rationale": "test", "by": name},
            port=port, source="127.0.0.123")
        self.assertEqual(status, 200, body)
        self.assertEqual(body["grant"]["by"],
                         name + " (control API, ::ffff:127.0.0.123)")

    @unittest.skipUnless(os.geteuid() == 0 and shutil.which("ip"),
                         "needs root and ip(8) for a network namespace")
    def test_grant_by_of_a_link_local_client(self):
        """A link-local client's zone is its interface's index, not the
        interface's name (any bytes: escaped, it was cut in a grant's by,
        or refused as "no quotes or backslashes", atk41g2 F1). The proxy
        and the client in a network namespace of the test's own."""
        ns = "sgctl%d" % os.getpid()
        ifname = 'q"x\\y'
        subprocess.run(["ip", "netns", "add", ns], check=True)
        self.addCleanup(subprocess.run, ["ip", "netns", "del", ns])
        subprocess.run(["ip", "netns", "exec", ns, "sh", "-ec",
                        'ip link set lo up; '
                        'ip link add name "$1" type veth peer name sgp; '
                        'ip link set "$1" up; ip link set sgp up; '
                        'ip -6 addr add fe80::5:1/64 dev "$1" nodad',
                        "sh", ifname], check=True)
        port = 18765
        p = proxylib.Proxy(W["dir"], W["up"], name="llapi", extra_args=[
            "--control-socket", os.path.join(W["dir"], "llapi.sock"),
            "--control-listen", "[::]:%d" % port,
            "--control-token-file", W["tokfile"],
            "--policy-dir", W["proxy"].policy_dir])
        inner = p.argv
        p.argv = lambda: ["ip", "netns", "exec", ns] + inner()
        W.setdefault("proxies", []).append(p)
        p.start()
        client = (
            "import json, socket, sys\n"
            "ifn, port, tok, body = sys.argv[1:]\n"
            "i = socket.if_nametoindex(ifn)\n"
            "s = socket.socket(socket.AF_INET6)\n"
            "s.bind(('fe80::5:1', 0, 0, i))\n"
            "s.connect(('fe80::5:1', int(port), 0, i))\n"
            "s.sendall(('POST /grants HTTP/1.1\\r\\nHost: x\\r\\n'\n"
            "    'Authorization: Bearer %s\\r\\nContent-Length: %d\\r\\n'\n"
            "    'Connection: close\\r\\n\\r\\n%s' % (tok, len(body), body))\n"
            "    .encode())\n"
            "out = b''\n"
            "while True:\n"
            "    d = s.recv(65536)\n"
            "    if not d: break\n"
            "    out += d\n"
            "print(i)\n"
            "print(out.partition(b'\\r\\n\\r\\n')[2].decode())\n")
        name = "n" * 32
        r = subprocess.run(
            ["ip", "netns", "exec", ns, sys.executable, "-c", client,
             ifname, str(port), W["token"], json.dumps({
                 "sandbox": SBX, "host": "ll.grant.test", "port": 80,
                 "seconds": 60, "rationale": "test", "by": name})],
            capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        index, body = r.stdout.split("\n", 1)
        grant = json.loads(body).get("grant")
        self.assertIsNotNone(grant, body)
        self.assertEqual(grant["by"], "%s (control API, fe80::5:1%%%s)"
                         % (name, index))

    def test_controller_uses_the_api(self):
        """`sandgate proxy reload` with SANDGATE_PROXY_CONTROL goes to
        the TCP API with the token; without the token file it refuses."""
        state = os.path.join(W["dir"], "nostate")  # no socket there
        base = {"SANDGATE_STATE": state, "SANDGATE_PROXY_CONTROL":
                "http://127.0.0.1:%d" % W["cport"]}
        env = proxylib.clean_env(dict(base, SANDGATE_PROXY_CONTROL_TOKEN_FILE=
                                      W["tokfile"]))
        r = subprocess.run([SANDGATE, "proxy", "reload"], env=env,
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        _, st = proxylib.control(W["sock"], "GET", "/status")
        self.assertIn("policy reloaded: digest %s" % st["policy_digest"],
                      r.stdout)
        r = subprocess.run([SANDGATE, "proxy", "reload"],
                           env=proxylib.clean_env(base),
                           capture_output=True, text=True, timeout=30)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("SANDGATE_PROXY_CONTROL_TOKEN_FILE", r.stderr)


def make_ip_cert(folder):
    """A CA and a server certificate for 127.0.0.1 (openssl(1)): (ca, cert,
    key)."""
    os.makedirs(folder)

    def run(*args):
        subprocess.run(["openssl"] + list(args), cwd=folder, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"]
    run("req", "-x509", *ec, "-nodes", "-keyout", "ca.key", "-out",
        "ca.pem", "-days", "2", "-subj", "/CN=control test CA",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign")
    run("req", *ec, "-nodes", "-keyout", "srv.key", "-out", "srv.csr",
        "-subj", "/CN=127.0.0.1")
    with open(os.path.join(folder, "srv.ext"), "w") as f:
        f.write("basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"
                "subjectAltName=IP:127.0.0.1\n")
    run("x509", "-req", "-in", "srv.csr", "-CA", "ca.pem", "-CAkey",
        "ca.key", "-CAcreateserial", "-out", "srv.pem", "-days", "2",
        "-extfile", "srv.ext")
    return tuple(os.path.join(folder, n)
                 for n in ("ca.pem", "srv.pem", "srv.key"))


class TLS(unittest.TestCase):
    """--control-tls-cert/--control-tls-key: the same API over https."""

    def test_https_api_and_controller(self):
        ca, cert, key = make_ip_cert(os.path.join(W["dir"], "tlspki"))
        port = proxylib.free_port()
        sock = os.path.join(W["dir"], "tls.sock")
        start_proxy("tlsproxy", [
            "--control-socket", sock,
            "--control-listen", "127.0.0.1:%d" % port,
            "--control-token-file", W["tokfile"],
            "--control-tls-cert", cert, "--control-tls-key", key])
        ctx = ssl.create_default_context(cafile=ca)

        def get(path, token=None):
            c = http.client.HTTPSConnection("127.0.0.1", port, timeout=10,
                                            context=ctx)
            try:
                c.request("GET", path, headers={
                    "Authorization": "Bearer " + token} if token else {})
                r = c.getresponse()
                return r.status, r.read()
            finally:
                c.close()
        self.assertEqual(get("/healthz"), (200, b"ok\n"))
        self.assertEqual(get("/status")[0], 401)
        status, body = get("/status", W["token"])
        self.assertEqual(status, 200)
        _, st = proxylib.control(sock, "GET", "/status")
        self.assertEqual(json.loads(body)["policy_digest"],
                         st["policy_digest"])
        # Plain HTTP to the TLS port gets no answer of the API.
        with self.assertRaises((http.client.HTTPException, OSError)):
            tcp("GET", "/healthz", port=port)
        env = proxylib.clean_env({
            "SANDGATE_STATE": os.path.join(W["dir"], "nostate"),
            "SANDGATE_PROXY_CONTROL": "https://127.0.0.1:%d" % port,
            "SANDGATE_PROXY_CONTROL_TOKEN_FILE": W["tokfile"],
            "SANDGATE_PROXY_CONTROL_CA": ca})
        r = subprocess.run([SANDGATE, "proxy", "reload"], env=env,
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(st["policy_digest"], r.stdout)
        # Without the CA the controller does not trust the proxy.
        env.pop("SANDGATE_PROXY_CONTROL_CA")
        r = subprocess.run([SANDGATE, "proxy", "reload"], env=env,
                           capture_output=True, text=True, timeout=30)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("cannot reach the proxy's control API", r.stderr)


class Health(unittest.TestCase):

    def test_healthz_and_readyz_need_no_token_and_say_nothing(self):
        p = W["proxy"]
        start = p.mark()
        status, body, _ = tcp("GET", "/healthz")
        self.assertEqual((status, body), (200, "ok\n"))
        status, body, _ = tcp("GET", "/readyz")
        self.assertEqual(status, 200, body)
        self.assertEqual(body, {"ready": True, "policy": True, "log": True,
                                "resolver": True})
        _, st = proxylib.control(W["sock"], "GET", "/status")
        for text in (json.dumps(body), "ok\n"):
            self.assertNotIn(st["policy_digest"], text)
        self.assertEqual([e for e in p.events()[start:]
                          if e["event"] == "control.unauthorized"], [])
        # On the socket as well.
        self.assertEqual(proxylib.control(W["sock"], "GET", "/readyz")[0],
                         200)

    @unittest.skipUnless(os.geteuid() == 0 and shutil.which("mount"),
                         "needs root to mount a tmpfs")
    def test_readyz_flips_when_the_log_folder_is_full(self):
        logs = os.path.join(W["dir"], "rologs")
        os.makedirs(logs)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs",
                        logs], check=True)
        try:
            port = proxylib.free_port()
            tok = os.path.join(W["dir"], "ro.token")
            new_token(tok)
            start_proxy("ro", [
                "--log-dir", logs, "--control-socket",
                os.path.join(W["dir"], "ro.sock"),
                "--control-listen", "127.0.0.1:%d" % port,
                "--control-token-file", tok])
            self.assertEqual(tcp("GET", "/readyz", port=port)[0], 200)
            # Full: the proxy refuses egress it cannot log.
            fill = os.path.join(logs, "fill")
            with open(fill, "wb") as f:
                try:
                    while True:
                        f.write(b"\0" * 65536)
                        f.flush()
                except OSError:
                    pass
            status, body, _ = tcp("GET", "/readyz", port=port)
            self.assertEqual(status, 503, body)
            self.assertEqual(body["log"], False)
            self.assertEqual(body["ready"], False)
            self.assertEqual(tcp("GET", "/healthz", port=port)[0], 200)
            os.unlink(fill)
            deadline = time.monotonic() + 5
            while tcp("GET", "/readyz", port=port)[0] != 200:
                self.assertLess(time.monotonic(), deadline,
                                "readyz did not come back")
                time.sleep(0.1)
        finally:
            for p in W.get("proxies", []):
                if p.dir.endswith("/ro"):
                    proxylib.stop_and_check(p)
            subprocess.run(["umount", "-l", logs])


class StartUp(unittest.TestCase):
    """The API is never served without its authentication."""

    def test_listen_without_token_file_refused(self):
        rc, err = start_fails("notok", [
            "--control-socket", os.path.join(W["dir"], "nt.sock"),
            "--control-listen", "127.0.0.1:%d" % proxylib.free_port()])
        self.assertEqual(rc, 1, err)
        self.assertIn("--control-listen needs --control-token-file", err)

    def test_weak_or_open_token_refused(self):
        cases = [("short", "abcdefghij0123456789", 0o600, "43 to 1024"),
                 ("same", "a" * 64, 0o600, "fewer than 10"),
                 ("open", None, 0o644, "readable or writable by others")]
        for name, text, mode, want in cases:
            path = os.path.join(W["dir"], name + ".token")
            new_token(path, text)
            os.chmod(path, mode)
            rc, err = start_fails("tok-" + name, [
                "--control-socket", os.path.join(W["dir"], name + ".sock"),
                "--control-listen", "127.0.0.1:%d" % proxylib.free_port(),
                "--control-token-file", path])
            self.assertEqual(rc, 1, err)
            self.assertIn(want, err)
            # --check says so too, before any start.
            r = subprocess.run([proxylib.PROXY_BIN, "--check",
                                "--policy-dir", W["proxy"].policy_dir,
                                "--control-token-file", path],
                               capture_output=True, text=True, timeout=20)
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertIn(want, r.stderr)


class SecretVolume(unittest.TestCase):

    def test_token_from_a_secret_volume(self):
        """A Kubernetes Secret volume is laid out as a ConfigMap's:
        token -> ..data/token, mode 0440 under fsGroup. The proxy starts
        with it and the token works."""
        vol = ConfigMapDir(os.path.join(W["dir"], "secret-volume"))
        vol.write({"token": W["token"] + "\n"})
        real = os.path.join(vol.path, "..data", "token")
        os.chmod(real, 0o440)
        port = proxylib.free_port()
        start_proxy("secretvol", [
            "--control-socket", os.path.join(W["dir"], "sv.sock"),
            "--control-listen", "127.0.0.1:%d" % port,
            "--control-token-file", os.path.join(vol.path, "token")])
        self.assertEqual(tcp("GET", "/status", W["token"], port=port)[0],
                         200)


class Bounds(unittest.TestCase):
    """A client that never ends its header or body is cut off."""

    def send_until_cut(self, head, chunk, limit):
        """Send head then chunk until the proxy stops taking them; the
        bytes sent and the first bytes of its answer."""
        s = socket.create_connection(("127.0.0.1", W["cport"]), timeout=10)
        sent = 0
        answer = b""
        try:
            s.sendall(head)
            while sent < limit:
                s.sendall(chunk)
                sent += len(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass
        try:
            s.settimeout(5)
            answer = s.recv(200)
        except (ConnectionResetError, socket.timeout):
            pass
        s.close()
        return sent, answer

    def test_endless_header_cut(self):
        sent, answer = self.send_until_cut(
            b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Long: ",
            b"a" * 4096, 64 << 20)
        self.assertLess(sent, 64 << 20, "64 MiB of header were taken")
        self.assertFalse(answer.startswith(b"HTTP/1.1 200"), answer)

    def test_endless_body_cut(self):
        sent, answer = self.send_until_cut(
            ("POST /register HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
             "%s\r\nTransfer-Encoding: chunked\r\n\r\n" % W["token"]).encode(),
            b"1000\r\n" + b"a" * 4096 + b"\r\n", 64 << 20)
        self.assertLess(sent, 64 << 20, "64 MiB of body were taken")
        self.assertFalse(answer.startswith(b"HTTP/1.1 200"), answer)

    def test_slow_header_times_out(self):
        s = socket.create_connection(("127.0.0.1", W["cport"]), timeout=20)
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        t0 = time.monotonic()
        s.settimeout(20)
        try:
            data = s.recv(100)
        except ConnectionResetError:
            data = b""
        s.close()
        self.assertFalse(data.startswith(b"HTTP/1.1 200"), data)
        self.assertLess(time.monotonic() - t0, 19, "never cut off")


def trickle(socks, limit=25.0, every=2.0):
    """Send each socket its next byte every `every` s until the proxy
    closes it or limit passes: the seconds each lived (None: open at the
    limit). socks: [(socket, bytes to trickle)]."""
    t0 = time.monotonic()
    lived = [None] * len(socks)
    pos = [0] * len(socks)
    while time.monotonic() - t0 < limit and None in lived:
        time.sleep(every)
        for i, (s, data) in enumerate(socks):
            if lived[i] is not None:
                continue
            try:
                s.settimeout(0.01)
                if s.recv(4096) == b"":
                    raise ConnectionResetError
            except socket.timeout:
                pass
            except OSError:
                lived[i] = time.monotonic() - t0
                continue
            try:
                s.sendall(data[pos[i]:pos[i] + 1] or b"a")
                pos[i] += 1
            except OSError:
                lived[i] = time.monotonic() - t0
    for s, _ in socks:
        s.close()
    return lived


def status_line(s):
    """The first line of the answer on s, or "closed unanswered"."""
    try:
        data = proxylib.recv_until(s, b"\r\n")
    except OSError:
        data = None
    return data.split(b"\r\n")[0].decode() if data else "closed unanswered"


def closed_by_peer(s):
    """Whether the proxy closed s (it sends nothing else on it)."""
    s.settimeout(0.2)
    try:
        return s.recv(10) == b""
    except socket.timeout:
        return False
    except OSError:
        return True


class Guard(unittest.TestCase):
    """The TCP API's connections: a deadline for each request (and the
    TLS handshake), not an idle timeout; a cap overall and per address;
    no body read without the token. A proxy of its own, so that the
    other tests' refusals do not fill its window of log lines."""

    @classmethod
    def setUpClass(cls):
        cls.port = proxylib.free_port()
        cls.p = start_proxy("guard", [
            "--control-socket", os.path.join(W["dir"], "guard.sock"),
            "--control-listen", "127.0.0.1:%d" % cls.port,
            "--control-token-file", W["tokfile"]])

    def connect(self):
        return socket.create_connection(("127.0.0.1", self.port),
                                        timeout=10)

    def test_trickled_request_cut_at_deadline(self):
        """A head sent a line at a time, and a body (with the token) a
        byte at a time, each byte within the idle timeout: both cut at
        CTLTCP_TIMEOUT_S (10 s) from the accept."""
        head = self.connect()
        head.sendall(b"GET /status HTTP/1.1\r\n")
        body = self.connect()
        body.sendall(("POST /register HTTP/1.1\r\nHost: x\r\nAuthorization:"
                      " Bearer %s\r\nContent-Length: 60000\r\n\r\n" %
                      W["token"]).encode())
        lived = trickle([(head, b"X-A: b\r\n" * 20), (body, b"a" * 60)])
        for what, t in zip(("head", "body"), lived):
            self.assertIsNotNone(t, "a trickled %s is still open after 25 s"
                                 % what)
            self.assertLess(t, 15, "a trickled %s lived %.1f s" % (what, t))

    def test_tls_handshake_cut_at_deadline(self):
        """A TLS ClientHello a byte every 2 s: cut at 10 s."""
        _, cert, key = make_ip_cert(os.path.join(W["dir"], "guardpki"))
        port = proxylib.free_port()
        start_proxy("guardtls", [
            "--control-socket", os.path.join(W["dir"], "guardtls.sock"),
            "--control-listen", "127.0.0.1:%d" % port,
            "--control-token-file", W["tokfile"],
            "--control-tls-cert", cert, "--control-tls-key", key])
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        out = ssl.MemoryBIO()
        so = ctx.wrap_bio(ssl.MemoryBIO(), out)
        with self.assertRaises(ssl.SSLWantReadError):
            so.do_handshake()
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        lived = trickle([(s, out.read())])
        self.assertIsNotNone(lived[0], "a trickled handshake is open at 25 s")
        self.assertLess(lived[0], 15)

    def test_unauthenticated_connection_ends_after_its_answer(self):
        """A client without the token that asks /healthz (or is refused)
        within each deadline held its connection for ever, since every
        answer bought another 10 s: 128 such connections locked the
        controller out. Now it gets one answer and the connection ends;
        a client with the token keeps its connection."""
        for req in (b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n",
                    b"GET /status HTTP/1.1\r\nHost: x\r\n\r\n"):
            s = self.connect()
            s.sendall(req)
            s.settimeout(3)     # well within the 10 s deadline
            got = data = b""
            try:
                while True:
                    data = s.recv(4096)
                    if not data:
                        break
                    got += data
            except socket.timeout:
                data = b"(still open)"
            s.close()
            self.assertTrue(got.startswith(b"HTTP/1.1 "), got[:80])
            self.assertFalse(data, "%r: the connection stayed open after "
                             "the answer %r" % (req[:20], got[:40]))
        s = self.connect()
        for _ in range(2):
            s.sendall(("GET /status HTTP/1.1\r\nHost: x\r\nAuthorization: "
                       "Bearer %s\r\n\r\n" % W["token"]).encode())
            got = s.recv(65536)
            self.assertTrue(got.startswith(b"HTTP/1.1 200"), got[:80])
        s.close()

    def test_body_without_token_is_not_read(self):
        """A head without the token that announces a body: 413 at once,
        before any of the body is sent, and a control.unauthorized
        event."""
        start = self.p.mark()
        s = self.connect()
        s.sendall(b"POST /reload HTTP/1.1\r\nHost: x\r\n"
                  b"Content-Length: 65536\r\n\r\n")
        s.settimeout(3)
        try:
            answer = s.recv(100)
        except socket.timeout:
            answer = b"(no answer in 3 s)"
        s.close()
        self.assertTrue(answer.startswith(b"HTTP/1.1 413"), answer)
        e = self.p.wait_event(lambda e: e["event"] == "control.unauthorized"
                              and e["reason"] == "no bearer token", start)
        self.assertIsNotNone(e, "no control.unauthorized event")
        self.assertEqual(e["path"], "/reload")
        # With the token the same route takes its body.
        status, body, _ = tcp("POST", "/register", token=W["token"], body={
            "address": "127.0.0.9", "sandbox": SBX, "sets": ""},
            port=self.port)
        self.assertEqual(status, 200, body)

    def test_connections_capped_per_address(self):
        """40 idle connections from one address: 32 stay open (each past
        32 takes the place of one of the address's own); once they go,
        the API answers again."""
        socks = [self.connect() for _ in range(40)]
        time.sleep(1)
        closed = sum(map(closed_by_peer, socks))
        for s in socks:
            s.close()
        self.assertEqual(closed, 8, "connections past 32 closed")
        time.sleep(0.5)
        status, _, _ = tcp("GET", "/status", token=W["token"],
                           port=self.port)
        self.assertEqual(status, 200)

    def idle_flood(self, first):
        """128 connections that send nothing, 32 from each of
        127.0.0.first to first + 3."""
        socks = []
        for a in range(4):
            for _ in range(32):
                s = socket.socket()
                s.bind(("127.0.0.%d" % (first + a), 0))
                s.connect(("127.0.0.1", self.port))
                socks.append(s)
        return socks

    def test_idle_connections_do_not_lock_out_the_controller(self):
        """128 connections that send nothing, from 4 addresses (32 each,
        re-opened as they are cut), held every slot: the controller's
        new connection was refused whoever it was. At the cap the oldest
        connection with no token is now closed to admit the new one."""
        socks = self.idle_flood(20)
        try:
            time.sleep(0.5)
            status, _, _ = tcp("GET", "/status", token=W["token"],
                               port=self.port)
            self.assertEqual(status, 200)
        finally:
            for s in socks:
                s.close()
        time.sleep(0.5)

    def test_flood_evicts_its_own_not_the_controllers(self):
        """atk1921d F2: at the cap the oldest unauthenticated connection
        was closed, which under a flood was the controller's, accepted
        before the flood and its head not read yet (or half read). Now
        the victim is one not sending, of the address holding the most:
        the flood's own."""
        def status_of(s, rest):
            s.sendall(rest)
            return status_line(s)
        head = b"GET /status HTTP/1.1\r\nHost: ctl\r\n"
        auth = ("Authorization: Bearer %s\r\nConnection: close\r\n\r\n"
                % W["token"]).encode()
        arriving, idle = self.connect(), self.connect()
        socks = [arriving, idle]
        try:
            arriving.sendall(head)
            time.sleep(0.3)
            socks += self.idle_flood(30)
            time.sleep(0.5)
            self.assertEqual(status_of(arriving, auth), "HTTP/1.1 200 OK")
            self.assertEqual(status_of(idle, head + auth), "HTTP/1.1 200 OK")
        finally:
            for s in socks:
                s.close()
        time.sleep(0.5)

    def bound(self, addr, head=b""):
        s = socket.socket()
        s.settimeout(5)
        s.bind((addr, 0))
        s.connect(("127.0.0.1", self.port))
        if head:
            s.sendall(head)
        return s

    def batch(self, held, after):
        """held connections open (and read) at the cap; the proxy
        stopped; the controller's connection sends its whole request;
        after() opens more; the proxy goes on and takes them all in one
        batch. The first line of the controller's answer."""
        socks = held
        try:
            time.sleep(0.5)
            os.kill(self.p.pid, signal.SIGSTOP)
            try:
                ctl = self.bound("127.0.0.1", (
                    "GET /status HTTP/1.1\r\nHost: ctl\r\nAuthorization: "
                    "Bearer %s\r\nConnection: close\r\n\r\n" %
                    W["token"]).encode())
                socks.append(ctl)
                socks += after()
            finally:
                os.kill(self.p.pid, signal.SIGCONT)
            return status_line(ctl)
        finally:
            for s in socks:
                s.close()
            time.sleep(0.5)

    def test_batch_at_the_cap_admits_the_controller(self):
        """atk1921e F2: a batch's connections were counted before any was
        checked, so at the cap the controller's (its request waiting)
        evicted an idle one and was refused anyway when one more was
        accepted after it. Only checked connections count now."""
        line = self.batch(self.idle_flood(50), lambda: [
            self.bound("127.0.0.60")])
        self.assertEqual(line, "HTTP/1.1 200 OK")

    def test_waiting_token_is_never_the_victim(self):
        """atk1921e F2: 128 flood connections sending heads from 128
        addresses at the cap, 128 more queued after the controller's:
        each new one evicts the oldest sending one, the controller's
        (its request not read yet) once the older are gone. Its waiting
        head carries the token: never the victim. (The listen backlog,
        64 before, must hold the 129 queued.)"""
        head = b"GET /healthz HTTP/1.1\r\n"
        line = self.batch(
            [self.bound("127.0.1.%d" % i, head) for i in range(1, 129)],
            lambda: [self.bound("127.0.2.%d" % i, head)
                     for i in range(1, 129)])
        self.assertEqual(line, "HTTP/1.1 200 OK")

    def test_unchecked_connections_of_the_controllers_address(self):
        """atk1921f F2: 32 connections from the controller's own address
        (loopback, or the NAT or node address it shares) held that
        address's cap, which was checked first and closed none of them
        for a newcomer: every request of the controller was refused while
        they stayed. The cap now counts connections without the token
        only, and at it the new one takes the place of one of the
        address's own, never of one whose request carries the token."""
        req = ("GET /status HTTP/1.1\r\nHost: ctl\r\nAuthorization: Bearer "
               "%s\r\nConnection: close\r\n\r\n" % W["token"]).encode()
        for shape, head in (("idle", b""),
                            ("head begun", b"GET /healthz HTTP/1.1\r\n"),
                            ("bad token", b"GET /status HTTP/1.1\r\n"
                             b"Authorization: Bearer nope\r\n")):
            with self.subTest(shape):
                flood = [self.bound("127.0.0.70", head) for _ in range(32)]
                try:
                    time.sleep(0.5)
                    ctl = self.bound("127.0.0.70", req)
                    self.assertEqual(status_line(ctl), "HTTP/1.1 200 OK")
                    ctl.close()
                    # The flood's own cap holds: one of its 32 went.
                    self.assertEqual(sum(map(closed_by_peer, flood)), 1)
                finally:
                    for s in flood:
                        s.close()
                    time.sleep(0.5)

    def test_burst_of_connections_all_answered(self):
        """The listener rests a turn of the event loop after every 16
        accepts (CTLTCP_ACCEPT_BURST, so that a flood leaves the data
        plane its turn): a batch of 100 queued while the proxy is
        stopped is still all taken and answered."""
        socks = []
        os.kill(self.p.pid, signal.SIGSTOP)
        try:
            socks = [self.bound("127.0.5.%d" % i, b"GET /healthz HTTP/1.1"
                                b"\r\nHost: x\r\n\r\n") for i in range(1, 101)]
        finally:
            os.kill(self.p.pid, signal.SIGCONT)
        try:
            lines = [status_line(s) for s in socks]
            self.assertEqual(lines, ["HTTP/1.1 200 OK"] * len(socks))
        finally:
            for s in socks:
                s.close()
            time.sleep(0.5)

    def test_control_listener_backlog(self):
        """atk1921e F2: the control listener's accept queue was 64 deep,
        so a flood dropped the controller's SYNs; now SOMAXCONN-sized."""
        if shutil.which("ss") is None:
            self.skipTest("no ss")
        with open("/proc/sys/net/core/somaxconn") as f:
            somax = int(f.read())
        out = subprocess.run(["ss", "-ltnH", "sport = :%d" % self.port],
                             capture_output=True, text=True).stdout
        self.assertEqual(int(out.split()[2]), min(somax, 4096), out)


class GuardTLS(unittest.TestCase):
    """The caps over TLS (--control-tls-cert), where no token can be seen
    before the handshake ends. A proxy of its own."""

    @classmethod
    def setUpClass(cls):
        cls.ca, cert, key = make_ip_cert(os.path.join(W["dir"], "gtlspki"))
        cls.port = proxylib.free_port()
        cls.p = start_proxy("gtls", [
            "--control-socket", os.path.join(W["dir"], "gtls.sock"),
            "--control-listen", "127.0.0.1:%d" % cls.port,
            "--control-token-file", W["tokfile"],
            "--control-tls-cert", cert, "--control-tls-key", key])
        cls.hello = cls.client_hello(ssl.create_default_context())[1]

    @staticmethod
    def client_hello(ctx):
        """(TLS client object, its ClientHello) over memory BIOs."""
        into, out = ssl.MemoryBIO(), ssl.MemoryBIO()
        tls = ctx.wrap_bio(into, out, server_hostname="127.0.0.1")
        try:
            tls.do_handshake()
        except ssl.SSLWantReadError:
            pass
        return (tls, into, out), out.read()

    def sent_hello(self, addr, hello=None):
        s = socket.socket()
        s.settimeout(10)
        s.bind((addr, 0))
        s.connect(("127.0.0.1", self.port))
        s.sendall(hello or self.hello)
        return s

    @staticmethod
    def finish(s, tls, request):
        """Go on with a handshake whose ClientHello s sent, send request:
        the first line of the answer, or how it failed."""
        obj, into, out = tls
        try:
            while True:
                try:
                    obj.do_handshake()
                    break
                except ssl.SSLWantReadError:
                    s.sendall(out.read())
                    data = s.recv(65536)
                    if not data:
                        return "closed in the handshake"
                    into.write(data)
            obj.write(request)
            s.sendall(out.read())
            got = b""
            while b"\r\n" not in got:
                try:
                    got += obj.read(4096)
                except ssl.SSLWantReadError:
                    data = s.recv(65536)
                    if not data:
                        return "closed unanswered"
                    into.write(data)
            return got.split(b"\r\n")[0].decode()
        except (OSError, ssl.SSLError) as e:
            return "failed: %r" % e

    def test_handshake_under_way_outlives_a_flood_of_stalled_ones(self):
        """atk1921f F6: 128 connections that sent a ClientHello and
        stalled at the cap, the proxy stopped, the controller's
        connection sends its ClientHello, 129 more ClientHellos queue
        after it: at the cap each new one closed the oldest connection
        with a handshake under way, the controller's once the 128 older
        were gone. Now the stalled go first, and one whose bytes wait
        unread is never closed for a newcomer that shows no token (the
        newcomer is refused)."""
        ctx = ssl.create_default_context(cafile=self.ca)
        req = ("GET /status HTTP/1.1\r\nHost: ctl\r\nAuthorization: Bearer "
               "%s\r\nConnection: close\r\n\r\n" % W["token"]).encode()
        socks = [self.sent_hello("127.0.3.%d" % i) for i in range(1, 129)]
        try:
            time.sleep(1)
            os.kill(self.p.pid, signal.SIGSTOP)
            try:
                tls, hello = self.client_hello(ctx)
                ctl = self.sent_hello("127.0.0.1", hello)
                socks.append(ctl)
                socks += [self.sent_hello("127.0.4.%d" % i)
                          for i in range(1, 130)]
            finally:
                os.kill(self.p.pid, signal.SIGCONT)
            self.assertEqual(self.finish(ctl, tls, req), "HTTP/1.1 200 OK")
        finally:
            for s in socks:
                s.close()
            time.sleep(0.5)


# ------------------------------------------------------- ConfigMap swap

POLICY = """\
description: configmap test ({tag})
allow:
  - host: {host}
    ports: [80]
    rationale: the {tag} version of the ConfigMap
"""


class ConfigMapDir:
    """A folder laid out and updated as the kubelet's atomic writer does
    (k8s.io/kubernetes pkg/volume/util/atomic_writer.go): files in a
    timestamped ..YYYY_MM_DD_HH_MM_SS.N folder, ..data -> it, each
    NAME -> ..data/NAME; an update writes a new timestamped folder, links
    ..data_tmp to it, renames ..data_tmp over ..data and removes the old
    folder."""

    def __init__(self, path):
        self.path = path
        self.n = 0
        os.makedirs(path)

    def _stamp(self):
        self.n += 1
        return time.strftime("..%Y_%m_%d_%H_%M_%S.", time.gmtime()) + \
            "%09d" % self.n

    def write(self, files):
        stamp = self._stamp()
        ts = os.path.join(self.path, stamp)
        os.mkdir(ts)
        for name, text in files.items():
            with open(os.path.join(ts, name), "w") as f:
                f.write(text)
        data = os.path.join(self.path, "..data")
        old = os.readlink(data) if os.path.islink(data) else None
        tmp = os.path.join(self.path, "..data_tmp")
        os.symlink(stamp, tmp)
        os.rename(tmp, data)
        for name in files:
            link = os.path.join(self.path, name)
            if not os.path.islink(link):
                os.symlink(os.path.join("..data", name), link)
        for name in os.listdir(self.path):
            if not name.startswith("..") and name not in files:
                os.unlink(os.path.join(self.path, name))
        if old is not None:
            shutil.rmtree(os.path.join(self.path, old))


class ConfigMap(unittest.TestCase):

    def test_swap_reloads_and_broken_version_is_refused(self):
        cm = ConfigMapDir(os.path.join(W["dir"], "cm"))
        cm.write({"test.yaml": POLICY.format(tag="first",
                                             host="first.test")})
        sock = os.path.join(W["dir"], "cm.sock")
        p = start_proxy("cmproxy", ["--control-socket", sock],
                        policy_dir=cm.path)
        self.assertIn("watching %s for policy changes" % cm.path,
                      p.stderr())
        _, st = proxylib.control(sock, "GET", "/status")
        first = st["policy_digest"]
        start = p.mark()
        cm.write({"test.yaml": POLICY.format(tag="second",
                                             host="second.test")})
        e = p.wait_event(lambda e: e["event"] == "policy.reloaded", start)
        self.assertIsNotNone(e, "no reload without a signal; stderr:\n%s"
                             % p.stderr()[-2000:])
        second = e["policy_digest"]
        self.assertNotEqual(second, first)
        _, st = proxylib.control(sock, "GET", "/status")
        self.assertEqual(st["policy_digest"], second)
        # The next event names the new digest.
        start = p.mark()
        c = proxylib.RawConn(p.port)
        c.send(get_request("http://first.test/", "first.test",
                           "Connection: close\r\n"))
        self.assertEqual(c.read_response().status, 403)
        c.close()
        e = p.wait_event(lambda e: e["event"] == "egress.blocked", start)
        self.assertEqual(e["policy_digest"], second)
        # A broken version: refused, the second stays in force.
        start = p.mark()
        cm.write({"test.yaml": "allow:\n  - host: [broken\n"})
        e = p.wait_event(lambda e: e["event"] in ("policy.rejected",
                                                  "policy.reloaded"), start)
        self.assertIsNotNone(e, "the broken version went unnoticed")
        self.assertEqual(e["event"], "policy.rejected")
        self.assertEqual(e["policy_digest"], second)
        _, st = proxylib.control(sock, "GET", "/status")
        self.assertEqual(st["policy_digest"], second)
        self.assertIn("refused after the change", p.stderr())

    def test_file_dropped_from_the_configmap(self):
        """A file the update drops: its link goes after the swap; the
        policy in force at the end is the new version's, not the old one
        kept because the reload saw a dangling link."""
        cm = ConfigMapDir(os.path.join(W["dir"], "cm3"))
        both = {"a.yaml": POLICY.format(tag="a", host="a.test"),
                "b.yaml": POLICY.format(tag="b", host="b.test")}
        cm.write(both)
        sock = os.path.join(W["dir"], "cm3.sock")
        p = start_proxy("cmproxy3", ["--control-socket", sock],
                        policy_dir=cm.path)
        only_a = {"a.yaml": both["a.yaml"]}
        plain = os.path.join(W["dir"], "plain-a")
        os.makedirs(plain)
        with open(os.path.join(plain, "a.yaml"), "w") as f:
            f.write(only_a["a.yaml"])
        r = subprocess.run([proxylib.PROXY_BIN, "--check", "--policy-dir",
                            plain], capture_output=True, text=True,
                           timeout=20)
        want = r.stdout.rsplit(" ", 1)[-1].strip()
        self.assertEqual(len(want), 64, r.stdout + r.stderr)
        cm.write(only_a)
        deadline = time.monotonic() + 5
        while True:
            _, st = proxylib.control(sock, "GET", "/status")
            if st["policy_digest"] == want:
                break
            self.assertLess(time.monotonic(), deadline,
                            "the policy without b.yaml never came in "
                            "force; stderr:\n%s" % p.stderr()[-1500:])
            time.sleep(0.1)

    def test_burst_of_swaps_is_one_reload(self):
        """Debounce: swaps close together make one reload, of the last."""
        cm = ConfigMapDir(os.path.join(W["dir"], "cm2"))
        cm.write({"test.yaml": POLICY.format(tag="v0", host="v0.test")})
        sock = os.path.join(W["dir"], "cm2.sock")
        p = start_proxy("cmproxy2", ["--control-socket", sock],
                        policy_dir=cm.path)
        start = p.mark()
        for i in range(1, 6):
            cm.write({"test.yaml": POLICY.format(tag="v%d" % i,
                                                 host="v%d.test" % i)})
        e = p.wait_event(lambda e: e["event"] == "policy.reloaded", start)
        self.assertIsNotNone(e)
        time.sleep(1)
        reloads = [e for e in p.events()[start:]
                   if e["event"] == "policy.reloaded"]
        self.assertEqual(len(reloads), 1, reloads)
        _, st = proxylib.control(sock, "GET", "/status")
        self.assertEqual(st["policy_digest"], reloads[0]["policy_digest"])


def main():
    return proxylib.run_tests(sys.modules[__name__])


if __name__ == "__main__":
    sys.exit(main())
