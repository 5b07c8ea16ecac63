#!/usr/bin/env python3
"""Signed sandbox tokens in sandgate-proxy (docs/proxy.md, "Sandbox tokens").

A replica started with --token-key accepts a request whose Proxy-
Authorization carries a token signed by that key, unexpired, naming the
sandbox the client's address is registered to, or, with
--token-any-source, from an address no sandbox registered. Forged,
expired, malformed and other sandboxes' tokens are refused with their own
reason codes, each an egress.blocked event. The exec credential of
POST /execs keeps working beside it.

The tokens are made here from the layout docs/proxy.md gives (python's
cryptography for Ed25519), so the test also checks that the layout is the
one the proxy reads; the proxy's own signer is checked by
tests/unit/test_token.c.

Run: python3 tests/integration/test_proxy_token.py [-v]
Env: SANDGATE_BIN, SANDGATE_SRC, SANDGATE_KEEP=1 as test_proxy.py.
"""

import base64
import hashlib
import os
import socket
import struct
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proxylib  # noqa: E402

try:
    from cryptography.hazmat.primitives import serialization
except ImportError:  # pragma: no cover
    serialization = None

W = {}


def make_key(folder, name):
    """An Ed25519 key pair made by the openssl CLI: (private key, pub path)."""
    priv = os.path.join(folder, name + ".pem")
    pub = os.path.join(folder, name + ".pub")
    subprocess.run(["openssl", "genpkey", "-algorithm", "ed25519", "-out",
                    priv], check=True, capture_output=True)
    subprocess.run(["openssl", "pkey", "-in", priv, "-pubout", "-out", pub],
                   check=True, capture_output=True)
    with open(priv, "rb") as f:
        key = serialization.load_pem_private_key(f.read(), None)
    return key, pub


def sandgate(*args):
    """`sandgate ARGS` with the test's state folder."""
    return subprocess.run([os.path.join(proxylib.BIN, "sandgate")] +
                          list(args), capture_output=True, text=True,
                          env=proxylib.clean_env({"SANDGATE_STATE":
                                                  W["state"]}))


def controller_key():
    """The token key `sandgate proxy token` makes (as proxy start does):
    (private key, public key path)."""
    W["state"] = os.path.join(W["dir"], "state")
    r = sandgate("proxy", "token", "sbx_init")
    if r.returncode != 0:
        raise AssertionError("sandgate proxy token: %s" % r.stderr)
    path = os.path.join(W["state"], "keys", "token.key")
    if os.stat(path).st_mode & 0o077:
        raise AssertionError("%s is readable by others" % path)
    with open(path, "rb") as f:
        key = serialization.load_pem_private_key(f.read(), None)
    return key, path + ".pub"


def token(key, sandbox, run="", sets="test", issued=None, ttl=600,
          signer=None):
    """sgt1.base64url(body || sig), body as docs/proxy.md lays it out."""
    issued = int(time.time()) if issued is None else issued
    raw = key.public_key().public_bytes(serialization.Encoding.Raw,
                                        serialization.PublicFormat.Raw)
    body = bytes([1]) + hashlib.sha256(raw).digest()[:8]
    body += struct.pack(">QQ", issued, issued + ttl)
    body += hashlib.sha256(b"").digest()[:16]
    for s in (sandbox, run, sets):
        body += bytes([len(s)]) + s.encode()
    sig = (signer or key).sign(b"sandgate-token-v1\n" + body)
    return "sgt1." + base64.urlsafe_b64encode(body + sig).decode().rstrip("=")


