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
import json
import os
import re
import shutil
import signal
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

    def test_unregistered_sandbox_token_is_refused(self):
        """atk1921e F1: /unregister closed a runless token's connections
        but the same token reconnected at once as the removed sandbox
        until it expired. A token issued at or before the unregister is
        now refused (token_sandbox_gone), also after a restart; one
        issued after it, or any once the sandbox registers again,
        passes.

        atk1921f F5: "issued" is the controller's clock, the removal
        time the replica's; a token may be issued up to TOKEN_SKEW (60 s)
        ahead of the replica's clock, and one issued 59 s "ahead" just
        before the unregister passed after it. Every token issued until
        60 s after the removal is now refused too."""
        old = token(W["key"], "sbx_u", issued=int(time.time()) - 5)
        ahead = token(W["key"], "sbx_u", issued=int(time.time()) + 59)
        for t in (old, ahead):
            status, body = get(W["any"], t)
            self.assertEqual(status, 200, body)
        st, body = proxylib.control(W["sock"], "POST", "/unregister",
                                    {"sandbox": "sbx_u"})
        self.assertEqual(st, 200, body)
        ev = self.blocked(W["any"], old, "token_sandbox_gone")
        self.assertIn("sandbox sbx_u", ev["message"])
        self.blocked(W["any"], ahead, "token_sandbox_gone")
        W["any"].stop()
        W["any"].start()
        proxylib.wait_unix_socket(W["sock"])
        self.blocked(W["any"], old, "token_sandbox_gone")
        self.blocked(W["any"], ahead, "token_sandbox_gone")
        st, body = proxylib.control(W["sock"], "POST", "/register", {
            "address": "127.0.0.77", "sandbox": "sbx_u", "sets": "test"})
        self.assertEqual(st, 200, body)
        for t in (old, ahead):
            status, body = get(W["any"], t)
            self.assertEqual(status, 200, body)

    def test_unregistered_sandbox_token_is_refused_whatever_its_time(self):
        """atk1921g F3: the removal time is this replica's clock and a
        token's "issued" the controller's, compared within TOKEN_SKEW: on
        a replica whose clock is behind by more than 60 s, a token issued
        just before the discard (issued past gone + 60 on this clock) was
        let through once this clock reached issued - 60. The controller
        issues no token for a removed sandbox before it registers it
        again (which forgets the removal), so every token of a sandbox
        that is gone is refused, whatever its "issued"."""
        issued = int(time.time()) + 64   # a controller 64 s ahead
        ahead = token(W["key"], "sbx_k", issued=issued)
        st, body = proxylib.control(W["sock"], "POST", "/unregister",
                                    {"sandbox": "sbx_k"})
        self.assertEqual(st, 200, body)
        # this clock reaches issued - 60: the token is valid here now
        while time.time() < issued - 59:   # not a timing assertion
            time.sleep(0.2)
        self.blocked(W["any"], ahead, "token_sandbox_gone")
        st, body = proxylib.control(W["sock"], "POST", "/register", {
            "address": "127.0.0.78", "sandbox": "sbx_k", "sets": "test"})
        self.assertEqual(st, 200, body)
        status, body = get(W["any"], ahead)
        self.assertEqual(status, 200, body)

    def test_source_bound_without_any_source_flag(self):
        ev = self.blocked(W["bound"], token(W["key"], "sbx_a"),
                          "token_other_sandbox")
        self.assertIn("registered to no sandbox", ev["message"])


class GoneEntryLastsTest(unittest.TestCase):
    """atk1921h F7: a replica aged its list of removed sandboxes out by
    its own clock (TOKEN_TTL_MAX + 2 x TOKEN_SKEW past the removal there),
    while a token's expiry is the controller's clock: with the controller
    ahead, a long token of a removed sandbox passed once its entry was
    aged out. An entry is now kept from the latest of the removal's time,
    the controller's clock sent with the unregister ("issued_before") and
    the "issued" of every token of it refused since."""

    SBX = "sbx_90e90e000000000000000001"
    TTL = 30 * 24 * 3600

    def start(self, gone, env=None, files=None, fifos=(), sandboxes=(),
              dirs=(), crash=None):
        """files: suffix of registry.json ("" for itself) -> its text;
        fifos: suffixes where a FIFO is planted instead; dirs: where a
        directory that is not empty is (no file is saved there); crash:
        SANDGATE_TEST_CRASH, the proxy killed there while it starts."""
        d = tempfile.mkdtemp(prefix="gone-", dir=W["dir"])
        run = os.path.join(d, "run")
        os.makedirs(run)
        self.sock = os.path.join(run, "control.sock")
        self.registry = os.path.join(run, "registry.json")
        with open(self.registry, "w") as f:
            json.dump({"sandboxes": list(sandboxes), "unregistered": gone},
                      f)
        for suffix, text in (files or {}).items():
            with open(self.registry + suffix, "w") as f:
                f.write(text)
        for suffix in fifos:
            if os.path.exists(self.registry + suffix):
                os.unlink(self.registry + suffix)
            os.mkfifo(self.registry + suffix)
        for suffix in dirs:
            os.makedirs(os.path.join(self.registry + suffix, "x"))
        if crash:
            env = dict(env or {}, SANDGATE_TEST_CRASH=crash)
        p = proxylib.Proxy(d, W["up"], sets="", name="gone", extra_args=[
            "--control-socket", self.sock, "--token-key", W["pub"],
            "--token-any-source"], env=env)
        self.addCleanup(p.stop)
        if crash:
            return self.killed(p)
        p.start()
        proxylib.wait_unix_socket(self.sock)
        return p

    def killed(self, p):
        """p started, killed at its crash point (SIGKILL) before it
        listens."""
        with self.assertRaises(proxylib.ProxyError):
            p.start()
        self.assertEqual(p.proc.wait(), -signal.SIGKILL, p.stderr())
        p.env.pop("SANDGATE_TEST_CRASH", None)
        return p

    def unregister(self, sandbox, **extra):
        body = {"sandbox": sandbox}
        body.update(extra)
        st, body = proxylib.control(self.sock, "POST", "/unregister", body)
        self.assertEqual(st, 200, body)
        # their own file, written when they change (atk15r16 F6)
        with open(self.registry + ".gone") as f:
            return json.load(f)["unregistered"]

    def test_a_refused_token_keeps_its_entry(self):
        """b4: the removal 30 days and 200 s ago here, a 30-day token
        minted just before it by a controller 1 h ahead."""
        gone = int(time.time()) - self.TTL - 200
        p = self.start({self.SBX: gone})
        tok = token(W["key"], self.SBX, issued=gone + 3600, ttl=self.TTL)
        status, body = get(p, tok)
        self.assertEqual(status, 403, body)
        self.assertIn("token_sandbox_gone", body)
        # another unregister ages the list out by this clock
        self.assertIn(self.SBX, self.unregister("sbx_90e90e000000000000000002"))
        status, body = get(p, tok)
        self.assertEqual(status, 403, body)
        self.assertIn("token_sandbox_gone", body)

    def test_the_controllers_clock_keeps_the_entry(self):
        p = self.start({})
        ahead = int(time.time()) + 3600
        gone = self.unregister(self.SBX, issued_before=ahead)
        self.assertGreaterEqual(gone[self.SBX], ahead)
        # a token minted then: refused
        tok = token(W["key"], self.SBX, issued=ahead - 1, ttl=self.TTL)
        status, body = get(p, tok)
        self.assertEqual(status, 403, body)

    def restart(self, p):
        p.stop()
        p.start()
        proxylib.wait_unix_socket(self.sock)

    def test_a_kept_entry_survives_a_restart(self):
        """atk1921i F4: the later time a refused token gave an entry was
        kept in memory only; after a restart the entry aged out at the
        next unregister and the same token passed."""
        gone = int(time.time()) - self.TTL - 200
        p = self.start({self.SBX: gone})
        tok = token(W["key"], self.SBX, issued=gone + 3600, ttl=self.TTL)
        status, body = get(p, tok)
        self.assertEqual(status, 403, body)
        for _ in range(50):         # saved by the next tick
            try:
                with open(self.registry + ".gone") as f:
                    if json.load(f)["unregistered"].get(self.SBX) == \
                            gone + 3600:
                        break
            except FileNotFoundError:
                pass
            time.sleep(0.1)
        self.restart(p)
        self.unregister("sbx_90e90e000000000000000002")
        status, body = get(p, tok)
        self.assertEqual(status, 403, body)
        self.assertIn("token_sandbox_gone", body)

    def test_a_clock_ahead_prunes_nothing(self):
        """atk1921i F2: an unregister whose issued_before was 40 days
        ahead (a controller's clock wrong for a moment) made the next
        start prune every entry older than that time less 30 days: a
        removed sandbox's token passed. Entries are aged by this
        replica's clock alone."""
        p = self.start({})
        now = int(time.time())
        self.unregister(self.SBX, issued_before=now)
        tok = token(W["key"], self.SBX, issued=now - 10, ttl=24 * 3600)
        self.assertEqual(get(p, tok)[0], 403)
        gone = self.unregister("sbx_90e90e000000000000000003",
                               issued_before=now + 40 * 24 * 3600)
        self.assertIn(self.SBX, gone)
        self.restart(p)
        status, body = get(p, tok)
        self.assertEqual(status, 403, body)
        self.assertIn("token_sandbox_gone", body)

    def test_a_replica_clock_ahead_for_a_while_forgets_nothing(self):
        """atk1921j F2: this replica's own wall clock 40 days ahead for a
        moment (a bad RTC, a VM restored from a snapshot) made the next
        unregister, or a start, drop every removed sandbox by age, with
        no floor, and saved that: once the clock was right again the
        discarded sandbox's token passed. Entries now age by the wall
        clock only as far as CLOCK_BOOTTIME agrees (the shim shifts the
        wall clock alone)."""
        import test_grants_clock as gc   # its clock shim
        shim_c = os.path.join(W["dir"], "clockshift.c")
        shim = os.path.join(W["dir"], "clockshift.so")
        with open(shim_c, "w") as f:
            f.write(gc.SHIM)
        subprocess.run(["cc", "-shared", "-fPIC", "-o", shim, shim_c,
                        "-ldl"], check=True)
        shift = os.path.join(W["dir"], "clockshift")

        def set_shift(secs):
            with open(shift + ".tmp", "w") as f:
                f.write("%d\n" % secs)
            os.replace(shift + ".tmp", shift)

        set_shift(0)
        asan = os.environ.get("ASAN_OPTIONS", "")
        p = self.start({}, env={
            "LD_PRELOAD": shim, "SG_TEST_CLOCK_SHIFT": shift,
            "ASAN_OPTIONS": (asan + ":" if asan else "") +
            "verify_asan_link_order=0"})
        now = int(time.time())
        self.unregister(self.SBX, issued_before=now)
        tok = token(W["key"], self.SBX, issued=now - 10, ttl=7 * 86400)
        self.assertEqual(get(p, tok)[0], 403)
        set_shift(40 * 86400)       # ahead: another discard arrives
        self.unregister("sbx_90e90e000000000000000004", issued_before=now)
        set_shift(0)
        status, body = get(p, tok)
        self.assertEqual(status, 403, body)
        self.assertIn("token_sandbox_gone", body)
        set_shift(40 * 86400)       # ahead: a restart
        self.restart(p)
        set_shift(0)
        status, body = get(p, tok)
        self.assertEqual(status, 403, body)
        self.assertIn("token_sandbox_gone", body)

    def test_the_floor_is_visible(self):
        """atk15r17 F8: on a tokens-only replica 4,097 discards of other
        sandboxes raised the floor, and every live sandbox's older token
        was refused with nothing saying why: no log line, nothing in
        /status or /metrics. The floor now shows in /status
        ("removed_sandboxes") and /metrics, its rise is a
        registry.removed_floor_raised event, and the refusal names it."""
        now = int(time.time())
        gone = {"sbx_f8%022d" % i: now - 300 for i in range(4096)}
        p = self.start(gone)
        live = token(W["key"], "sbx_f8live", issued=now - 1000,
                     ttl=24 * 3600)
        status, body = get(p, live)
        self.assertEqual(status, 200, body)
        self.unregister("sbx_f8one")
        st, status_body = proxylib.control(self.sock, "GET", "/status")
        self.assertEqual(st, 200, status_body)
        rs = status_body["removed_sandboxes"]
        self.assertEqual((rs["kept"], rs["forgotten"], rs["floor"]),
                         (4096, 1, now - 300), rs)
        status, body = get(p, live)
        self.assertEqual(status, 403, body)
        self.assertIn("token_sandbox_gone", body)
        self.assertIn("removed-sandbox floor (%d" % (now - 300), body)
        raised = [e for e in p.events()
                  if e.get("event") == "registry.removed_floor_raised"]
        self.assertEqual(len(raised), 1, raised)
        self.assertEqual((raised[0]["floor"], raised[0]["forgotten"],
                          raised[0]["kept"]), (now - 300, 1, 4096))
        metrics = get_metrics(self.sock)
        self.assertIn("sandgate_proxy_removed_floor_timestamp_seconds %d"
                      % (now - 300), metrics)
        self.assertIn("sandgate_proxy_removed_forgotten_total 1", metrics)

    def test_a_time_near_the_largest_integer(self):
        """atk15r18 F1: an unregister's "issued_before" near INT64_MAX
        overflowed the ageing: the floor rose past every token, silently
        and for good (the UBSan build aborted). Kept times are bounded."""
        p = self.start({})
        self.unregister("sbx_f1big", issued_before=9223372036854774808)
        self.unregister("sbx_f1next")
        live = token(W["key"], "sbx_f1live", issued=int(time.time()) - 5)
        status, body = get(p, live)
        self.assertEqual(status, 200, body)
        st, sb = proxylib.control(self.sock, "GET", "/status")
        self.assertLess(sb["removed_sandboxes"]["floor"],
                        int(time.time()) + self.TTL + 3600, sb)
        status, body = get(p, token(W["key"], "sbx_f1big"))
        self.assertEqual(status, 403, body)

    def test_a_removed_line_never_weakens_a_removal(self):
        """atk15r18 F6: a registry.json.removed line with "at" missing, 0
        or a real number cleared the removal kept in .gone: the removed
        sandbox's token passed."""
        now = int(time.time())
        for at in ('', ', "at": 0', ', "at": %d.0' % now):
            with self.subTest(at=at):
                p = self.start({}, files={
                    ".gone": json.dumps({"unregistered":
                                         {self.SBX: now - 10}}),
                    ".removed": '{"key": "%s", "sandbox": true%s}\n'
                    % (self.SBX, at)})
                tok = token(W["key"], self.SBX, issued=now - 60)
                status, body = get(p, tok)
                self.assertEqual(status, 403, body)
                self.assertIn("token_sandbox_gone", body)
                p.stop()

    def test_an_unreadable_removed_list_fails_closed(self):
        """atk15r18 F8: a .gone that does not parse (a key twice, an
        integer out of range) lost every removal and their tokens passed.
        Not knowing them, the floor rises to now, said in the log."""
        now = int(time.time())
        for text in ('{"unregistered": {"%s": %d, "%s": 5}}' % (
                         self.SBX, now - 10, self.SBX),
                     '{"unregistered": {"%s": %d}, "seen": '
                     '99999999999999999999999}' % (self.SBX, now - 10),
                     # parsed but damaged (atk15r19 F1)
                     '{"unregistered": {"%s": "x"}}' % self.SBX,
                     '{"unregistered": {"%s": 0}}' % self.SBX,
                     '[]', '{}'):
            with self.subTest(text=text[:40]):
                p = self.start({}, files={".gone": text})
                tok = token(W["key"], self.SBX, issued=now - 60)
                status, body = get(p, tok)
                self.assertEqual(status, 403, body)
                self.assertIn("token_sandbox_gone", body)
                raised = [e for e in p.events() if e.get("event") ==
                          "registry.removed_floor_raised"]
                self.assertEqual(len(raised), 1, raised)
                self.assertIn("cannot be read", raised[0]["detail"])
                p.stop()

    def test_removed_lines_without_a_time_or_damaged(self):
        """atk15r19 F2, F5: a .removed line without "at" kept the removal
        at time 1, aged out at the next unregister (its token passed); a
        NUL byte or an undecodable line lost it without a word. No time
        is now, a damaged file fails closed."""
        now = int(time.time())
        line = '{"key": "%s", "sandbox": true}\n' % self.SBX
        for removed in (line, "\0" + line, line + "{\xff\n"):
            with self.subTest(removed=removed[:3]):
                p = self.start({}, files={".removed": removed})
                self.unregister("sbx_f2other")      # prunes the aged
                tok = token(W["key"], self.SBX, issued=now - 60)
                status, body = get(p, tok)
                self.assertEqual(status, 403, body)
                self.assertIn("token_sandbox_gone", body)
                p.stop()

    def assert_fails_closed(self, p, sandbox, why):
        """A token of sandbox issued a minute ago is refused, and the
        floor's rise says why (registry.removed_floor_raised)."""
        tok = token(W["key"], sandbox, issued=int(time.time()) - 60)
        status, body = get(p, tok)
        self.assertEqual(status, 403, body)
        self.assertIn("token_sandbox_gone", body)
        raised = [e["detail"] for e in p.events() if e.get("event") ==
                  "registry.removed_floor_raised"]
        self.assertTrue(any("cannot be read" in d and why in d
                            for d in raised), raised)

    def test_a_removed_last_line_without_a_newline(self):
        """atk1921l F1: a .removed whose last line had no newline (a torn
        write, or crafted) was skipped without a word: the sandbox's
        token passed. Damage like the rest: fails closed (the line is
        still applied when it reads); blank padding is no damage."""
        line = '{"key": "%s", "sandbox": true' % self.SBX
        for removed in (line, line + "}", "   \n" + line + "}"):
            with self.subTest(removed=removed):
                p = self.start({}, files={".removed": removed})
                self.assert_fails_closed(p, self.SBX, "no newline")
                p.stop()
        p = self.start({}, files={".removed": line + "}\n    "})
        status, body = get(p, token(W["key"], self.SBX,
                                    issued=int(time.time()) - 60))
        self.assertEqual(status, 403, body)
        self.assertEqual([e for e in p.events() if e.get("event") ==
                          "registry.removed_floor_raised"], [])

    def test_a_damaged_removal_of_a_registered_sandbox(self):
        """atk15r20 F1, F3: a removed sandbox can still be in registry.json
        (its unregister kept apart on a full folder, or a crash between
        the two saves). With its removal in a damaged file the floor rose
        but applied only to sandboxes not registered: its token passed.
        Now every sandbox restored at such a start is unsure: its tokens
        issued before the floor are refused, also after a later restart
        (the mark is saved), until it is registered again; a newer token
        passes. A key twice in a .removed line or in registry.json is
        damage too (F3), as is a "seen" that is not an integer."""
        reg = [{"address": "127.0.0.5", "sandbox": self.SBX, "sets": []}]
        now = int(time.time())
        good = '{"key":"%s","sandbox":true,"at":%d}\n' % (self.SBX, now)
        cases = {
            "torn": ({".removed": good[:-2] + "\n"}, "a line that is not"),
            "torn-last": ({".removed": good[:-4]}, "no newline"),
            "nul": ({".removed": "\0\n" + good}, "NUL"),
            "bom": ({".removed": "\ufeff" + good}, "a line that is not"),
            "dup-removed": ({".removed": good[:-2] + ',"key":"zz"}\n'},
                            "a line that is not"),
            "dup-gone": ({".gone": '{"unregistered":{"%s":%d,"%s":%d},'
                          '"floor":0}' % (self.SBX, now, self.SBX, now)},
                         "duplicate"),
            "seen": ({".gone": '{"unregistered":{},"seen":"x"}'},
                     "seen"),
        }
        for name, (files, why) in cases.items():
            with self.subTest(name):
                p = self.start({}, files=files, sandboxes=reg)
                if name in ("nul", "bom"):
                    tok = token(W["key"], self.SBX, issued=now - 60)
                    status, body = get(p, tok)
                    self.assertIn("token_sandbox_gone", body)
                    if name == "nul":   # the line after a NUL applies
                        self.assertIn("unregistered since", body)
                    p.stop()
                    continue
                self.assert_fails_closed(p, self.SBX, why)
                with open(self.registry) as f:
                    saved = json.load(f)
                # the marks as one count, not one in each entry
                self.assertEqual(saved.get("unsure_first"),
                                 len(saved["sandboxes"]), saved)
                # the mark holds after a restart on the same folder
                p.stop()
                p.start()
                proxylib.wait_unix_socket(self.sock)
                status, body = get(p, token(W["key"], self.SBX,
                                            issued=now - 60))
                self.assertIn("token_sandbox_gone", body)
                # a newer token passes; a register clears the mark
                status, body = get(p, token(W["key"], self.SBX,
                                            issued=int(time.time()) + 120))
                self.assertNotIn("token_sandbox_gone", body)
                st, b = proxylib.control(self.sock, "POST", "/register", {
                    "address": "127.0.0.5", "sandbox": self.SBX,
                    "sets": ""})
                self.assertEqual(st, 200, b)
                status, body = get(p, token(W["key"], self.SBX,
                                            issued=now - 60))
                self.assertNotIn("token_sandbox_gone", body)
                p.stop()

    def test_no_write_at_start_loses_what_was_in_force(self):
        """atk15r21 F2: at a start where a removal file was damaged, the
        unsure marks were written to registry.json BEFORE .gone (the
        floor): with registry.json an older proxy's file whose damaged
        "unregistered" was the damage, that write dropped the removals,
        and a crash or a failed .gone save before the floor was on disk
        left marks with no floor: after a restart the removed sandboxes'
        tokens and the marked one's passed. The marks, the floor and the
        removals are now written in one file first. Checked for a .gone
        save that fails (a directory at its name, as a full folder) and a
        kill after each write."""
        sbb, sbd = "sbx_f2b000000000000000000001", "sbx_f2d000000000000000001"
        reg = [{"address": "127.0.0.6", "sandbox": sbb, "sets": []}]
        for where in ("full", "marked", "gone-saved"):
            with self.subTest(where=where):
                now = int(time.time()) - 2
                p = self.start({self.SBX: now, sbd: str(now)},
                               sandboxes=reg, dirs=[".gone"] if where ==
                               "full" else (), crash=None if where ==
                               "full" else "registry:" + where)
                p.stop()
                shutil.rmtree(self.registry + ".gone", ignore_errors=True)
                p.start()
                proxylib.wait_unix_socket(self.sock)
                for sbx, why in ((self.SBX, "unregistered since"),
                                 (sbd, "removed-sandbox floor"),
                                 (sbb, "restored while removals")):
                    status, body = get(p, token(W["key"], sbx,
                                                issued=now - 60))
                    self.assertEqual(status, 403, "%s: %s" % (sbx, body))
                    self.assertIn(why, body)
                p.stop()

    def test_a_removed_line_of_neither_kind(self):
        """atk1921l F2, atk15r19 F6: a .removed line whose "sandbox" was neither true nor
        false was read as an address: the sandbox's token passed. It
        fails closed, and is applied as both: the registration goes
        whichever it was, and the sandbox is kept by name."""
        addr = "127.0.0.9"
        at = int(time.time()) + 3600
        for kind in ('1', '"true"', 'null', '{}', None):
            for key in (self.SBX, addr):
                with self.subTest(kind=kind, key=key):
                    field = ', "sandbox": %s' % kind if kind else ''
                    p = self.start({}, sandboxes=[{
                        "address": addr, "sandbox": "sbx_f2reg",
                        "sets": []}], files={".removed":
                        '{"key": "%s"%s, "at": %d}\n' % (
                            key, field, at)})
                    self.assert_fails_closed(p, self.SBX, "neither true")
                    st, sb = proxylib.control(self.sock, "GET", "/status")
                    self.assertEqual(addr in json.dumps(sb["sandboxes"]),
                                     key != addr, sb["sandboxes"])
                    if key == self.SBX:     # kept by name, at its time
                        gone = self.unregister("sbx_f2other")
                        self.assertGreaterEqual(gone.get(self.SBX, 0),
                                                at, gone)
                    p.stop()

    def test_a_fifo_at_the_removed_lists(self):
        """atk1921l F5: a FIFO planted at .gone or .removed (or the registry)
        hung the proxy's start in the open. Opened without blocking and
        refused unless a regular file: the start goes on, fails closed."""
        for suffix in (".gone", ".removed", ""):
            with self.subTest(suffix=suffix):
                p = self.start({}, fifos=[suffix])
                self.assert_fails_closed(p, self.SBX,
                                         "not a regular file")
                self.unregister("sbx_f3other")      # a save: not stuck
                p.stop()

    def test_an_unreadable_registry_fails_closed(self):
        """atk15r19 F7: a registry.json that did not parse was passed over
        (no sandboxes): the removed sandboxes an older proxy's file kept
        in it were lost and their tokens passed. It fails closed like
        .gone, as does a damaged "unregistered" in it."""
        for text in ('{"sandboxes": [], "unregistered": {"%s": 5' %
                     self.SBX,
                     '{"sandboxes": [], "unregistered": {"%s": "x"}}' %
                     self.SBX,
                     '{"sandboxes": [], "unregistered": []}', ''):
            with self.subTest(text=text[:40]):
                p = self.start({}, files={"": text})
                self.assert_fails_closed(p, self.SBX, "registry.json")
                p.stop()

    def test_a_lost_gone_fails_closed(self):
        """atk15r22 F1: a .gone deleted while the proxy was down (lost to
        lost+found, a copy of the folder that missed it) read as no
        removals: the removed sandbox's token passed, where an emptied one
        failed closed. Every registry save now says how many removals
        .gone keeps ("kept"); a start finding none there fails closed. A
        kill between the .gone and the registry write (gone-saved) leaves
        no false alarm: the registry file is only written after .gone."""
        sbb = "sbx_f1b0000000000000000000001"
        reg = [{"address": "127.0.0.6", "sandbox": sbb, "sets": []}]
        for case in ("lost", "kept", "crash"):
            with self.subTest(case=case):
                p = self.start({}, sandboxes=reg)
                self.unregister("sbx_f1c0000000000000000000001")
                if case == "crash":     # killed between .gone and registry
                    p.stop()
                    p.env["SANDGATE_TEST_CRASH"] = "registry:gone-saved"
                    p.start()
                    proxylib.wait_unix_socket(self.sock)
                    self.assertRaises(Exception, proxylib.control,
                                      self.sock, "POST", "/unregister",
                                      {"sandbox": self.SBX})
                    self.assertEqual(p.proc.wait(), -signal.SIGKILL)
                    p.env.pop("SANDGATE_TEST_CRASH")
                else:
                    self.unregister(self.SBX)
                    p.kill()
                if case == "lost":
                    os.unlink(self.registry + ".gone")
                p.stop()
                p.start()
                proxylib.wait_unix_socket(self.sock)
                issued = int(time.time()) - 60
                status, body = get(p, token(W["key"], self.SBX,
                                            issued=issued))
                self.assertEqual(status, 403, body)
                self.assertIn("token_sandbox_gone", body)
                raised = [e["detail"] for e in p.events() if e.get(
                    "event") == "registry.removed_floor_raised"]
                if case != "lost":      # no false alarm
                    self.assertIn("unregistered since", body)
                    self.assertEqual(raised, [])
                    p.stop()
                    continue
                self.assertTrue(any("registry.json.gone cannot be read "
                                    "(not there" in d for d in raised),
                                raised)
                # the restored sandbox may be the lost one: unsure
                status, body = get(p, token(W["key"], sbb, issued=issued))
                self.assertIn("restored while removals", body)
                # and the floor is kept: a restart raises nothing new
                p.stop()
                p.start()
                proxylib.wait_unix_socket(self.sock)
                status, body = get(p, token(W["key"], self.SBX,
                                            issued=issued))
                self.assertIn("token_sandbox_gone", body)
                self.assertEqual(len([e for e in p.events() if e.get(
                    "event") == "registry.removed_floor_raised"]),
                    len(raised))
                p.stop()

    def test_a_marks_write_keeps_its_count(self):
        """atk36f F1: a registry.json that is a marks write (its removals
        inline) had its "kept" read as 0, so a .gone written after it and
        then lost was not seen as lost: a sandbox removed then came back
        and its token passed. Run 1 starts with damage (a torn .gone): the
        marks write, then .gone, killed before the registry write
        (gone-saved). Run 2 removes sbz (restored unsure; its token newer
        than the floor) and is killed at the same point: .gone holds the
        removal, the registry still the marks write. .gone is lost: run 3
        must fail closed."""
        sbz = "sbx_f1z0000000000000000000001"
        reg = [{"address": "127.0.0.6", "sandbox": sbz, "sets": []}]
        p = self.start({self.SBX: int(time.time()) - 2}, sandboxes=reg,
                       files={".gone": "{"}, crash="registry:gone-saved")
        with open(self.registry) as f:
            marks = json.load(f)
        self.assertIn("unregistered", marks)
        self.assertEqual(marks.get("kept"), 1, marks)
        # sbz's token newer than run 1's floor (past its skew); run 3's
        # floor, at least a second later, above it again
        issued = marks["floor"] + 61
        time.sleep(1.1)
        p.stop()
        p.env["SANDGATE_TEST_CRASH"] = "registry:gone-saved"
        p.start()
        proxylib.wait_unix_socket(self.sock)
        self.assertRaises(Exception, proxylib.control, self.sock, "POST",
                          "/unregister", {"sandbox": sbz})
        self.assertEqual(p.proc.wait(), -signal.SIGKILL)
        p.env.pop("SANDGATE_TEST_CRASH")
        with open(self.registry + ".gone") as f:
            self.assertIn(sbz, json.load(f)["unregistered"])
        os.unlink(self.registry + ".gone")      # lost
        p.stop()
        p.start()
        proxylib.wait_unix_socket(self.sock)
        status, body = get(p, token(W["key"], sbz, issued=issued))
        self.assertEqual(status, 403, body)
        self.assertIn("token_sandbox_gone", body)
        raised = [e["detail"] for e in p.events()
                  if e.get("event") == "registry.removed_floor_raised"]
        self.assertTrue(any("registry.json.gone cannot be read (not there"
                            in d for d in raised), raised)
        p.stop()

    def test_a_full_registry_is_always_saved(self):
        """atk36f F2: a registry whose marks write could not fit under the
        8 MiB the proxy reads back was never saved again, and the
        registrations since were lost at each restart. A /register is
        refused (507, registry.full) once the entries would take more than
        7 MiB, room kept for the 4,096 removals a marks write also holds.
        A registry filled to just under it, 4,096 removals of 64-byte ids
        inline, and a torn .gone: registrations are refused with the
        limit named; after a kill and damage again (a .removed line of
        neither kind, the removals read from .gone) the marks write, all
        entries and removals, fits, and a restart keeps every
        registration."""
        limit = 7 * 1024 * 1024
        now = int(time.time()) - 2

        def enc(o):
            return json.dumps(o, separators=(",", ":"))

        def entry(i, name):
            return {"address": "10.%d.%d.%d" % (i >> 16 & 255,
                                                i >> 8 & 255, i & 255),
                    "sandbox": name, "sets": [], "extra": False}
        ents, text = [], 0
        while True:
            e = entry(len(ents), "sbx_full_%06d_%s" % (len(ents),
                                                      "p" * 48))
            if text + len(enc(e)) + 1 > limit - 250:
                break
            ents.append(e)
            text += len(enc(e)) + 1
        gone = {"g%s%04d" % ("x" * 59, i): now for i in range(4096)}
        big = enc({"sandboxes": ents, "unregistered": gone})
        p = self.start({}, files={"": big, ".gone": "{"})
        added, refused = [], None
        for i in range(8):
            sbx = "sbx_new_%06d" % i
            st, b = proxylib.control(self.sock, "POST", "/register", {
                "address": "127.0.1.%d" % (i + 1), "sandbox": sbx,
                "sets": ""})
            if st != 200:
                refused = (st, b)
                break
            self.assertTrue(b["saved"], b)
            added.append(sbx)
        self.assertIsNotNone(refused, "no registration refused")
        self.assertEqual(refused[0], 507, refused)
        self.assertIn("registry is full", refused[1]["error"])
        self.assertIn(str(limit), refused[1]["error"])
        self.assertTrue(added, "none registered before the limit")
        full = [e for e in p.events() if e.get("event") == "registry.full"]
        self.assertEqual([e["sandbox"] for e in full],
                         ["sbx_new_%06d" % len(added)])
        # an unregister always works
        st, b = proxylib.control(self.sock, "POST", "/unregister",
                                 {"sandbox": ents[0]["sandbox"]})
        self.assertEqual(st, 200, b)
        self.assertTrue(b["saved"], b)
        p.kill()
        with open(self.registry + ".removed", "w") as f:   # damage again,
            f.write('{"key": "%s", "sandbox": 1, "at": %d}\n' % (  # .gone
                self.SBX, now))                             # read whole
        p.stop()
        p.env["SANDGATE_TEST_CRASH"] = "registry:marked"
        self.killed(p)                  # the marks write on disk, as it is
        self.assertLessEqual(os.path.getsize(self.registry), 8 << 20)
        with open(self.registry) as f:
            saved = json.load(f)
        self.assertEqual(saved["unsure_first"], len(saved["sandboxes"]))
        self.assertGreaterEqual(len(saved["unregistered"]), 4096)
        p.stop()
        p.start()
        proxylib.wait_unix_socket(self.sock)
        st, status = proxylib.control(self.sock, "GET", "/status")
        have = set(e["sandbox"] for e in status["sandboxes"])
        want = set(e["sandbox"] for e in ents[1:]) | set(added)
        self.assertEqual(want - have, set())
        p.stop()

    def test_a_registry_over_the_bound_at_start_stays_bounded(self):
        """atk37b F1: a registry.json whose entries take more than 7 MiB
        (an older proxy's, which saved them up to 8 MiB) made the bound
        wrap: every /register passed and was saved past it. Loaded whole,
        it takes no new registration (507, registry.full); an unregister
        works, and a restart keeps every registration."""
        limit = 7 * 1024 * 1024

        def enc(o):
            return json.dumps(o, separators=(",", ":"))

        ents, text = [], 0
        while text < limit + 512 * 1024:
            i = len(ents)
            e = {"address": "10.%d.%d.%d" % (i >> 16 & 255, i >> 8 & 255,
                                             i & 255),
                 "sandbox": "sbx_over_%06d_%s" % (i, "p" * 48),
                 "sets": [], "extra": False}
            ents.append(e)
            text += len(enc(e)) + 1
        p = self.start({}, files={"": enc({"sandboxes": ents})})
        st, b = proxylib.control(self.sock, "POST", "/register", {
            "address": "127.0.1.1", "sandbox": "sbx_over_new",
            "sets": ""})
        self.assertEqual(st, 507, b)
        self.assertEqual(b["reason"], "registry_full", b)
        full = [e for e in p.events() if e.get("event") == "registry.full"]
        self.assertEqual([e["sandbox"] for e in full], ["sbx_over_new"])
        self.assertEqual(p.stderr().count("new registrations are refused "
                                          "until unregisters"), 1)
        st, b = proxylib.control(self.sock, "POST", "/unregister",
                                 {"sandbox": ents[0]["sandbox"]})
        self.assertEqual(st, 200, b)
        self.assertTrue(b["saved"], b)
        self.assertLessEqual(os.path.getsize(self.registry), 8 << 20)
        p.stop()
        p.start()
        proxylib.wait_unix_socket(self.sock)
        st, status = proxylib.control(self.sock, "GET", "/status")
        have = set(e["sandbox"] for e in status["sandboxes"])
        self.assertEqual(have, set(e["sandbox"] for e in ents[1:]))
        p.stop()

    def test_marks_that_cannot_work_are_damage(self):
        """atk15r22 F2: an "unsure" mark that was not a boolean, or marks
        with no floor (or floor 0), refused nothing, without a word. The
        proxy writes true marks only with a floor of at least 1: anything
        else is damage and fails closed."""
        now = int(time.time())
        for mark, floor in (("1", ', "floor": %d' % now), ('"yes"', ""),
                            ("true", ""), ("true", ', "floor": 0')):
            with self.subTest(mark=mark, floor=floor):
                p = self.start({}, files={"": '{"sandboxes": [{"address": '
                                          '"127.0.0.5", "sandbox": "%s", '
                                          '"sets": [], "unsure": %s}]%s}'
                                          % (self.SBX, mark, floor)})
                self.assert_fails_closed(p, self.SBX, "unsure")
                p.stop()

    def test_a_lagging_clock_keeps_the_times(self):
        """atk15r19 F8: times were bounded by the ageing clock, which lags
        after time down: a .gone saved 40 days ago had every recent
        removal cut to 10 days ago. Times are kept as they are."""
        now = int(time.time())
        self.start({}, files={".gone": json.dumps({
            "unregistered": {self.SBX: now - 3 * 3600},
            "seen": now - 40 * 86400})})
        gone = self.unregister("sbx_f8other")
        self.assertEqual(gone[self.SBX], now - 3 * 3600)