def get(proxy, password, src="127.0.0.1", host="allowed.test"):
    """(status, body) of a GET through proxy from src with password."""
    auth = base64.b64encode(b"sandgate:" + password.encode()).decode() \
        if password else None
    req = ("GET http://%s:%d/t HTTP/1.1\r\nHost: %s:%d\r\n"
           % (host, W["up"].http_port, host, W["up"].http_port))
    if auth:
        req += "Proxy-Authorization: Basic %s\r\n" % auth
    req += "Connection: close\r\n\r\n"
    with socket.create_connection(("127.0.0.1", proxy.port), timeout=10,
                                  source_address=(src, 0)) as s:
        s.sendall(req.encode())
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    status = int(data.split(b" ", 2)[1])
    return status, data.split(b"\r\n\r\n", 1)[-1].decode("utf-8", "replace")


def exec_begins(sandbox, run):
    """Tell W["any"] that run is an exec of sandbox (POST /execs), as the
    controller does before handing out a token naming it."""
    st, body = proxylib.control(W["sock"], "POST", "/execs", {
        "token": hashlib.sha256(run.encode()).hexdigest()[:32],
        "sandbox": sandbox, "run_id": run})
    if st != 200:
        raise AssertionError("POST /execs: %r" % (body,))


def setUpModule():
    if serialization is None:
        raise unittest.SkipTest("python3-cryptography is not installed")
    for k in proxylib.PROXY_ENV:
        os.environ.pop(k, None)
    W["dir"] = tempfile.mkdtemp(prefix="sg-tokentest-")
    W["proxies"] = []
    try:
        W["up"] = proxylib.Upstreams(W["dir"]).start()
        W["key"], W["pub"] = controller_key()
        W["old"], W["old_pub"] = make_key(W["dir"], "token-old")
        W["evil"], _ = make_key(W["dir"], "evil")
        W["sock"] = os.path.join(W["dir"], "control.sock")
        W["any"] = start("any", ["--token-key", W["old_pub"], "--token-key",
                                 W["pub"], "--token-any-source",
                                 "--log-allowed", "--control-socket",
                                 W["sock"]])
        W["bound"] = start("bound", ["--token-key", W["pub"]])
    except BaseException:
        tearDownModule()
        raise


def start(name, args):
    p = proxylib.Proxy(W["dir"], W["up"], sets="", extra_args=args,
                       name=name)
    W["proxies"].append(p)
    return p.start()


def tearDownModule():
    proxylib.teardown(W, W.get("proxies", []))