class ReplicaTakesRemovals(unittest.TestCase):
    """atk15r17 F1: the first --instance replica in a folder a single
    proxy used took its registry.json but not its removed sandboxes
    (registry.json.gone) nor its removals kept apart (.removed): a removed
    sandbox's token passed again there, and its address was registered
    again. Every replica's first start loads both (only refusals)."""

    SBX = "sbx_7a4e7a4e0000000000000001"

    def test_replicas_keep_the_single_proxys_removals(self):
        d = tempfile.mkdtemp(prefix="take-", dir=W["dir"])
        run = os.path.join(d, "run")
        os.makedirs(run)

        def start(sock, instance=None):
            args = ["--control-socket", os.path.join(run, sock),
                    "--token-key", W["pub"], "--token-any-source"]
            if instance:
                args += ["--instance", instance]
            p = proxylib.Proxy(d, W["up"], sets="", name=sock,
                               extra_args=args)
            self.addCleanup(p.stop)
            p.start()
            proxylib.wait_unix_socket(os.path.join(run, sock))
            return p

        p = start("control.sock")
        tok = token(W["key"], self.SBX, issued=int(time.time()) - 10,
                    ttl=24 * 3600)
        self.assertEqual(get(p, tok)[0], 200)
        st, body = proxylib.control(os.path.join(run, "control.sock"),
                                    "POST", "/unregister",
                                    {"sandbox": self.SBX})
        self.assertEqual(st, 200, body)
        p.stop()
        for inst in ("a", "b"):     # a takes registry.json, b does not
            r = start("control-%s.sock" % inst, inst)
            status, body = get(r, tok)
            self.assertEqual(status, 403, "replica %s: %s" % (inst, body))
            self.assertIn("token_sandbox_gone", body)
            r.stop()
            r.start()               # and from its own file after
            proxylib.wait_unix_socket(os.path.join(run,
                                                   "control-%s.sock" % inst))
            self.assertEqual(get(r, tok)[0], 403, inst)


class SingleProxyAfterReplicas(unittest.TestCase):
    """atk15r22 F3: a single proxy (no --instance) started in a folder
    replicas used read none of their registry-NAME.json.gone or .removed:
    their removed sandboxes' tokens passed (a scale-down to one proxy).
    And back and forth: a replica that ran before the single proxy never
    read the single proxy's later removals again. A start without
    --instance now loads every replica's, a replica's start the single
    proxy's at every start (only refusals), each kept in its own files."""

    SBX = "sbx_f3a000000000000000000001"
    SBC = "sbx_f3c000000000000000000001"

    def proxy(self, run, sock, instance=None):
        args = ["--control-socket", os.path.join(run, sock),
                "--token-key", W["pub"], "--token-any-source"]
        if instance:
            args += ["--instance", instance]
        p = proxylib.Proxy(os.path.dirname(run), W["up"], sets="",
                           name=sock, extra_args=args)
        if instance:            # a replica's log is named after it
            p.log_path = os.path.join(p.log_dir, "security-events.%s.jsonl"
                                      % instance)
        self.addCleanup(p.stop)
        p.start()
        proxylib.wait_unix_socket(os.path.join(run, sock))
        return p

    def refused(self, p, sandbox, issued):
        status, body = get(p, token(W["key"], sandbox, issued=issued))
        self.assertEqual(status, 403, body)
        self.assertIn("unregistered since", body)

    def replica_then_single(self, removed, between=None):
        """A folder where replica r1 ran, removed a sandbox (so its
        registry file is written), was killed, then (after between(run,
        r1)) a single proxy started: (run, r1, the single proxy)."""
        d = tempfile.mkdtemp(prefix="down-", dir=W["dir"])
        run = os.path.join(d, "run")
        os.makedirs(run)
        r = self.proxy(run, "control-r1.sock", "r1")
        st, body = proxylib.control(os.path.join(run, "control-r1.sock"),
                                    "POST", "/unregister",
                                    {"sandbox": removed})
        self.assertEqual(st, 200, body)
        r.kill()
        r.stop()
        if between is not None:
            between(run, r)
        return run, r, self.proxy(run, "control.sock")

    def test_replicas_removals_after_a_scale_down(self):
        issued = int(time.time()) - 60
        run, r, single = self.replica_then_single(self.SBX)
        self.refused(single, self.SBX, issued)
        # kept in its own files
        with open(os.path.join(run, "registry.json.gone")) as f:
            self.assertIn(self.SBX, json.load(f)["unregistered"])
        single.stop()

    def test_back_and_forth(self):
        """r1, then the single proxy, then r1 again: the single proxy's
        removal reaches r1 (its own file exists, nothing was taken)."""
        issued = int(time.time()) - 60
        run, r, single = self.replica_then_single("sbx_f3other")
        st, body = proxylib.control(os.path.join(run, "control.sock"),
                                    "POST", "/unregister",
                                    {"sandbox": self.SBC})
        self.assertEqual(st, 200, body)
        single.stop()
        r.start()
        proxylib.wait_unix_socket(os.path.join(run, "control-r1.sock"))
        self.refused(r, self.SBC, issued)
        r.stop()

    def floor_refused(self, p, sandbox, issued):
        """sandbox's token refused by the floor (its removal not known)."""
        status, body = get(p, token(W["key"], sandbox, issued=issued))
        self.assertEqual(status, 403, body)
        self.assertIn("removed-sandbox floor", body)

    def test_a_replicas_lost_gone_after_a_scale_down(self):
        """atk35c F1: the "kept" count was checked only for the proxy's
        own files: a replica's registry-r1.json.gone lost, read by the
        single proxy after a scale-down, was no removals; so was one
        lost again after r1 restarted once (its raised floor in
        registry-r1.json, which the single proxy never read). The single
        proxy now reads each replica's registry file too: its count, its
        floor and removals."""
        issued = int(time.time()) - 60
        for case in ("lost", "lost after a restart"):
            with self.subTest(case=case):
                def between(run, r):
                    gone = os.path.join(run, "registry-r1.json.gone")
                    os.unlink(gone)
                    if case == "lost":
                        return
                    r.start()       # fails closed, raises its floor
                    proxylib.wait_unix_socket(os.path.join(
                        run, "control-r1.sock"))
                    r.stop()
                    os.unlink(gone)
                run, r, single = self.replica_then_single(self.SBX, between)
                self.floor_refused(single, self.SBX, issued)
                single.stop()

    def test_scale_up_after_a_lost_gone(self):
        """atk36a F2: the single proxy removed SBC; r1 took registry.json
        and its first good save retired it; registry.json.gone was then
        lost: r2's first start had nothing saying .gone held removals,
        and SBC's token passed. r1 now leaves a registry.json with no
        sandboxes that keeps the count and the floor: r2 fails closed."""
        issued = int(time.time()) - 60
        d = tempfile.mkdtemp(prefix="up-", dir=W["dir"])
        run = os.path.join(d, "run")
        os.makedirs(run)
        single = self.proxy(run, "control.sock")
        st, body = proxylib.control(os.path.join(run, "control.sock"),
                                    "POST", "/unregister",
                                    {"sandbox": self.SBC})
        self.assertEqual(st, 200, body)
        single.stop()
        r1 = self.proxy(run, "control-r1.sock", "r1")
        self.refused(r1, self.SBC, issued)
        r1.stop()
        self.assertFalse(os.path.exists(os.path.join(
            run, "registry.json.taken-by-r1")))
        with open(os.path.join(run, "registry.json")) as f:
            remnant = json.load(f)
        self.assertEqual((remnant["sandboxes"], remnant["kept"]), ([], 1), remnant)
        os.unlink(os.path.join(run, "registry.json.gone"))
        r2 = self.proxy(run, "control-r2.sock", "r2")
        self.floor_refused(r2, self.SBC, issued)
        self.assertTrue(any("registry.json.gone cannot be read (not there"
                            in e.get("detail", "") for e in r2.events()))
        r2.stop()

    def test_scale_up_keeps_the_taken_files_own_removals(self):
        """atk36e F1: registry.json of an older proxy keeps its removals
        itself ("unregistered", no .gone). r1 took it and its first good
        save left a remnant with neither them nor a floor above them: r2's
        first start took the remnant and SBC's token passed there, with no
        file lost. The remnant carries them."""
        issued = int(time.time()) - 60
        d = tempfile.mkdtemp(prefix="up-", dir=W["dir"])
        run = os.path.join(d, "run")
        os.makedirs(run)
        with open(os.path.join(run, "registry.json"), "w") as f:
            json.dump({"sandboxes": [{"address": "127.0.0.6",
                                      "sandbox": "sbx_f1other",
                                      "sets": [], "extra": False}],
                       "unregistered": {self.SBC: issued + 30}}, f)
        r1 = self.proxy(run, "control-r1.sock", "r1")
        self.refused(r1, self.SBC, issued)
        r1.stop()
        self.assertFalse(os.path.exists(os.path.join(
            run, "registry.json.taken-by-r1")))
        with open(os.path.join(run, "registry.json")) as f:
            remnant = json.load(f)
        r2 = self.proxy(run, "control-r2.sock", "r2")
        self.refused(r2, self.SBC, issued)
        r2.stop()
        self.assertEqual(remnant["sandboxes"], [], remnant)
        self.assertIn(self.SBC, remnant["unregistered"], remnant)


    def test_scale_up_on_a_volume_without_hard_links(self):
        """atk36e F3: the remnant was linked into place; where link() fails
        (EPERM: some SMB or FUSE volumes; here a preloaded link() that
        always does) it was never written, the taken file never retired,
        and a warning came at every save. It is now created in place."""
        cc = shutil.which("cc")
        if cc is None:
            self.skipTest("no C compiler for the link() shim")
        d = tempfile.mkdtemp(prefix="nolink-", dir=W["dir"])
        shim = os.path.join(d, "nolink.so")
        with open(os.path.join(d, "nolink.c"), "w") as f:
            f.write("#include <errno.h>\nint link(const char *a, "
                    "const char *b) { (void)a; (void)b; errno = EPERM; "
                    "return -1; }\n")
        subprocess.run([cc, "-shared", "-fPIC", "-o", shim,
                        os.path.join(d, "nolink.c")], check=True)
        issued = int(time.time()) - 60
        run = os.path.join(d, "run")
        os.makedirs(run)
        single = self.proxy(run, "control.sock")
        st, body = proxylib.control(os.path.join(run, "control.sock"),
                                    "POST", "/unregister",
                                    {"sandbox": self.SBC})
        self.assertEqual(st, 200, body)
        single.stop()
        args = ["--control-socket", os.path.join(run, "control-r1.sock"),
                "--token-key", W["pub"], "--token-any-source",
                "--instance", "r1"]
        r1 = proxylib.Proxy(d, W["up"], sets="", name="control-r1.sock",
                            extra_args=args, env={
                                "LD_PRELOAD": shim,
                                "ASAN_OPTIONS": "verify_asan_link_order=0"})
        r1.log_path = os.path.join(r1.log_dir, "security-events.r1.jsonl")
        self.addCleanup(r1.stop)
        r1.start()
        proxylib.wait_unix_socket(os.path.join(run, "control-r1.sock"))
        self.refused(r1, self.SBC, issued)
        r1.stop()
        self.assertNotIn("cannot leave the count", r1.stderr())
        self.assertFalse(os.path.exists(os.path.join(
            run, "registry.json.taken-by-r1")))
        with open(os.path.join(run, "registry.json")) as f:
            remnant = json.load(f)
        self.assertEqual((remnant["sandboxes"], remnant["kept"]), ([], 1), remnant)


    def test_back_and_forth_with_a_lost_gone(self):
        """atk35c F1: the single proxy's registry.json.gone lost before
        r1 starts again: r1 read registry.json's "kept" only while it
        was its taken file, and the single proxy's removal passed."""
        issued = int(time.time()) - 60
        run, r, single = self.replica_then_single("sbx_f3other")
        st, body = proxylib.control(os.path.join(run, "control.sock"),
                                    "POST", "/unregister",
                                    {"sandbox": self.SBC})
        self.assertEqual(st, 200, body)
        single.stop()
        os.unlink(os.path.join(run, "registry.json.gone"))
        r.start()
        proxylib.wait_unix_socket(os.path.join(run, "control-r1.sock"))
        self.floor_refused(r, self.SBC, issued)
        self.assertTrue(any("registry.json.gone cannot be read (not there"
                            in e.get("detail", "") for e in r.events()))
        r.stop()