class TokenTest(unittest.TestCase):
    def blocked(self, proxy, password, reason, src="127.0.0.1"):
        """The request is refused with 403 and an egress.blocked event
        with reason; that event."""
        mark = proxy.mark()
        status, body = get(proxy, password, src)
        self.assertEqual(status, 403, body)
        self.assertIn("not allowlisted" if reason == "not_allowlisted"
                      else "(%s: " % reason, body)
        ev = proxy.wait_event(lambda e: e.get("event") == "egress.blocked",
                              mark)
        self.assertIsNotNone(ev, "no egress.blocked event for " + reason)
        self.assertEqual(ev["reason"], reason, ev)
        return ev

    def test_valid_token_from_unregistered_source(self):
        p = W["any"]
        exec_begins("sbx_a", "run_1")
        mark = p.mark()
        status, body = get(p, token(W["key"], "sbx_a", run="run_1"))
        self.assertEqual(status, 200, body)
        ev = p.wait_event(lambda e: e.get("event") == "egress.allowed",
                          mark)
        self.assertEqual((ev["sandbox"], ev.get("run_id"),
                          ev["policy_sets"]), ("sbx_a", "run_1", ["test"]))

    def test_curl_carries_the_token_in_the_proxy_url(self):
        tok = token(W["key"], "sbx_a", run="run_curl")
        exec_begins("sbx_a", "run_curl")
        r = proxylib.run(["curl", "-sS", "-o", "/dev/null", "-w",
                          "%{http_code}", "-x", "http://sandgate:%s@127.0.0.1:"
                          "%d" % (tok, W["any"].port),
                          "http://allowed.test:%d/c" % W["up"].http_port])
        self.assertEqual(r.stdout, "200", r.stderr)

    def test_controller_issued_token(self):
        r = sandgate("proxy", "token", "--run", "run_cli", "--sets", "test",
                     "--ttl", "120", "sbx_cli")
        self.assertEqual(r.returncode, 0, r.stderr)
        tok = r.stdout.strip()
        p = W["any"]
        exec_begins("sbx_cli", "run_cli")
        mark = p.mark()
        status, body = get(p, tok)
        self.assertEqual(status, 200, body)
        ev = p.wait_event(lambda e: e.get("event") == "egress.allowed",
                          mark)
        self.assertEqual((ev["sandbox"], ev.get("run_id")),
                         ("sbx_cli", "run_cli"))
        r = sandgate("proxy", "token", "--ttl", "99999999", "sbx_cli")
        self.assertEqual(r.returncode, 2, r.stderr)

    def test_rotation_old_key_still_accepted(self):
        status, body = get(W["any"], token(W["old"], "sbx_a"))
        self.assertEqual(status, 200, body)

    def test_unregistered_without_token_stays_blocked(self):
        self.blocked(W["any"], None, "not_allowlisted")
        # An exec credential is no identity either.
        self.blocked(W["any"], "0123456789abcdef" * 2, "not_allowlisted")

    def test_forged(self):
        self.blocked(W["any"], token(W["key"], "sbx_a", signer=W["evil"]),
                     "token_forged")
        self.blocked(W["any"], token(W["evil"], "sbx_a"), "token_forged")
        # One changed letter of the sandbox id, the signature kept.
        tok = token(W["key"], "sbx_a")
        raw = bytearray(base64.urlsafe_b64decode(tok[5:] + "=="))
        raw[42] ^= 0x02  # "sbx_a" -> "qbx_a"
        bad = "sgt1." + base64.urlsafe_b64encode(bytes(raw)).decode() \
            .rstrip("=")
        ev = self.blocked(W["any"], bad, "token_forged")
        self.assertIn("signature does not verify", ev["message"])

    def test_expired(self):
        ev = self.blocked(W["any"], token(W["key"], "sbx_a",
                                          issued=int(time.time()) - 700),
                          "token_expired")
        self.assertIn("expired", ev["message"])
        self.blocked(W["any"], token(W["key"], "sbx_a",
                                     issued=int(time.time()) + 3600),
                     "token_expired")

    def test_malformed(self):
        tok = token(W["key"], "sbx_a")
        for bad in ("sgt1.", "sgt1.AAAA", tok[:-5], tok + "AAAA",
                    tok[:20] + "!" + tok[21:]):
            self.blocked(W["any"], bad, "token_malformed")

    def test_other_sandbox(self):
        st, body = proxylib.control(W["sock"], "POST", "/register", {
            "address": "127.0.0.2", "sandbox": "sbx_b", "sets": "test"})
        self.assertEqual(st, 200, body)
        ev = self.blocked(W["any"], token(W["key"], "sbx_a"),
                          "token_other_sandbox", src="127.0.0.2")
        self.assertEqual(ev["sandbox"], "sbx_b")
        self.assertIn("token of sandbox sbx_a", ev["message"])
        status, body = get(W["any"], token(W["key"], "sbx_b"),
                           src="127.0.0.2")
        self.assertEqual(status, 200, body)
        # The exec credential path beside it: attribution as before.
        cred = "ab" * 16
        st, body = proxylib.control(W["sock"], "POST", "/execs", {
            "token": cred, "sandbox": "sbx_b", "run_id": "run_hex"})
        self.assertEqual(st, 200, body)
        mark = W["any"].mark()
        status, body = get(W["any"], cred, src="127.0.0.2")
        self.assertEqual(status, 200, body)
        ev = W["any"].wait_event(
            lambda e: e.get("event") == "egress.allowed", mark)
        self.assertEqual((ev["sandbox"], ev.get("run_id")),
                         ("sbx_b", "run_hex"))

    def test_run_of_a_token_counts_while_it_runs(self):
        """From an address registered here, a token's run id names the
        request only while that exec runs: after /execs/end its requests
        are the sandbox's alone."""
        st, body = proxylib.control(W["sock"], "POST", "/register", {
            "address": "127.0.0.3", "sandbox": "sbx_c", "sets": "test"})
        self.assertEqual(st, 200, body)
        st, body = proxylib.control(W["sock"], "POST", "/execs", {
            "token": "cd" * 16, "sandbox": "sbx_c", "run_id": "run_tok"})
        self.assertEqual(st, 200, body)
        tok = token(W["key"], "sbx_c", run="run_tok")
        for ended in (False, True):
            if ended:
                st, body = proxylib.control(W["sock"], "POST",
                                            "/execs/end",
                                            {"run_id": "run_tok"})
                self.assertEqual(body["removed"], 1, body)
            mark = W["any"].mark()
            status, body = get(W["any"], tok, src="127.0.0.3")
            self.assertEqual(status, 200, body)
            ev = W["any"].wait_event(
                lambda e: e.get("event") == "egress.allowed", mark)
            self.assertEqual((ev["sandbox"], ev.get("run_id")),
                             ("sbx_c", None if ended else "run_tok"))

    def test_ended_run_of_a_token_from_any_source_is_refused(self):
        """From an address no sandbox registered, a token naming a run
        passes only while the proxy has that exec running: after
        /execs/end (or for a run it was never told of) it is refused
        with token_run_ended, not taken as the sandbox's (whose
        grants for that run would still let it through)."""
        st, body = proxylib.control(W["sock"], "POST", "/execs", {
            "token": "ef" * 16, "sandbox": "sbx_e", "run_id": "run_end"})
        self.assertEqual(st, 200, body)
        tok = token(W["key"], "sbx_e", run="run_end")
        mark = W["any"].mark()
        status, body = get(W["any"], tok)
        self.assertEqual(status, 200, body)
        ev = W["any"].wait_event(
            lambda e: e.get("event") == "egress.allowed", mark)
        self.assertEqual((ev["sandbox"], ev.get("run_id")),
                         ("sbx_e", "run_end"))
        st, body = proxylib.control(W["sock"], "POST", "/execs/end",
                                    {"run_id": "run_end"})
        self.assertEqual(body["removed"], 1, body)
        ev = self.blocked(W["any"], tok, "token_run_ended")
        self.assertEqual((ev["sandbox"], ev.get("run_id")), (None, None),
                         ev)
        self.assertIn("run run_end of sandbox sbx_e", ev["message"])
        ev = self.blocked(W["any"], token(W["key"], "sbx_e", run="run_never"),
                          "token_run_ended")
        self.assertIn("run run_never", ev["message"])
        # A token naming no run is the sandbox's, as before.
        status, body = get(W["any"], token(W["key"], "sbx_e"))
        self.assertEqual(status, 200, body)

    def test_source_bound_without_any_source_flag(self):
        ev = self.blocked(W["bound"], token(W["key"], "sbx_a"),
                          "token_other_sandbox")
        self.assertIn("registered to no sandbox", ev["message"])


class TokenConfigTest(unittest.TestCase):
    def check(self, *args):
        return subprocess.run([proxylib.PROXY_BIN, "--check", "--policy-dir",
                               W["any"].policy_dir] + list(args),
                              capture_output=True, text=True)

    def test_bad_keys_are_configuration_errors(self):
        junk = os.path.join(W["dir"], "junk.pub")
        with open(junk, "w") as f:
            f.write("not a key\n")
        r = self.check("--token-key", junk)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("--token-key", r.stderr)
        r = self.check("--token-any-source")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("needs --token-key", r.stderr)
        r = self.check("--token-key", W["pub"], "--token-key", W["pub"])
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("the same token key twice", r.stderr)
        r = self.check("--token-key", W["pub"])
        self.assertEqual(r.returncode, 0, r.stderr)


if __name__ == "__main__":
    unittest.main()