class OthersDamageCountedOnce(unittest.TestCase):
    """atk35c F2: a damaged file of the other proxy (a replica's read by
    the single proxy, the single proxy's read by a replica) is never
    rewritten by the proxy reading it: the floor rose to "now" at every
    start, and every live sandbox's tokens issued before were refused
    after each restart. The damage is counted once: what the file was is
    saved in the reader's registry file with the floor it raised, and an
    unchanged file raises nothing again. A kill at either write of the
    start that counts it loses neither the floor nor the marks.
    F3: a .removed of many damaged lines raised the floor (an event and
    a log line) once per line: now once per file, naming the count."""

    SBX = "sbx_f2x000000000000000000001"
    SBL = "sbx_f2l000000000000000000001"

    def proxy(self, run, instance):
        sock = "control-%s.sock" % instance if instance else "control.sock"
        args = ["--control-socket", os.path.join(run, sock),
                "--token-key", W["pub"], "--token-any-source"]
        if instance:
            args += ["--instance", instance]
        p = proxylib.Proxy(os.path.dirname(run), W["up"], sets="",
                           name=sock, extra_args=args)
        if instance:            # a replica's log is named after it
            p.log_path = os.path.join(p.log_dir, "security-events.%s.jsonl"
                                      % instance)
        self.addCleanup(p.stop)
        p.sock = os.path.join(run, sock)
        return p

    def up(self, p, crash=None):
        """p started (killed at crash, SANDGATE_TEST_CRASH, if given)."""
        if crash:
            p.env["SANDGATE_TEST_CRASH"] = crash
            with self.assertRaises(proxylib.ProxyError):
                p.start()
            self.assertEqual(p.proc.wait(), -signal.SIGKILL, p.stderr())
            p.stop()
            p.env.pop("SANDGATE_TEST_CRASH")
            return
        p.start()
        proxylib.wait_unix_socket(p.sock)

    def raised(self, p):
        return [e["detail"] for e in p.events() if e.get("event") ==
                "registry.removed_floor_raised"]

    def test_the_others_damage_raises_the_floor_once(self):
        for instance, other in ((None, "registry-r2.json.removed"),
                                ("r1", "registry.json.removed")):
            for crash in (None, "registry:marked", "registry:gone-saved"):
                with self.subTest(instance=instance, crash=crash):
                    self.counted_once(instance, other, crash)

    def counted_once(self, instance, other, crash):
        d = tempfile.mkdtemp(prefix="others-", dir=W["dir"])
        run = os.path.join(d, "run")
        os.makedirs(run)
        p = self.proxy(run, instance)
        self.up(p)
        st, body = proxylib.control(p.sock, "POST", "/register", {
            "address": "127.0.0.5", "sandbox": self.SBX, "sets": ""})
        self.assertEqual(st, 200, body)
        p.stop()
        # the other proxy's removal of SBX, torn: not known
        with open(os.path.join(run, other), "w") as f:
            f.write('{"key":"%s","sandbox":tr' % self.SBX)
        issued = int(time.time()) - 60
        self.up(p, crash)
        if crash:
            self.up(p)
        # SBX may be the removed one: refused; a sandbox registered now
        # is live
        status, body = get(p, token(W["key"], self.SBX, issued=issued))
        self.assertIn("restored while removals", body)
        st, body = proxylib.control(p.sock, "POST", "/register", {
            "address": "127.0.0.6", "sandbox": self.SBL, "sets": ""})
        self.assertEqual(st, 200, body)
        raised = self.raised(p)
        self.assertTrue(raised and other in raised[-1], raised)
        for _ in range(2):      # the same damage: nothing raised again
            p.stop()
            time.sleep(1.1)
            self.up(p)
            self.assertEqual(self.raised(p), raised)
            status, body = get(p, token(W["key"], self.SBL, issued=issued))
            self.assertNotIn("token_sandbox_gone", body)
            status, body = get(p, token(W["key"], self.SBX, issued=issued))
            self.assertIn("restored while removals", body)
        # the file changed: its damage is counted again
        p.stop()
        with open(os.path.join(run, other), "a") as f:
            f.write("x")
        self.up(p)
        self.assertEqual(len(self.raised(p)), len(raised) + 1)
        p.stop()

    def test_many_damaged_lines_one_rise(self):
        d = tempfile.mkdtemp(prefix="lines-", dir=W["dir"])
        run = os.path.join(d, "run")
        os.makedirs(run)
        with open(os.path.join(run, "registry-zz.json.removed"), "w") as f:
            f.write("x\n" * 5000 + '{"key": "%s", "sandbox": true}\n'
                    % self.SBX + "y\n")
        p = self.proxy(run, None)
        self.up(p)
        raised = self.raised(p)
        self.assertEqual(len(raised), 1, raised[:3])
        self.assertIn("5001 damaged lines, the first: a line that is not "
                      "one of its removals", raised[0])
        self.assertLess(len(p.stderr()), 20000)
        # the good line is applied all the same
        status, body = get(p, token(W["key"], self.SBX,
                                    issued=int(time.time()) - 60))
        self.assertIn("unregistered since", body)
        p.stop()


def get_metrics(sock):
    """The text of GET /metrics on the control socket."""
    c = proxylib.UnixHTTPConnection(sock)
    try:
        c.request("GET", "/metrics")
        return c.getresponse().read().decode()
    finally:
        c.close()


def status(sock):
    st, body = proxylib.control(sock, "GET", "/status")
    assert st == 200, body
    return body


class RegistryReadBack(unittest.TestCase):
    """atk36a F1, atk15r21 F4: the proxy wrote registry files its own
    reader refuses (over 8 MiB): an entry per damaged file of the other
    proxies ("others_damaged", any name starting "registry-" read as a
    replica's), or an "unsure" mark in each entry, took the file past
    the limit; at the next start every registration was lost and the
    floor rose again, at every start. Now the damage is one digest, only
    replica names are a replica's, the marks one count, and a save over
    the limit is refused (the last file kept, said)."""

    SBX = "sbx_rb0000000000000000000001"
    LIMIT = 8 * 1024 * 1024

    def proxy(self, run):
        sock = os.path.join(run, "control.sock")
        p = proxylib.Proxy(os.path.dirname(run), W["up"], sets="",
                           name="control.sock", extra_args=[
                               "--control-socket", sock, "--token-key",
                               W["pub"], "--token-any-source"])
        self.addCleanup(p.stop)
        p.sock = sock
        return p

    def up(self, p):
        """p started (a start reading 8 MiB files on a loaded machine
        may take a while: no timing is asserted), how long it took."""
        t0 = time.monotonic()
        p.start(timeout=180)
        proxylib.wait_unix_socket(p.sock, timeout=60)
        return time.monotonic() - t0

    def raised(self, p):
        return [e["detail"] for e in p.events() if e.get("event") ==
                "registry.removed_floor_raised"]

    def folder(self):
        d = tempfile.mkdtemp(prefix="readback-", dir=W["dir"])
        run = os.path.join(d, "run")
        os.makedirs(run)
        return run

    def registered(self, p):
        return {e["sandbox"] for e in status(p.sock)["sandboxes"]}

    def test_many_damaged_files_of_other_proxies(self):
        run = self.folder()
        p = self.proxy(run)
        self.up(p)
        st, body = proxylib.control(p.sock, "POST", "/register", {
            "address": "127.0.0.5", "sandbox": self.SBX, "sets": ""})
        self.assertEqual(st, 200, body)
        p.stop()
        # names no replica has (230 letters): 375 bytes each in
        # "others_damaged" took registry.json past 8 MiB
        for i in range(24000):
            with open(os.path.join(run, "registry-%s%06d.json"
                                   % ("a" * 230, i)), "w") as f:
                f.write("x")
        # and damaged files of replica names: counted, once
        for i in range(2000):
            with open(os.path.join(run, "registry-r%05d.json" % i),
                      "w") as f:
                f.write("x")
        took = self.up(p)
        print("start with 26000 damaged files: %.1fs" % took,
              file=sys.stderr)
        raised = self.raised(p)
        self.assertEqual(len(raised), 1, raised[:3])
        self.assertIn("2000 files of the other proxies", raised[0])
        p.stop()
        reg = os.path.join(run, "registry.json")
        self.assertLess(os.path.getsize(reg), 64 * 1024)
        for _ in range(2):      # unchanged: read back, nothing raised
            self.up(p)
            self.assertEqual(self.raised(p), raised)
            self.assertIn(self.SBX, self.registered(p))
            self.assertNotIn("larger than 8 MiB", p.stderr())
            p.stop()
        with open(os.path.join(run, "registry-r00007.json"), "a") as f:
            f.write("y")        # one changed: all counted again
        self.up(p)
        self.assertEqual(len(self.raised(p)), len(raised) + 1)
        p.stop()

    def entries(self, n, size=None):
        """n registry entries (size: as many as fit in size bytes)."""
        out, total, i = [], 60, 0
        while (size is None and i < n) or (size is not None and
                                           total < size):
            e = {"address": "10.%d.%d.%d" % (i >> 16 & 255, i >> 8 & 255,
                                             i & 255),
                 "sandbox": "sb%06d" % i, "sets": [], "extra": True}
            total += len(json.dumps(e, separators=(",", ":"))) + 1
            out.append(e)
            i += 1
        return out

    def test_unsure_marks_keep_it_readable(self):
        """atk15r21 F4: 7.7 MB of entries, a torn .removed: the marks
        took the file to 9.2 MB, every registration lost at the next
        start."""
        run = self.folder()
        ents = self.entries(0, size=self.LIMIT - 500 * 1024)
        with open(os.path.join(run, "registry.json"), "w") as f:
            json.dump({"sandboxes": ents}, f, separators=(",", ":"))
        with open(os.path.join(run, "registry.json.removed"), "w") as f:
            f.write('{"key":"x","sandbox":tr')
        p = self.proxy(run)
        print("start with %d entries and a torn .removed: %.1fs"
              % (len(ents), self.up(p)), file=sys.stderr)
        self.assertTrue(status(p.sock)["registry_saved"])
        p.stop()
        reg = os.path.join(run, "registry.json")
        self.assertLessEqual(os.path.getsize(reg), self.LIMIT)
        with open(reg) as f:
            self.assertEqual(json.load(f)["unsure_first"], len(ents))
        self.up(p)
        self.assertNotIn("larger than 8 MiB", p.stderr())
        self.assertEqual(len(self.registered(p)), len(ents))
        # still unsure: an older token of a restored one refused
        status_, body = get(p, token(W["key"], "sb000007",
                                     issued=int(time.time()) - 60))
        self.assertIn("restored while removals", body)
        p.stop()

    def test_a_save_past_the_limit_is_refused(self):
        """Writer and reader agree: a registry whose text would pass 8 MiB
        is not written (the last file kept, said), and the next start
        reads every registration of that file. Registrations no longer
        take it there (none is taken past 7 MiB, atk37b F1: they did
        while the bound wrapped); an older proxy's array-only file can,
        each entry gaining "extra" when saved again. Loaded whole, it
        takes no new registration; an unregister is kept apart."""
        run = self.folder()
        ents = self.entries(0, size=self.LIMIT + 512 * 1024)
        for e in ents:
            del e["extra"]
        text = json.dumps(ents, separators=(",", ":"))
        self.assertLess(len(text), self.LIMIT)
        reg = os.path.join(run, "registry.json")
        with open(reg, "w") as f:
            f.write(text)
        p = self.proxy(run)
        self.up(p)
        self.assertIn("new registrations are refused", p.stderr())
        st, body = proxylib.control(p.sock, "POST", "/register", {
            "address": "127.1.0.1", "sandbox": "sbx_over_new", "sets": ""})
        self.assertEqual(st, 507, body)
        st, body = proxylib.control(p.sock, "POST", "/unregister",
                                    {"sandbox": ents[0]["sandbox"]})
        self.assertEqual(st, 200, body)
        self.assertTrue(body["saved_apart"], body)    # .removed
        self.assertFalse(status(p.sock)["registry_saved"])
        self.assertIn("over the 8388608 bytes the proxy reads back",
                      p.stderr())
        with open(reg) as f:
            self.assertEqual(f.read(), text)
        p.stop()
        self.up(p)
        self.assertNotIn("larger than 8 MiB", p.stderr())
        self.assertEqual(self.registered(p),
                         {e["sandbox"] for e in ents[1:]})
        p.stop()


    def near_the_limit(self, first, slack):
        """A compact registry text of exactly LIMIT - slack bytes, its
        first entry first (names padded to reach the size)."""
        first = first if isinstance(first, list) else [first]
        ents = first + self.entries(0, size=self.LIMIT - slack - 3000)

        def text():
            return json.dumps({"sandboxes": ents, "floor": 0, "kept": 0},
                              separators=(",", ":"))
        need, i = self.LIMIT - slack - len(text()), len(first)
        while need > 0:
            add = min(40, need)
            ents[i]["sandbox"] += "p" * add
            need -= add
            i += 1
        t = text()
        self.assertEqual(len(t), self.LIMIT - slack)
        return t

    def test_marks_over_the_limit_leave_the_damage_in_place(self):
        """atk36e F2: registry.json 10 bytes under 8 MiB restores SBX,
        whose removal is only in a torn .gone: the unsure marks' write
        (with the removals) is over the limit and refused; the retry a
        second later rewrote .gone first (its damage gone) while the
        marks were in memory alone, and after a restart SBX was restored
        as sure and its token passed. The removal files now stay as they
        are until the marks are on disk: each start judges the same
        damage again."""
        run = self.folder()
        removed = int(time.time()) - 60
        reg = os.path.join(run, "registry.json")
        with open(reg, "w") as f:
            f.write(self.near_the_limit({"address": "127.0.0.5",
                                         "sandbox": self.SBX, "sets": [],
                                         "extra": True}, 10))
        torn = '{"unregistered":{"%s":%d},"floor":0,"se' % (self.SBX,
                                                           removed)
        gone = os.path.join(run, "registry.json.gone")
        with open(gone, "w") as f:
            f.write(torn)
        tok = token(W["key"], self.SBX, issued=removed - 100)
        p = self.proxy(run)
        seen = []
        for start in ("first", "after a restart"):
            self.up(p)
            body = get(p, tok)[1]
            time.sleep(2.5)             # the save retried every second
            with open(gone) as f:
                seen.append((start, body, f.read(), p.stderr()))
            p.stop()
        for start, body, text, err in seen:
            self.assertIn("restored while removals", body, start)
            self.assertEqual(text, torn, start)
            self.assertIn("over the 8388608 bytes the proxy reads back",
                          err, start)
        self.assertLessEqual(os.path.getsize(reg), self.LIMIT)


    def over_the_limit(self, run, unsure=False):
        """An older proxy's array-only registry file whose entries take
        the save past 8 MiB (each gains "extra"): loaded whole, it
        cannot be saved (EFBIG). unsure: its last entry marked unsure,
        so each save is the marks write, with the removals. Its
        entries."""
        ents = self.entries(0, size=self.LIMIT + 512 * 1024)
        for e in ents:
            del e["extra"]
        if unsure:
            ents[-1]["unsure"] = True
        with open(os.path.join(run, "registry.json"), "w") as f:
            f.write(json.dumps(ents, separators=(",", ":")))
        return ents

    def addresses(self, p):
        return {e["address"]: e["sandbox"] for e in
                status(p.sock)["sandboxes"]}

    def test_no_change_taken_while_it_cannot_be_saved(self):
        """atk37d F2: with the registry too large to be saved, a
        /register that grows nothing (another sandbox at an address,
        with a shorter name) was answered 200, saved: false, and lost at
        the next restart. Now only one that changes nothing passes;
        the others are refused (507, registry.full saying why), and an
        unregister still works."""
        run = self.folder()
        ents = self.over_the_limit(run)
        p = self.proxy(run)
        self.up(p)
        mark = p.mark()
        st, body = proxylib.control(p.sock, "POST", "/register", {
            "address": ents[0]["address"], "sandbox": "sbx_a",
            "sets": "", "extra": True})
        self.assertEqual(st, 507, body)
        self.assertEqual(body["reason"], "registry_full", body)
        ev = p.wait_event(lambda e: e.get("event") == "registry.full",
                          mark)
        self.assertIsNotNone(ev, "no registry.full event")
        self.assertIn("cannot be saved", ev["detail"])
        # registered again as it is: nothing to save, it passes
        st, body = proxylib.control(p.sock, "POST", "/register", {
            "address": ents[1]["address"], "sandbox": ents[1]["sandbox"],
            "sets": "", "extra": True})
        self.assertEqual(st, 200, body)
        st, body = proxylib.control(p.sock, "POST", "/unregister",
                                    {"sandbox": ents[2]["sandbox"]})
        self.assertEqual(st, 200, body)
        self.assertTrue(body["saved"], body)
        before = self.addresses(p)
        self.assertEqual(before[ents[0]["address"]], ents[0]["sandbox"])
        p.stop()
        self.up(p)
        self.assertEqual(self.addresses(p), before)
        p.stop()

    def built(self, p):
        """sandgate_proxy_registry_built_total: the registry file's text
        built, to save or measure it."""
        m = get_metrics(p.sock)
        return int(re.search(r"^sandgate_proxy_registry_built_total (\d+)$",
                             m, re.M).group(1))

    def test_no_rebuild_while_it_cannot_be_saved(self):
        """atk37f F1: with the registry too large to save, each second's
        retry built its 8 MiB text again to find it still too large
        (16.8 % of a CPU idle, requests held up to 673 ms). Now it is
        built again only once what its size depends on changed: an
        unregister measures it at once, the seconds after do not."""
        run = self.folder()
        ents = self.over_the_limit(run)
        p = self.proxy(run)
        self.up(p)
        st, body = proxylib.control(p.sock, "POST", "/unregister",
                                    {"sandbox": ents[0]["sandbox"]})
        self.assertEqual(st, 200, body)
        self.assertFalse(status(p.sock)["registry_saved"])
        n = self.built(p)
        # not a synchronisation: the window in which a retry each
        # second would have built it three times
        time.sleep(3.5)
        self.assertEqual(self.built(p), n)
        st, body = proxylib.control(p.sock, "POST", "/unregister",
                                    {"sandbox": ents[1]["sandbox"]})
        self.assertEqual(st, 200, body)
        self.assertEqual(self.built(p), n + 1)      # measured at once
        # atk38a F4: removals of names never registered can only grow
        # it: not built (each held the event loop ~0.3 s)
        for i in range(5):
            st, body = proxylib.control(p.sock, "POST", "/unregister",
                                        {"sandbox": "sbx_absent%05d" % i})
            self.assertEqual(st, 200, body)
        self.assertEqual(self.built(p), n + 1)
        st, body = proxylib.control(p.sock, "POST", "/unregister",
                                    {"sandbox": ents[2]["sandbox"]})
        self.assertEqual(st, 200, body)
        self.assertEqual(self.built(p), n + 2)      # it may fit now
        p.stop()

    def removals_full(self, name, unsure=False):
        """A proxy started on a registry over the limit (over_the_limit)
        with the 4,096 removals kept full, named name % i, all in the
        past and the oldest first."""
        run = self.folder()
        self.over_the_limit(run, unsure)
        now = int(time.time())
        with open(os.path.join(run, "registry.json.gone"), "w") as f:
            json.dump({"unregistered": {name % i: now - 4200 + i
                                        for i in range(4096)},
                       "seen": now, "floor": 0}, f)
        p = self.proxy(run)
        self.up(p)
        return p

    def test_no_rebuild_with_the_removals_full(self):
        """atk39f F1: with the 4,096 removals kept full (a proxy that
        has run a while), each unregister of a name not registered
        forgets the oldest and raises the floor to its time: the text
        was built again each time (~0.3 s with the event loop held),
        though a floor of as many digits makes it no shorter."""
        p = self.removals_full("sbx_g%05d")
        st, body = proxylib.control(p.sock, "POST", "/unregister",
                                    {"sandbox": "sbx_absent_first"})
        self.assertEqual(st, 200, body)
        self.assertFalse(status(p.sock)["registry_saved"])
        n = self.built(p)
        for i in range(5):
            st, body = proxylib.control(p.sock, "POST", "/unregister",
                                        {"sandbox": "sbx_absent%05d" % i})
            self.assertEqual(st, 200, body)
        self.assertEqual(self.built(p), n)
        kept = status(p.sock)["removed_sandboxes"]
        self.assertEqual((kept["kept"], kept["forgotten"]), (4096, 6))
        p.stop()

    def test_no_rebuild_with_shorter_removals_at_the_cap(self):
        """atk39f2 F1: in the marks write (an unsure mark not yet saved)
        with the 4,096 removals full of 40-character names, each
        unregister of a 28-character name (the controller's) forgets a
        longer one: the text was 12 bytes shorter, so built again each
        time (~0.25 s with the event loop held), though its length
        follows from what changed and is over by far."""
        p = self.removals_full("sbx_%036x", unsure=True)
        self.assertIn("restored while removals were not known",
                      p.stderr())
        n = self.built(p)
        for i in range(6):
            st, body = proxylib.control(p.sock, "POST", "/unregister",
                                        {"sandbox": "sbx_%024x" % i})
            self.assertEqual(st, 200, body)
            self.assertTrue(body["saved_apart"], body)
        self.assertFalse(status(p.sock)["registry_saved"])
        self.assertEqual(self.built(p), n)
        kept = status(p.sock)["removed_sandboxes"]
        self.assertEqual((kept["kept"], kept["forgotten"]), (4096, 6))
        p.stop()


class ReplicaFirstStartCutShort(unittest.TestCase):
    """atk15r21 F1: at a replica's first start with a damaged removal file
    of the single proxy (a torn last line in registry.json.removed), the
    unsure marks were written to registry-NAME.json before its .gone:
    with that save failing (a full folder) or a crash between the two,
    the next start was no longer a first one, never read the old .gone
    and .removed again, had no floor: every removal of the single proxy
    was lost and a removed sandbox's token passed. The first write now
    holds the marks, the floor and the removals, and while the taken
    registry.json.taken-by-NAME is still there (no good save since) the
    old files are read again."""

    SBX = "sbx_f1a000000000000000000001"
    SBB = "sbx_f1b000000000000000000001"

    def test_no_write_at_a_first_start_loses_the_removals(self):
        for where in ("full", "marked", "gone-saved"):
            with self.subTest(where=where):
                self.cut_short(where)

    def cut_short(self, where):
        d = tempfile.mkdtemp(prefix="cut-", dir=W["dir"])
        run = os.path.join(d, "run")
        os.makedirs(run)

        def proxy(sock, instance=None, env=None):
            args = ["--control-socket", os.path.join(run, sock),
                    "--token-key", W["pub"], "--token-any-source"]
            if instance:
                args += ["--instance", instance]
            p = proxylib.Proxy(d, W["up"], sets="", name=sock,
                               extra_args=args, env=env)
            self.addCleanup(p.stop)
            return p

        single = proxy("control.sock").start()
        sock = os.path.join(run, "control.sock")
        proxylib.wait_unix_socket(sock)
        for sbx, addr in ((self.SBX, "127.0.0.5"), (self.SBB, "127.0.0.6")):
            st, body = proxylib.control(sock, "POST", "/register", {
                "address": addr, "sandbox": sbx, "sets": ""})
            self.assertEqual(st, 200, body)
        st, body = proxylib.control(sock, "POST", "/unregister",
                                    {"sandbox": self.SBX})
        self.assertEqual(st, 200, body)
        single.stop()
        with open(os.path.join(run, "registry.json.removed"), "a") as f:
            f.write('{"key":"sbx_f1c","sandbox":tr')
        gone = os.path.join(run, "registry-r1.json.gone")
        if where == "full":
            os.makedirs(os.path.join(gone, "x"))
        r = proxy("control-r1.sock", "r1", env=None if where == "full" else
                  {"SANDGATE_TEST_CRASH": "registry:" + where})
        if where == "full":     # the .gone save fails: runs on
            r.start()
            proxylib.wait_unix_socket(os.path.join(run, "control-r1.sock"))
            r.kill()
        else:                   # killed at the crash point
            with self.assertRaises(proxylib.ProxyError):
                r.start()
        self.assertEqual(r.proc.wait(), -signal.SIGKILL, r.stderr())
        r.stop()
        shutil.rmtree(gone, ignore_errors=True)
        r.env.pop("SANDGATE_TEST_CRASH", None)
        r.start()
        proxylib.wait_unix_socket(os.path.join(run, "control-r1.sock"))
        issued = int(time.time()) - 60
        status, body = get(r, token(W["key"], self.SBX, issued=issued))
        self.assertEqual(status, 403, body)
        self.assertIn("unregistered since", body)
        status, body = get(r, token(W["key"], self.SBB, issued=issued))
        self.assertEqual(status, 403, body)
        self.assertIn("token_sandbox_gone", body)
        # the taken file is retired once this replica's files are saved
        self.assertFalse(os.path.exists(os.path.join(
            run, "registry.json.taken-by-r1")))
        r.stop()


class TokenBlockLogTest(unittest.TestCase):
    def test_token_sandbox_keeps_its_block_log_place(self):
        """atk15r13 F2 with a token: one pending count on each of the
        1,024 least recently seen client addresses, then 15,360 one-line
        ones, and a sandbox acting from a valid token (its exec running
        here, its address not registered) had its blocks counted only in
        overflow summaries naming neither it nor the host. A sandbox with
        an exec running here has a place of its own in the block log."""
        sock = os.path.join(W["dir"], "pins.sock")
        p = start("pins", ["--token-key", W["pub"], "--token-any-source",
                           "--control-socket", sock, "--block-window",
                           "60"])
        proxylib.wait_unix_socket(sock)
        blocked = b"GET http://pin.invalid/ HTTP/1.1\r\nHost: pin.invalid\r\n\r\n"
        for i in range(16384):
            n = 6 if i < 1024 else 1
            with socket.create_connection(
                    ("127.0.0.1", p.port), timeout=10, source_address=(
                        "127.%d.%d.%d" % (20 if n > 1 else 1, i >> 8,
                                          i & 255), 0)) as s:
                s.sendall(blocked * n)
                got = b""
                while got.count(b"HTTP/1.1 403") < n:
                    chunk = s.recv(65536)
                    if not chunk:
                        break
                    got += chunk
        st, body = proxylib.control(sock, "POST", "/execs", {
            "token": "ef" * 16, "sandbox": "sbx_tok", "run_id": "run_pin"})
        self.assertEqual(st, 200, body)
        tok = token(W["key"], "sbx_tok", run="run_pin")
        mark = p.mark()
        for i in range(3):
            status, _ = get(p, tok, src="127.0.0.9",
                            host="exfil-%d.invalid" % i)
            self.assertEqual(status, 403)
        p.stop()
        p.checked = True
        events = [json.loads(l) for l in p.log_lines()[mark:]]
        named = proxylib.blocked_attempts(
            events, lambda e: e.get("sandbox") == "sbx_tok")
        self.assertEqual(named, 3, "a token sandbox's blocks name neither "
                         "it nor the host: %r" % events)


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


TERM_POLICY = """description: a terminated registry
allow:
  - host: reg.test
    ports: [%d]
    allow_private: true
    tls: terminate
    ca_file: ca/upca.pem
    rationale: a registry the proxy terminates
"""


class TokenSessionTest(unittest.TestCase):
    """atk1921d F3: under --token-any-source a tunnel or terminated session
    opened with a token acted as the token's sandbox after its exec
    ended, the token expired and the sandbox was unregistered (each new
    request in the session decided with the token's sets). The run's
    end, the sandbox's unregister and the token's expiry now close them
    (egress.revoked), and a request inside a session is checked against
    the CONNECT's token as a new connection's would be."""

    @classmethod
    def setUpClass(cls):
        import ssl
        import test_proxy_terminate as T
        d = os.path.join(W["dir"], "sess")
        os.makedirs(d)
        cls.world = {"dir": d}
        pki = T.make_cas(cls.world)
        cert, key = T.make_leaf(pki, "reg", "reg.test")
        srv = proxylib.CountingServer(("127.0.0.1", 0),
                                      proxylib.TLSEchoHandler,
                                      proxylib.Counters())
        srv.tls_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        srv.tls_ctx.load_cert_chain(cert, key)
        import threading
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        cls.srv = srv
        cls.reg_port = srv.server_address[1]
        cls.sock = os.path.join(d, "control.sock")
        p = proxylib.Proxy(d, W["up"], sets="", name="sess", extra_args=[
            "--token-key", W["pub"], "--token-any-source", "--log-allowed",
            "--ca-cert", cls.world["sgca"], "--ca-key", cls.world["sgkey"],
            "--control-socket", cls.sock])
        W["proxies"].append(p)
        os.makedirs(os.path.join(p.policy_dir, "ca"))
        shutil.copy(cls.world["upca"], os.path.join(p.policy_dir, "ca",
                                                    "upca.pem"))
        with open(os.path.join(p.policy_dir, "term.yaml"), "w") as f:
            f.write(TERM_POLICY % cls.reg_port)
        with open(p.hosts, "a") as f:
            f.write("127.0.0.1\treg.test\n")
        cls.p = p.start()
        proxylib.wait_unix_socket(cls.sock)
        cls.ctx = ssl.create_default_context(cafile=cls.world["sgca"])

    @classmethod
    def tearDownClass(cls):
        cls.srv.shutdown()
        cls.srv.server_close()

    def connect(self, tok, hostport, src="127.0.0.1"):
        """A CONNECT to hostport with tok; the socket once answered 200."""
        auth = base64.b64encode(b"sandgate:" + tok.encode()).decode()
        s = socket.create_connection(("127.0.0.1", self.p.port), timeout=10,
                                     source_address=(src, 0))
        self.addCleanup(s.close)
        s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n"
                   "Proxy-Authorization: Basic %s\r\n\r\n"
                   % (hostport, hostport, auth)).encode())
        head = b""
        while b"\r\n\r\n" not in head:
            b = s.recv(1)
            self.assertTrue(b, "closed after CONNECT: %r" % head)
            head += b
        self.assertTrue(head.startswith(b"HTTP/1.1 200"), head)
        return s

    def session(self, tok, src="127.0.0.1"):
        """A terminated session to reg.test opened with tok, one GET in."""
        t = self.ctx.wrap_socket(self.connect(
            tok, "reg.test:%d" % self.reg_port, src),
            server_hostname="reg.test")
        self.addCleanup(t.close)
        self.assertEqual(self.session_get(t), "HTTP/1.1 200 OK")
        return t

    def session_get(self, t):
        """The status line of a GET inside session t, or how it ended."""
        try:
            t.sendall(b"GET /ok HTTP/1.1\r\nHost: reg.test:%d\r\n\r\n"
                      % self.reg_port)
            data = proxylib.recv_until(t, b"\r\n\r\n")
            if data is None:
                return "closed"
            head, _, body = data.partition(b"\r\n\r\n")
            n = re.search(rb"(?i)\r\ncontent-length:\s*(\d+)", head)
            while n and len(body) < int(n.group(1)):
                chunk = t.recv(4096)
                if not chunk:
                    return "closed"
                body += chunk
        except (OSError, ValueError) as e:
            return type(e).__name__
        return head.split(b"\r\n")[0].decode()

    def tunnel(self, tok):
        """A plain CONNECT tunnel to allowed.test opened with tok."""
        return self.connect(tok, "allowed.test:%d" % W["up"].http_port)

    def assertClosed(self, s, what):
        """s is closed by the proxy (within the 10 s timeout)."""
        s.settimeout(10)
        try:
            while s.recv(65536):
                pass
        except socket.timeout:
            self.fail(what + " still open")
        except OSError:
            pass

    def revoked(self, mark, sandbox, reason, timeout=5.0):
        ev = self.p.wait_event(lambda e: e.get("event") == "egress.revoked"
                               and e.get("sandbox") == sandbox, mark,
                               timeout=timeout)
        self.assertIsNotNone(ev, "no egress.revoked for " + sandbox)
        self.assertEqual(ev["reason"], reason, ev)

    def test_run_end_closes_session_and_tunnel(self):
        st, body = proxylib.control(self.sock, "POST", "/execs", {
            "token": "ab" * 16, "sandbox": "sbx_s1", "run_id": "run_s1"})
        self.assertEqual(st, 200, body)
        tok = token(W["key"], "sbx_s1", run="run_s1", sets="term,test")
        sess, tun = self.session(tok), self.tunnel(tok)
        mark = self.p.mark()
        st, body = proxylib.control(self.sock, "POST", "/execs/end",
                                    {"run_id": "run_s1"})
        self.assertEqual((st, body["closed"]), (200, 2), body)
        self.revoked(mark, "sbx_s1", "token_run_ended")
        self.assertNotEqual(self.session_get(sess), "HTTP/1.1 200 OK")
        self.assertClosed(tun, "the tunnel")

    def test_unregister_closes_session_and_tunnel(self):
        tok = token(W["key"], "sbx_s2", sets="term,test")
        sess, tun = self.session(tok), self.tunnel(tok)
        other = self.session(token(W["key"], "sbx_s2x", sets="term"))
        mark = self.p.mark()
        st, body = proxylib.control(self.sock, "POST", "/unregister",
                                    {"sandbox": "sbx_s2"})
        self.assertEqual(st, 200, body)
        self.revoked(mark, "sbx_s2", "identity_changed")
        self.assertNotEqual(self.session_get(sess), "HTTP/1.1 200 OK")
        self.assertClosed(tun, "the tunnel")
        # Another sandbox's session is not touched.
        self.assertEqual(self.session_get(other), "HTTP/1.1 200 OK")

    def test_expiry_closes_session_and_tunnel(self):
        tok = token(W["key"], "sbx_s3", sets="term,test", ttl=3)
        sess, tun = self.session(tok), self.tunnel(tok)
        mark = self.p.mark()
        self.revoked(mark, "sbx_s3", "token_expired", timeout=15)
        self.assertNotEqual(self.session_get(sess), "HTTP/1.1 200 OK")
        self.assertClosed(tun, "the tunnel")
        with self.assertRaises(AssertionError):
            self.session(tok)

    def test_request_in_session_checks_the_connects_token(self):
        """From a registered address the session stays the sandbox's
        (the registry's identity), but a request in it is refused once
        the CONNECT's token expired, as a new CONNECT with it is: the
        token was never looked at again inside the session."""
        st, body = proxylib.control(self.sock, "POST", "/register", {
            "address": "127.0.0.9", "sandbox": "sbx_s4", "sets": "term"})
        self.assertEqual(st, 200, body)
        tok = token(W["key"], "sbx_s4", sets="term", ttl=2)
        sess = self.session(tok, src="127.0.0.9")
        time.sleep(3)
        mark = self.p.mark()
        self.assertEqual(self.session_get(sess).split(" ")[1], "403")
        ev = self.p.wait_event(lambda e: e.get("event") == "egress.blocked",
                               mark)
        self.assertEqual((ev["sandbox"], ev["reason"]),
                         ("sbx_s4", "token_expired"), ev)


if __name__ == "__main__":
    unittest.main()
