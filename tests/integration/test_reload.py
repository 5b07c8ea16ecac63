#!/usr/bin/env python3
"""Integration tests of policy reload, revocation, per-sandbox sets and
report mode in sandgate-proxy, driven through its control socket and the
`sandgate proxy reload` command.

Run: python3 tests/integration/test_reload.py [-v] [unittest names...]
Env: SANDGATE_BIN (folder holding sandgate-proxy and sandgate),
SANDGATE_SRC (source root); SANDGATE_KEEP=1 keeps the temporary folder.

The contract under test is docs/policy.md ("Reload", "mode") and
docs/proxy.md ("Control socket"). Every upstream and every name is on
loopback; clients use 127.0.0.2 and 127.0.0.3 as source addresses to play
two sandboxes.
"""

import base64
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proxylib  # noqa: E402
from proxylib import RawConn, get_request, connect_request  # noqa: E402

SANDGATE = os.path.join(proxylib.BIN, "sandgate")
NAMES = ("allowed.test", "new.test", "gone.test", "tunnel.test",
         "kept.test", "shared.test", "stage.test", "evil.test",
         "g1.grant.test", "g2.grant.test", "g3.grant.test",
         "denied.grant.test")

W = {}  # the module's fixtures: dir, upstreams, proxy, state, socket

# The baseline policy; every test starts from it (setUp reloads it).
BASE = {
    "test.yaml": """\
description: reload tests (default set)
owner: sandgate-tests@example.invalid
allow:
  - host: allowed.test
    ports: [{HTTP}]
    allow_private: true
    rationale: plain-HTTP test upstream on loopback
  - host: gone.test
    ports: [{HTTP}]
    allow_private: true
    rationale: removed by the reload tests
  - host: tunnel.test
    ports: [{HTTP}]
    allow_private: true
    rationale: reached through CONNECT tunnels that a reload revokes
  - host: kept.test
    ports: [{HTTP}]
    allow_private: true
    rationale: a CONNECT tunnel that survives the reload
""",
    "alpha.yaml": """\
description: sandbox alpha
allow:
  - host: shared.test
    ports: [{HTTP}]
    allow_private: true
    rationale: only sandboxes with set alpha reach this one
""",
    "beta.yaml": """\
description: sandbox beta
allow:
  - host: allowed.test
    ports: [{HTTP}]
    allow_private: true
    rationale: beta reaches allowed.test but not shared.test
""",
    "staging.yaml": """\
description: a set being tried out
mode: report
allow:
  - host: stage.test
    ports: [{TLS}]
    allow_private: true
    rationale: an internal mirror whose other ports are being found out
""",
}

NEW_ENTRY = """\
  - host: new.test
    ports: [{HTTP}]
    allow_private: true
    rationale: added by a reload
"""

FLOOR = """\
description: floors admins set under every set
deny:
  - host: stage.test
    rationale: the staging mirror must not be reached even in report mode
  - host: kept.test
    ports: [{HTTP}]
    rationale: an allow entry of set test names it; the floor wins
"""

BROKEN = """\
allow:
  - host: broken.test
    rationle: the key is misspelt
"""


def setUpModule():
    for k in proxylib.PROXY_ENV:
        os.environ.pop(k, None)
    W["dir"] = tempfile.mkdtemp(prefix="sg-reload-")
    W["state"] = os.path.join(W["dir"], "state")
    W["sock"] = os.path.join(W["state"], "proxy", "run", "control.sock")
    os.makedirs(os.path.dirname(W["sock"]))
    try:
        W["up"] = proxylib.Upstreams(W["dir"]).start()
        p = proxylib.Proxy(W["dir"], W["up"], sets="test",
                           extra_args=["--control-socket", W["sock"]])
        W["proxy"] = p
        for name in os.listdir(p.policy_dir):
            os.unlink(os.path.join(p.policy_dir, name))
        write_policy(BASE)
        with open(p.hosts, "w") as f:
            f.write("127.0.0.1\t%s\n" % " ".join(NAMES))
        p.start()
    except BaseException:
        tearDownModule()
        raise


def tearDownModule():
    proxylib.teardown(W, [W["proxy"]] if W.get("proxy") is not None
                      else [])


def write_policy(files):
    """Make the policy folder hold exactly files (name -> template)."""
    pd = W["proxy"].policy_dir
    for name in os.listdir(pd):
        if name not in files:
            os.unlink(os.path.join(pd, name))
    for name, text in files.items():
        text = text.replace("{HTTP}", str(W["up"].http_port))
        text = text.replace("{TLS}", str(W["up"].tls_port))
        with open(os.path.join(pd, name), "w") as f:
            f.write(text)


# ------------------------------------------------------------ control

def control(method, path, body=None):
    """(status, parsed JSON body) of one control-socket request."""
    return proxylib.control(W["sock"], method, path, body)


# ------------------------------------------------------------ clients

bound_conn = proxylib.bound_conn


def get_from(src, host, path="/"):
    """One plain-HTTP GET through the proxy from source address src."""
    hp = "%s:%d" % (host, W["up"].http_port)
    with bound_conn(src, W["proxy"].port) as c:
        c.send(get_request("http://%s%s" % (hp, path), hp,
                           "Connection: close\r\n"))
        return c.read_response()


def urllib_get(host, path="/"):
    """Status of a GET through the proxy with python's urllib."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler(
        {"http": "http://127.0.0.1:%d" % W["proxy"].port}))
    url = "http://%s:%d%s" % (host, W["up"].http_port, path)
    try:
        with opener.open(url, timeout=10) as r:
            r.read()
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def open_tunnel(host, src="127.0.0.1"):
    """A CONNECT tunnel to host:HTTP_PORT with one request answered in it."""
    c = bound_conn(src, W["proxy"].port)
    hp = "%s:%d" % (host, W["up"].http_port)
    c.send(connect_request(hp))
    resp = c.read_response(method="CONNECT")
    if resp.status != 200:
        c.close()
        raise AssertionError("CONNECT %s: %r" % (hp, resp))
    tunnel_get(c, host, "/first")
    return c


def tunnel_get(c, host, path):
    """A GET inside an open tunnel (origin form); the parsed response."""
    c.send(("GET %s HTTP/1.1\r\nHost: %s:%d\r\n\r\n"
            % (path, host, W["up"].http_port)).encode())
    resp = c.read_response()
    if resp.status != 200 or resp.json()["path"] != path:
        raise AssertionError("GET %s in tunnel to %s: %r" % (path, host, resp))
    return resp


tunnel_closed = proxylib.closed_by_peer


def run_cli(*args):
    env = proxylib.clean_env({"SANDGATE_STATE": W["state"]})
    return subprocess.run([SANDGATE] + list(args), capture_output=True,
                          text=True, timeout=30, env=env,
                          stdin=subprocess.DEVNULL)


def digest():
    status, body = control("GET", "/status")
    assert status == 200, (status, body)
    return body["policy_digest"]


def folder_digest():
    """The digest `sandgate policy check` computes for the policy folder."""
    r = run_cli("policy", "check", W["proxy"].policy_dir)
    if r.returncode != 0:
        raise AssertionError("policy check: %s" % r.stderr)
    return r.stdout.strip().rsplit(" ", 1)[1]


class ReloadTest(unittest.TestCase):
    maxDiff = None

    @property
    def proxy(self):
        return W["proxy"]

    def setUp(self):
        write_policy(BASE)
        status, body = control("POST", "/reload")
        self.assertEqual(status, 200, body)
        control("POST", "/unregister", {"address": "127.0.0.2"})
        control("POST", "/unregister", {"address": "127.0.0.3"})
        self.base_digest = body["digest"]

    def tearDown(self):
        self.assertTrue(self.proxy.alive(), "proxy died; stderr:\n%s"
                        % self.proxy.stderr()[-3000:])

    def wait_reload_event(self, mark, kind):
        ev = self.proxy.wait_event(
            lambda e: e.get("event") in ("policy.reloaded",
                                         "policy.rejected"), mark)
        self.assertIsNotNone(ev, "no policy.* event after the reload")
        self.assertEqual(ev["event"], kind, ev)
        return ev

    def sighup(self, kind):
        mark = self.proxy.mark()
        os.kill(self.proxy.pid, signal.SIGHUP)
        return self.wait_reload_event(mark, kind)

    def assert_get(self, host, status, src="127.0.0.1", what=""):
        resp = get_from(src, host)
        self.assertEqual(resp.status, status, "%s %s from %s: %r"
                         % (what, host, src, resp))
        return resp


# ------------------------------------------------------- durable saves

class T0Durable(ReloadTest):
    def test_register_saved_means_synced(self):
        """A /register or /unregister answered saved:true has its
        registry file synced and renamed into place and the folder synced
        after the rename, so a crash or power loss cannot bring a removed
        sandbox back (atk1921g F7: neither was synced). Watched with
        strace on the running proxy."""
        if shutil.which("strace") is None:
            self.skipTest("no strace")
        run_dir = os.path.dirname(W["sock"])
        out = os.path.join(W["dir"], "strace-save.txt")
        tr = subprocess.Popen(["strace", "-f", "-y", "-qq", "-o", out,
                               "-e", "trace=fsync,rename,renameat,"
                               "renameat2", "-p", str(self.proxy.pid)],
                              stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
        try:
            time.sleep(1.0)     # attached
            for body, path in (({"address": "127.0.0.2",
                                 "sandbox": "sbx_durable",
                                 "sets": "test"}, "/register"),
                               ({"sandbox": "sbx_durable"}, "/unregister")):
                status, resp = control("POST", path, body)
                self.assertEqual(status, 200, resp)
                self.assertTrue(resp.get("saved"), resp)
            time.sleep(0.5)
        finally:
            tr.terminate()
            tr.wait(timeout=10)
        with open(out) as f:
            calls = f.read().splitlines()
        renames = [i for i, c in enumerate(calls)
                   if "rename" in c and "registry" in c]
        self.assertGreaterEqual(len(renames), 2, "\n".join(calls))
        for i in renames[-2:]:
            before = [c for c in calls[max(0, i - 3):i]
                      if c.split(None, 1)[-1].startswith("fsync(")]
            after = [c for c in calls[i + 1:i + 4]
                     if "fsync(" in c and "<%s>" % run_dir in c]
            self.assertTrue(before, "no fsync of the file before %s\n%s"
                            % (calls[i], "\n".join(calls)))
            self.assertTrue(after, "no fsync of %s after %s\n%s"
                            % (run_dir, calls[i], "\n".join(calls)))


# ---------------------------------------------------------- (a) broken

class T1Broken(ReloadTest):
    def break_policy(self):
        files = dict(BASE)
        files["broken.yaml"] = BROKEN
        write_policy(files)
        return os.path.join(self.proxy.policy_dir, "broken.yaml")

    def check_still_serving(self):
        self.assert_get("allowed.test", 200, what="after a rejected reload")
        self.assertEqual(urllib_get("allowed.test"), 200)
        self.assert_get("evil.test", 403, what="after a rejected reload")
        self.assertEqual(digest(), self.base_digest)

    def test_sighup_broken_keeps_old_policy(self):
        self.assert_get("allowed.test", 200, what="before")
        path = self.break_policy()
        ev = self.sighup("policy.rejected")
        want = "%s:3:5: unknown key \"rationle\"" % path
        self.assertTrue(any(e.startswith(want) for e in ev["errors"]),
                        ev["errors"])
        self.assertEqual(ev["policy_digest"], self.base_digest,
                         "rejected: the digest of the policy kept in force")
        self.check_still_serving()

    def test_rejected_errors_past_64k_are_cut_not_dropped(self):
        """A reload whose errors would make a policy.rejected line pass
        64 KiB still writes one (those that fit, then a count of the
        rest), and the log's chain holds."""
        files = dict(BASE)
        name = "zz-a-much-longer-file-name-for-every-error-line.yaml"
        files[name] = ("description: bad\nowner: x@example.org\n"
                       "mode: enforce\nallow:\n" + "".join(
                           '  - host: "bad host %d!!"\n    ports: [99999]\n'
                           '    rationale: x\n' % i for i in range(300)))
        write_policy(files)
        ev = self.sighup("policy.rejected")
        self.assertEqual(ev["policy_digest"], self.base_digest)
        errors = ev["errors"]
        self.assertGreater(len(errors), 100, errors[:3])
        m = re.match(r"\.\.\. and (\d+) more error\(s\), not logged "
                     r"here", errors[-1])
        self.assertIsNotNone(m, errors[-1])
        self.assertEqual(len(errors) - 1 + int(m.group(1)), 600)
        for line in self.proxy.log_lines():
            self.assertLessEqual(len(line), 64 * 1024)
        r = run_cli("audit", "verify", "--log-dir", self.proxy.log_dir)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.check_still_serving()

    def test_post_reload_broken_answers_422(self):
        path = self.break_policy()
        mark = self.proxy.mark()
        status, body = control("POST", "/reload")
        self.assertEqual(status, 422, body)
        self.assertFalse(body["ok"])
        self.assertEqual(len(body["errors"]), 1, body)
        self.assertTrue(body["errors"][0].startswith(
            "%s:3:5: unknown key \"rationle\" in an allow entry" % path),
            body["errors"])
        ev = self.wait_reload_event(mark, "policy.rejected")
        self.assertEqual(ev["errors"], body["errors"])
        self.check_still_serving()


# ---------------------------------------------------------- (b) valid

class T2Valid(ReloadTest):
    def changed_policy(self):
        files = dict(BASE)
        text = files["test.yaml"]
        # drop gone.test, add new.test
        start = text.index("  - host: gone.test")
        end = text.index("  - host: tunnel.test")
        files["test.yaml"] = text[:start] + NEW_ENTRY + text[end:]
        write_policy(files)

    def test_reload_without_restart(self):
        self.assert_get("new.test", 403, what="before")
        self.assert_get("gone.test", 200, what="before")
        pid = self.proxy.pid
        self.changed_policy()
        ev = self.sighup("policy.reloaded")
        self.assertEqual(ev["policy_digest"], folder_digest())
        self.assertNotEqual(ev["policy_digest"], self.base_digest)
        self.assertEqual(digest(), ev["policy_digest"])
        self.assert_get("new.test", 200, what="after")
        resp = self.assert_get("gone.test", 403, what="after")
        self.assertEqual(resp.header("X-Sandgate-Reason"), "not_allowlisted")
        self.assertEqual(self.proxy.pid, pid)
        self.assertTrue(self.proxy.alive())

    def test_keep_alive_client_survives_reload(self):
        with RawConn(self.proxy.port) as c:
            hp = "allowed.test:%d" % W["up"].http_port
            c.send(get_request("http://%s/before" % hp, hp))
            r1 = c.read_response()
            self.assertEqual(r1.status, 200, r1)
            self.changed_policy()
            status, body = control("POST", "/reload")
            self.assertEqual(status, 200, body)
            # Same TCP connection: the next requests are decided by the
            # new policy.
            hp = "new.test:%d" % W["up"].http_port
            c.send(get_request("http://%s/after" % hp, hp))
            r2 = c.read_response()
            self.assertEqual(r2.status, 200, r2)
            self.assertEqual(r2.json()["path"], "/after")
            hp = "gone.test:%d" % W["up"].http_port
            c.send(get_request("http://%s/gone" % hp, hp))
            r3 = c.read_response()
            self.assertEqual(r3.status, 403, r3)
            hp = "allowed.test:%d" % W["up"].http_port
            c.send(get_request("http://%s/still" % hp, hp))
            self.assertEqual(c.read_response().status, 200)
        ev = self.proxy.wait_event(
            lambda e: e.get("event") == "egress.blocked" and
            e.get("host") == "gone.test")
        self.assertIsNotNone(ev)
        self.assertEqual(ev["policy_digest"], body["digest"])


# ---------------------------------------------------------- (c) revoke

class T3Revoke(ReloadTest):
    def test_tunnel_to_removed_destination_is_closed(self):
        gone = open_tunnel("tunnel.test")
        kept = open_tunnel("kept.test")
        try:
            files = dict(BASE)
            text = files["test.yaml"]
            start = text.index("  - host: tunnel.test")
            end = text.index("  - host: kept.test")
            files["test.yaml"] = text[:start] + text[end:]
            write_policy(files)
            mark = self.proxy.mark()
            status, body = control("POST", "/reload")
            self.assertEqual(status, 200, body)
            self.assertTrue(tunnel_closed(gone),
                            "tunnel to a removed destination still open")
            ev = self.proxy.wait_event(
                lambda e: e.get("event") == "egress.revoked", mark)
            self.assertIsNotNone(ev, "no egress.revoked event")
            self.assertEqual(ev["host"], "tunnel.test")
            self.assertEqual(ev["port"], W["up"].http_port)
            self.assertEqual(ev["reason"], "not_allowlisted")
            self.assertEqual(ev["policy_digest"], body["digest"])
            self.assertGreater(ev["bytes_down"], 0)
            # The tunnel to a destination still allowed goes on.
            tunnel_get(kept, "kept.test", "/after-reload")
            revoked = [e for e in self.proxy.events()[mark:]
                       if e.get("event") == "egress.revoked"]
            self.assertEqual(len(revoked), 1, revoked)
        finally:
            gone.close()
            kept.close()

    def test_unrelated_reload_keeps_tunnels(self):
        t = open_tunnel("tunnel.test")
        try:
            files = dict(BASE)
            files["test.yaml"] += NEW_ENTRY
            write_policy(files)
            self.sighup("policy.reloaded")
            tunnel_get(t, "tunnel.test", "/after-reload")
        finally:
            t.close()


# ---------------------------------------------------- (e) per sandbox

class T4Sandboxes(ReloadTest):
    def register(self, addr, sbx, sets):
        status, body = control("POST", "/register", {
            "address": addr, "sandbox": sbx, "sets": sets})
        self.assertEqual(status, 200, body)

    def test_sets_per_client_address(self):
        self.register("127.0.0.2", "sbx_alpha", "alpha")
        self.register("127.0.0.3", "sbx_beta", "beta")
        status, body = control("GET", "/status")
        self.assertEqual(status, 200)
        listed = {s["address"]: (s["sandbox"], s["sets"])
                  for s in body["sandboxes"]}
        self.assertEqual(listed, {"127.0.0.2": ("sbx_alpha", ["alpha"]),
                                  "127.0.0.3": ("sbx_beta", ["beta"])})
        mark = self.proxy.mark()
        self.assert_get("shared.test", 200, src="127.0.0.2")
        self.assert_get("shared.test", 403, src="127.0.0.3")
        self.assert_get("shared.test", 403, src="127.0.0.1",
                        what="unregistered, default sets")
        # Each sandbox has only its own sets, not the default ones.
        self.assert_get("allowed.test", 403, src="127.0.0.2")
        self.assert_get("allowed.test", 200, src="127.0.0.3")
        ev = self.proxy.wait_event(
            lambda e: e.get("event") == "egress.blocked" and
            e.get("host") == "shared.test", mark)
        self.assertEqual(ev["sandbox"], "sbx_beta")
        self.assertEqual(ev["policy_sets"], ["beta"])
        self.assertTrue(ev["src"].startswith("127.0.0.3:"), ev["src"])

        status, body = control("POST", "/unregister", {"sandbox": "sbx_alpha"})
        self.assertEqual((status, body["removed"]), (200, 1), body)
        status, body = control("POST", "/unregister",
                               {"address": "127.0.0.3"})
        self.assertEqual((status, body["removed"]), (200, 1), body)
        self.assertEqual(control("GET", "/status")[1]["sandboxes"], [])
        mark = self.proxy.mark()
        self.assert_get("shared.test", 403, src="127.0.0.2",
                        what="after unregister")
        self.assert_get("allowed.test", 200, src="127.0.0.2",
                        what="after unregister")
        self.assert_get("allowed.test", 200, src="127.0.0.3",
                        what="after unregister")
        ev = self.proxy.wait_event(
            lambda e: e.get("event") == "egress.blocked", mark)
        self.assertIsNone(ev["sandbox"])
        self.assertEqual(ev["policy_sets"], ["test"])

    def test_register_again_keeps_extra_addresses(self):
        """A session container registered again (restarted, a new
        address) replaces the session's address only: the extra ones
        (exec --fresh containers) stay, also across a proxy restart."""
        def listed():
            return sorted(s["address"] for s in
                          control("GET", "/status")[1]["sandboxes"]
                          if s["sandbox"] == "sbx_alpha")

        self.addCleanup(control, "POST", "/unregister",
                        {"sandbox": "sbx_alpha"})
        self.register("127.0.0.2", "sbx_alpha", "alpha")
        status, body = control("POST", "/register", {
            "address": "127.0.0.3", "sandbox": "sbx_alpha",
            "sets": "alpha", "extra": True})
        self.assertEqual(status, 200, body)
        self.register("127.0.0.4", "sbx_alpha", "alpha")
        self.assertEqual(listed(), ["127.0.0.3", "127.0.0.4"])
        self.assert_get("shared.test", 200, src="127.0.0.3",
                        what="extra address after the session's moved")
        self.assert_get("shared.test", 403, src="127.0.0.2",
                        what="the session's old address")
        self.proxy.stop()
        self.proxy.start()
        for _ in range(50):
            try:
                control("GET", "/status")
                break
            except OSError:
                time.sleep(0.1)
        self.register("127.0.0.2", "sbx_alpha", "alpha")
        self.assertEqual(listed(), ["127.0.0.2", "127.0.0.3"],
                         "after a restart")
        # Registering the extra address as the session's takes it over.
        self.register("127.0.0.3", "sbx_alpha", "alpha")
        self.assertEqual(listed(), ["127.0.0.3"])

    def test_register_rejects_bad_input(self):
        status, _ = control("POST", "/register", {"address": "not-an-ip",
                                                  "sandbox": "sbx_x"})
        self.assertEqual(status, 400)
        status, _ = control("POST", "/register", {"address": "127.0.0.2",
                                                  "sandbox": "sbx_x",
                                                  "sets": "Bad Set"})
        self.assertEqual(status, 400)
        self.assertEqual(control("GET", "/status")[1]["sandboxes"], [])


# ------------------------------------------------------- (f) report

class T5Report(ReloadTest):
    def setUp(self):
        super().setUp()
        status, body = control("POST", "/register", {
            "address": "127.0.0.2", "sandbox": "sbx_stage",
            "sets": "staging"})
        self.assertEqual(status, 200, body)

    def test_report_mode_lets_through_and_logs(self):
        mark = self.proxy.mark()
        # port_not_allowed for stage.test: the set is in report mode, so
        # the request goes through, to the address its entry allows.
        resp = self.assert_get("stage.test", 200, src="127.0.0.2")
        self.assertEqual(resp.json()["path"], "/")
        ev = self.proxy.wait_event(
            lambda e: e.get("event") == "egress.would_block", mark)
        self.assertIsNotNone(ev, "no egress.would_block event")
        self.assertEqual(ev["host"], "stage.test")
        self.assertEqual(ev["port"], W["up"].http_port)
        self.assertEqual(ev["reason"], "port_not_allowed")
        self.assertEqual(ev["sandbox"], "sbx_stage")
        self.assertEqual(ev["policy_sets"], ["staging"])
        self.assertEqual(ev["policy_digest"], self.base_digest)
        blocked = [e for e in self.proxy.events()[mark:]
                   if e.get("event") == "egress.blocked"]
        self.assertEqual(blocked, [])
        # The same request from a client using an enforced set is refused.
        self.assert_get("stage.test", 403, src="127.0.0.1")

    def test_report_mode_keeps_address_checks(self):
        # evil.test has no entry at all: report mode lets the policy
        # decision through, but loopback is still refused without an
        # entry saying allow_private.
        mark = self.proxy.mark()
        resp = self.assert_get("evil.test", 403, src="127.0.0.2")
        self.assertEqual(resp.header("X-Sandgate-Reason"), "private_address")
        kinds = [(e["event"], e.get("reason"))
                 for e in self.proxy.events()[mark:]]
        self.assertEqual(kinds, [("egress.would_block", "not_allowlisted"),
                                 ("egress.blocked", "private_address")])

    def test_report_mode_tunnel_survives_reload(self):
        c = bound_conn("127.0.0.2", self.proxy.port)
        try:
            hp = "stage.test:%d" % W["up"].http_port
            c.send(connect_request(hp))
            resp = c.read_response(method="CONNECT")
            self.assertEqual(resp.status, 200, resp)
            tunnel_get(c, "stage.test", "/first")
            files = dict(BASE)
            files["test.yaml"] += NEW_ENTRY
            write_policy(files)
            mark = self.proxy.mark()
            self.sighup("policy.reloaded")
            tunnel_get(c, "stage.test", "/after-reload")
            revoked = [e for e in self.proxy.events()[mark:]
                       if e.get("event") == "egress.revoked"]
            self.assertEqual(revoked, [])
        finally:
            c.close()


    def test_deny_beats_report_mode_and_allow(self):
        files = dict(BASE)
        files["floor.yaml"] = FLOOR
        write_policy(files)
        status, body = control("POST", "/reload")
        self.assertEqual(status, 200, body)
        mark = self.proxy.mark()
        # Report mode lets not_allowlisted and port_not_allowed through;
        # a deny entry it never lifts.
        resp = self.assert_get("stage.test", 403, src="127.0.0.2")
        self.assertEqual(resp.header("X-Sandgate-Reason"), "denied")
        self.assertIn(b"is denied (a deny entry of policy.d", resp.body)
        # An allow entry of an enforced set does not open it either.
        resp = self.assert_get("kept.test", 403, src="127.0.0.1")
        self.assertEqual(resp.header("X-Sandgate-Reason"), "denied")
        kinds = [(e["event"], e.get("reason"), e.get("host"))
                 for e in self.proxy.events()[mark:]]
        self.assertEqual(kinds, [("egress.blocked", "denied", "stage.test"),
                                 ("egress.blocked", "denied", "kept.test")])
        # The event names the deny entry that decided.
        rules = [e.get("rule") for e in self.proxy.events()[mark:]]
        self.assertEqual(rules, [
            os.path.join(self.proxy.policy_dir, "floor.yaml") + ":3",
            os.path.join(self.proxy.policy_dir, "floor.yaml") + ":5"])
        # What no floor covers still goes as before.
        self.assert_get("allowed.test", 200, src="127.0.0.1")

    def test_deny_closes_report_mode_tunnel_at_reload(self):
        c = bound_conn("127.0.0.2", self.proxy.port)
        try:
            hp = "stage.test:%d" % W["up"].http_port
            c.send(connect_request(hp))
            resp = c.read_response(method="CONNECT")
            self.assertEqual(resp.status, 200, resp)
            tunnel_get(c, "stage.test", "/first")
            files = dict(BASE)
            files["floor.yaml"] = FLOOR
            write_policy(files)
            mark = self.proxy.mark()
            self.sighup("policy.reloaded")
            self.assertTrue(tunnel_closed(c), "tunnel to a denied "
                            "destination still open in report mode")
            ev = self.proxy.wait_event(
                lambda e: e.get("event") == "egress.revoked", mark)
            self.assertIsNotNone(ev, "no egress.revoked event")
            self.assertEqual((ev["host"], ev["reason"], ev["sandbox"]),
                             ("stage.test", "denied", "sbx_stage"))
        finally:
            c.close()


# ------------------------------------------- (h) exec attribution

TOK_A = "a1" * 16           # run_a of sbx_one
TOK_B = "b2" * 16           # run_b of sbx_one, at the same time
TOK_C = "c3" * 20           # run_c of sbx_two
TOK_D = "da" * 16           # run_d of sbx_flood
TOK_E = "e5" * 18           # run_e of sbx_flood, at the same time


def basic(token, user="sandgate"):
    return base64.b64encode(("%s:%s" % (user, token)).encode()).decode()


def get_with(src, host, auth):
    """A GET through the proxy from src, with Proxy-Authorization auth."""
    hp = "%s:%d" % (host, W["up"].http_port)
    extra = "Connection: close\r\n"
    if auth is not None:
        extra += "Proxy-Authorization: %s\r\n" % auth
    with bound_conn(src, W["proxy"].port) as c:
        c.send(get_request("http://%s/" % hp, hp, extra))
        return c.read_response()


class T10Execs(ReloadTest):
    def setUp(self):
        super().setUp()
        for addr, sbx in (("127.0.0.2", "sbx_one"), ("127.0.0.3", "sbx_two")):
            status, body = control("POST", "/register", {
                "address": addr, "sandbox": sbx, "sets": "test"})
            self.assertEqual(status, 200, body)
        for tok, sbx, run in ((TOK_A, "sbx_one", "run_a"),
                              (TOK_B, "sbx_one", "run_b"),
                              (TOK_C, "sbx_two", "run_c")):
            status, body = control("POST", "/execs", {
                "token": tok, "sandbox": sbx, "run_id": run})
            self.assertEqual(status, 200, body)

    def tearDown(self):
        for run in ("run_a", "run_b", "run_c"):
            control("POST", "/execs/end", {"run_id": run})
        super().tearDown()

    def blocked(self, mark):
        return [(e["host"], e.get("run_id"), e["sandbox"])
                for e in self.proxy.events()[mark:]
                if e.get("event") == "egress.blocked"]

    def test_each_exec_sees_its_own_blocks(self):
        status, st = control("GET", "/status")
        mark = self.proxy.mark()
        self.assertEqual(get_with("127.0.0.2", "ea.test",
                                  "Basic " + basic(TOK_A)).status, 403)
        self.assertEqual(get_with("127.0.0.2", "eb.test",
                                  "basic " + basic(TOK_B)).status, 403)
        # An allowed request goes on with its credential, which is not
        # forwarded upstream.
        resp = get_with("127.0.0.2", "allowed.test", "Basic " + basic(TOK_A))
        self.assertEqual(resp.status, 200)
        self.assertNotIn("proxy-authorization",
                         [k.lower() for k, v in resp.json()["headers"]])
        self.assertEqual(self.blocked(mark), [
            ("ea.test", "run_a", "sbx_one"),
            ("eb.test", "run_b", "sbx_one")])
        for run, want in (("run_a", ["ea.test"]), ("run_b", ["eb.test"]),
                          ("run_c", [])):
            status, body = control(
                "GET", "/blocks?sandbox=sbx_one&after=%d&run=%s"
                % (st["blocks_seq"], run))
            self.assertEqual(status, 200, body)
            self.assertEqual([b["host"] for b in body["blocks"]], want, run)
            self.assertTrue(all(b["run_id"] == run for b in body["blocks"]))
        # Without run= the sandbox's whole list, as before.
        status, body = control("GET", "/blocks?sandbox=sbx_one&after=%d"
                               % st["blocks_seq"])
        self.assertEqual(sorted(b["host"] for b in body["blocks"]),
                         ["ea.test", "eb.test"])

    def test_tunnel_outlives_its_exec_but_not_its_attribution(self):
        """A request made inside a tunnel after the exec that opened it
        ended is the sandbox's alone, as one made outside it."""
        status, st = control("GET", "/status")
        hp = "allowed.test:%d" % W["up"].http_port
        c = bound_conn("127.0.0.2", W["proxy"].port)
        try:
            c.send(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n"
                    "Proxy-Authorization: Basic %s\r\n\r\n"
                    % (hp, hp, basic(TOK_A))).encode())
            resp = c.read_response(method="CONNECT")
            self.assertEqual(resp.status, 200, resp)
            tunnel_get(c, "allowed.test", "/first")
            status, body = control("POST", "/execs/end", {"run_id": "run_a"})
            self.assertEqual(body["removed"], 1, body)
            mark = self.proxy.mark()
            c.send(("GET /t HTTP/1.1\r\nHost: other.test:%d\r\n\r\n"
                    % W["up"].http_port).encode())
            self.assertEqual(c.read_response().status, 403)
        finally:
            c.close()
        self.assertEqual(self.blocked(mark),
                         [("allowed.test", None, "sbx_one")])
        status, body = control("GET", "/blocks?sandbox=sbx_one&after=%d"
                               "&run=run_b&unattributed=1" % st["blocks_seq"])
        self.assertEqual([(b["host"], b["run_id"]) for b in body["blocks"]],
                         [("allowed.test", None)])

    def test_a_credential_names_no_other_run(self):
        status, st = control("GET", "/status")
        mark = self.proxy.mark()
        # sbx_two's credential sent from sbx_one's address: forged.
        get_with("127.0.0.2", "f1.test", "Basic " + basic(TOK_C))
        # No credential, a malformed one, an unknown one, two at once.
        get_with("127.0.0.2", "f2.test", None)
        get_with("127.0.0.2", "f3.test", "Basic !!!")
        get_with("127.0.0.2", "f4.test", "Basic " + basic("d4" * 16))
        get_with("127.0.0.2", "f5.test", "Bearer " + TOK_A)
        get_with("127.0.0.2", "f6.test", "Basic " + basic(TOK_A) +
                 "\r\nProxy-Authorization: Basic " + basic(TOK_B))
        # An exec that ended: its credential stops working.
        status, body = control("POST", "/execs/end", {"run_id": "run_a"})
        self.assertEqual(body["removed"], 1)
        get_with("127.0.0.2", "f7.test", "Basic " + basic(TOK_A))
        self.assertEqual(self.blocked(mark), [
            ("f%d.test" % i, None, "sbx_one") for i in range(1, 8)])
        # What an exec reads at its end: its own and the unattributed.
        status, body = control("GET", "/blocks?sandbox=sbx_one&after=%d"
                               "&run=run_b&unattributed=1" % st["blocks_seq"])
        self.assertEqual(sorted(b["host"] for b in body["blocks"]),
                         ["f%d.test" % i for i in range(1, 8)])
        # Its own sandbox's address gets run_c attributed.
        mark = self.proxy.mark()
        get_with("127.0.0.3", "f8.test", "Basic " + basic(TOK_C))
        self.assertEqual(self.blocked(mark), [("f8.test", "run_c",
                                               "sbx_two")])

    def test_connect_is_attributed(self):
        mark = self.proxy.mark()
        with bound_conn("127.0.0.2", self.proxy.port) as c:
            hp = "cn.test:%d" % W["up"].http_port
            c.send(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n"
                    "Proxy-Authorization: Basic %s\r\n\r\n"
                    % (hp, hp, basic(TOK_B))).encode())
            self.assertEqual(c.read_response(method="CONNECT").status, 403)
        self.assertEqual(self.blocked(mark), [("cn.test", "run_b",
                                               "sbx_one")])

    def test_register_rejects_bad_credentials(self):
        for body in ({"token": "short", "sandbox": "s", "run_id": "r"},
                     {"token": "A" * 32, "sandbox": "s", "run_id": "r"},
                     {"token": TOK_A, "sandbox": "s", "run_id": "r"},
                     {"token": "e5" * 16, "sandbox": "s x", "run_id": "r"},
                     {"token": "e5" * 16, "sandbox": "s"}):
            status, resp = control("POST", "/execs", body)
            self.assertEqual(status, 400, (body, resp))
        # Unregistering a sandbox ends its execs' credentials too.
        control("POST", "/unregister", {"sandbox": "sbx_two"})
        control("POST", "/register", {"address": "127.0.0.3",
                                      "sandbox": "sbx_two", "sets": "test"})
        mark = self.proxy.mark()
        get_with("127.0.0.3", "rg.test", "Basic " + basic(TOK_C))
        self.assertEqual(self.blocked(mark), [("rg.test", None,
                                               "sbx_two")])




class T13ExecBlocks(ReloadTest):
    """F3 of issue 19: one exec's blocks erased another's network_blocked.
    A sandbox of its own: its flood spends only its own log budget."""

    def test_another_execs_blocks_leave_this_ones(self):
        """Each exec keeps its own blocks: another exec of the sandbox
        blocked on many destinations neither pushes this one's out nor
        gets into its list; the one past its bound says it is cut."""
        control("POST", "/register", {"address": "127.0.0.4",
                                      "sandbox": "sbx_flood", "sets": "test"})
        for tok, run in ((TOK_D, "run_d"), (TOK_E, "run_e")):
            status, resp = control("POST", "/execs", {
                "token": tok, "sandbox": "sbx_flood", "run_id": run})
            self.assertEqual(status, 200, resp)
        self.addCleanup(control, "POST", "/unregister",
                        {"sandbox": "sbx_flood"})
        status, st = control("GET", "/status")
        after = st["blocks_seq"]
        self.assertEqual(get_with("127.0.0.4", "mine.test",
                                  "Basic " + basic(TOK_D)).status, 403)
        for i in range(100):
            self.assertEqual(get_with("127.0.0.4", "h%d.b.test" % i,
                                      "Basic " + basic(TOK_E)).status, 403)
        # What the controller reads at each exec's end.
        q = "/blocks?sandbox=sbx_flood&after=%d&unattributed=1&run=%s"
        status, body = control("GET", q % (after, "run_d"))
        self.assertEqual(status, 200, body)
        self.assertEqual([(b["host"], b["run_id"]) for b in body["blocks"]],
                         [("mine.test", "run_d")])
        self.assertFalse(body["truncated"])
        status, body = control("GET", q % (after, "run_e"))
        self.assertEqual(len(body["blocks"]), 64)
        self.assertEqual(body["blocks"][0]["host"], "h0.b.test")
        self.assertTrue(body["truncated"])
        # The same destination again is counted, not listed twice; a
        # block no credential named goes to both, once each.
        get_with("127.0.0.4", "mine.test", "Basic " + basic(TOK_D))
        get_with("127.0.0.4", "anon.test", None)
        status, body = control("GET", q % (after, "run_d"))
        self.assertEqual([(b["host"], b["attempts"], b["run_id"])
                          for b in body["blocks"]],
                         [("mine.test", 2, "run_d"), ("anon.test", 1, None)])
        # Blocks no credential named (a concurrent command without one)
        # take at most half the set: the exec's own still get in.
        for i in range(70):
            get_with("127.0.0.4", "anon%d.test" % i, None)
        get_with("127.0.0.4", "mine2.test", "Basic " + basic(TOK_D))
        status, body = control("GET", q % (after, "run_d"))
        hosts = [b["host"] for b in body["blocks"]]
        self.assertIn("mine2.test", hosts)
        self.assertEqual(sum(1 for b in body["blocks"]
                             if b["run_id"] is None), 32)
        self.assertTrue(body["truncated"])
        # An exec that ended takes its set with it.
        control("POST", "/execs/end", {"run_id": "run_d"})
        control("POST", "/execs", {"token": TOK_D, "sandbox": "sbx_flood",
                                   "run_id": "run_d"})
        status, body = control("GET", q % (0, "run_d"))
        self.assertEqual(body["blocks"], [])
        self.assertFalse(body["truncated"])


# ------------------------------------------------------- (i) grants

GRANT_FLOOR = """\
description: what approvers may open, and what they may not
grants:
  under: [grant.test]
  allow_private: true
deny:
  - host: denied.grant.test
    rationale: no approver may open this one
"""


# Who the proxy says gave a grant: the client's name, the peer's uid.
TESTER = "tester (uid %d)" % os.getuid()


def grant(host, seconds=60, run=None, sandbox="sbx_g"):
    body = {"sandbox": sandbox, "host": host, "port": W["up"].http_port,
            "seconds": seconds, "rationale": "the task needs %s" % host,
            "by": "tester (uid 1000)"}  # the proxy puts the peer's uid
    if run is not None:
        body["run_id"] = run
    return control("POST", "/grants", body)


class T11Grants(ReloadTest):
    def setUp(self):
        super().setUp()
        files = dict(BASE)
        files["floor.yaml"] = GRANT_FLOOR
        write_policy(files)
        status, body = control("POST", "/reload")
        self.assertEqual(status, 200, body)
        for addr, sbx in (("127.0.0.2", "sbx_g"), ("127.0.0.3", "sbx_h")):
            status, body = control("POST", "/register", {
                "address": addr, "sandbox": sbx, "sets": "test"})
            self.assertEqual(status, 200, body)

    def tearDown(self):
        for h in ("g1.grant.test", "g2.grant.test", "g3.grant.test"):
            control("POST", "/grants/revoke", {
                "sandbox": "sbx_g", "host": h, "port": W["up"].http_port,
                "by": "teardown"})
        control("POST", "/execs/end", {"run_id": "run_x"})
        control("POST", "/execs/end", {"run_id": "run_y"})
        super().tearDown()

    def events(self, mark, kinds):
        return [e for e in self.proxy.events()[mark:]
                if e.get("event") in kinds]

    def test_grant_then_expiry_closes_the_tunnel(self):
        mark = self.proxy.mark()
        self.assert_get("g1.grant.test", 403, src="127.0.0.2")
        status, body = grant("g1.grant.test", seconds=3)
        self.assertEqual(status, 200, body)
        self.assert_get("g1.grant.test", 200, src="127.0.0.2")
        # Another sandbox gets nothing from it.
        self.assert_get("g1.grant.test", 403, src="127.0.0.3")
        c = open_tunnel("g1.grant.test", src="127.0.0.2")
        try:
            self.assertTrue(tunnel_closed(c, timeout=10),
                            "tunnel still open after the grant expired")
        finally:
            c.close()
        self.assert_get("g1.grant.test", 403, src="127.0.0.2")
        evs = self.events(mark, ("grant.added", "grant.expired",
                                 "egress.revoked"))
        self.assertEqual([(e["event"], e["host"]) for e in evs], [
            ("grant.added", "g1.grant.test"),
            ("grant.expired", "g1.grant.test"),
            ("egress.revoked", "g1.grant.test")])
        self.assertEqual((evs[0]["by"], evs[0]["sandbox"],
                          evs[0]["rationale"], evs[0]["expires"]),
                         (TESTER, "sbx_g",
                          "the task needs g1.grant.test", evs[1]["expires"]))
        status, body = control("GET", "/grants?sandbox=sbx_g")
        self.assertEqual(body["grants"], [])
        r = run_cli("audit", "verify", "--log-dir", self.proxy.log_dir)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_floors_bound_grants(self):
        for host, words in (
                ("denied.grant.test", "denied.grant.test:%d is denied by "
                 "the deny entry \"denied.grant.test\"" % W["up"].http_port),
                ("evil.test", "evil.test is not under a domain grants may "
                 "cover (rule: grants: under: grant.test"),
                ("10.0.0.1", "10.0.0.1 is an IP address")):
            status, body = grant(host)
            self.assertEqual(status, 403, body)
            self.assertIn(words, body["error"])
        # A deny entry added after a grant wins over it.
        status, body = grant("g2.grant.test")
        self.assertEqual(status, 200, body)
        self.assert_get("g2.grant.test", 200, src="127.0.0.2")
        files = dict(BASE)
        files["floor.yaml"] = GRANT_FLOOR + """\
  - host: g2.grant.test
    rationale: closed again by the admins
"""
        write_policy(files)
        status, body = control("POST", "/reload")
        self.assertEqual(status, 200, body)
        resp = self.assert_get("g2.grant.test", 403, src="127.0.0.2")
        self.assertEqual(resp.header("X-Sandgate-Reason"), "denied")

    def grant_to_run_x(self):
        """Two execs of sbx_g, run_x and run_y; g3.grant.test to run_x."""
        for tok, run in (("e1" * 16, "run_x"), ("e2" * 16, "run_y")):
            status, body = control("POST", "/execs", {
                "token": tok, "sandbox": "sbx_g", "run_id": run})
            self.assertEqual(status, 200, body)
        status, body = grant("g3.grant.test", run="run_x")
        self.assertEqual(status, 200, body)

    def test_grant_for_one_exec(self):
        self.grant_to_run_x()
        self.assertEqual(get_with("127.0.0.2", "g3.grant.test",
                                  "Basic " + basic("e1" * 16)).status, 200)
        self.assertEqual(get_with("127.0.0.2", "g3.grant.test",
                                  "Basic " + basic("e2" * 16)).status, 403)
        self.assertEqual(get_with("127.0.0.2", "g3.grant.test",
                                  None).status, 403)

    def test_revoke_closes_tunnels_and_grants_survive_a_restart(self):
        status, body = grant("g2.grant.test")
        self.assertEqual(status, 200, body)
        c = open_tunnel("g2.grant.test", src="127.0.0.2")
        try:
            mark = self.proxy.mark()
            status, body = control("POST", "/grants/revoke", {
                "sandbox": "sbx_g", "host": "g2.grant.test",
                "port": W["up"].http_port, "by": "admin (uid 0)"})
            self.assertEqual((status, body["removed"], body["closed"]),
                             (200, 1, 1), body)
            self.assertTrue(tunnel_closed(c), "tunnel open after revoke")
        finally:
            c.close()
        ev = self.events(mark, ("grant.revoked",))
        self.assertEqual((ev[0]["host"], ev[0]["revoked_by"], ev[0]["by"]),
                         ("g2.grant.test", "admin (uid 0)",
                          TESTER))
        self.assert_get("g2.grant.test", 403, src="127.0.0.2")
        status, body = grant("g2.grant.test", seconds=600)
        self.assertEqual(status, 200, body)
        self.proxy.stop()
        self.proxy.start()
        # The control socket comes up just after the listeners.
        for _ in range(50):
            try:
                status, body = control("GET", "/grants")
                break
            except OSError:
                time.sleep(0.1)
        self.assertEqual([(g["host"], g["sandbox"]) for g in body["grants"]],
                         [("g2.grant.test", "sbx_g")])
        self.assert_get("g2.grant.test", 200, src="127.0.0.2")

    def restart(self):
        self.proxy.stop()
        self.proxy.start()
        # The control socket comes up just after the listeners.
        for _ in range(50):
            try:
                return control("GET", "/grants?sandbox=sbx_g")
            except OSError:
                time.sleep(0.1)
        return control("GET", "/grants?sandbox=sbx_g")

    def assert_ended(self, mark, host, words):
        evs = self.events(mark, ("grant.ended",))
        self.assertEqual([e["host"] for e in evs], [host], evs)
        self.assertIn(words, evs[0]["rule"])
        status, body = control("GET", "/grants?sandbox=sbx_g")
        self.assertEqual(body["grants"], [])

    def reload_floor(self, floor):
        files = dict(BASE)
        files["floor.yaml"] = floor
        write_policy(files)
        status, body = control("POST", "/reload")
        self.assertEqual(status, 200, body)

    def test_a_later_floor_ends_the_grant(self):
        status, body = grant("g1.grant.test", seconds=300)
        self.assertEqual(status, 200, body)
        self.assert_get("g1.grant.test", 200, src="127.0.0.2")
        mark = self.proxy.mark()
        self.reload_floor(GRANT_FLOOR + """\
  - host: g1.grant.test
    rationale: now denied
""")
        self.assert_ended(mark, "g1.grant.test", "deny entry")
        # Taking the deny entry back does not bring the grant back.
        self.reload_floor(GRANT_FLOOR)
        self.assert_get("g1.grant.test", 403, src="127.0.0.2")
        # A narrower grants: under: loaded at a restart ends it too.
        status, body = grant("g2.grant.test", seconds=300)
        self.assertEqual(status, 200, body)
        files = dict(BASE)
        files["floor.yaml"] = GRANT_FLOOR.replace("[grant.test]",
                                                  "[g3.grant.test]")
        write_policy(files)
        mark = self.proxy.mark()
        self.restart()
        self.assert_ended(mark, "g2.grant.test", "grants: under:")
        self.reload_floor(GRANT_FLOOR)
        self.assert_get("g2.grant.test", 403, src="127.0.0.2")

    def test_unsaved_revoke_said_and_saved_again(self):
        """A revoke the proxy cannot write to grants.json says so, and is
        written as soon as it can: a restart then never brings it back."""
        status, body = grant("g1.grant.test", seconds=300)
        self.assertEqual((status, body.get("saved")), (200, True), body)
        path = os.path.join(os.path.dirname(W["sock"]), "grants.json")
        # A folder where the proxy writes its temporary grants file: no
        # save can succeed.
        block = "%s.%d.tmp" % (path, self.proxy.pid)
        os.mkdir(block)
        # Nor the revokes file a revoke grants.json cannot take goes to.
        if os.path.exists(path + ".revoked"):
            os.unlink(path + ".revoked")
        os.mkdir(path + ".revoked")
        try:
            status, body = control("POST", "/grants/revoke", {
                "sandbox": "sbx_g", "host": "g1.grant.test",
                "port": W["up"].http_port, "by": "tester"})
            self.assertEqual((status, body.get("saved"),
                              body.get("saved_apart")), (200, False, False),
                             body)
            self.assert_get("g1.grant.test", 403, src="127.0.0.2")
            with open(path) as f:
                self.assertEqual([g["host"] for g in json.load(f)["grants"]],
                                 ["g1.grant.test"])
            self.assertIn("cannot save the grants", self.proxy.stderr())
            self.assertIn("cannot keep the revoke", self.proxy.stderr())
        finally:
            os.rmdir(block)
            os.rmdir(path + ".revoked")
        # A reload whose floor ends a grant says so the same way.
        status, body = grant("g2.grant.test", seconds=300)
        self.assertEqual(status, 200, body)
        os.mkdir(block)
        try:
            files = dict(BASE)
            files["floor.yaml"] = GRANT_FLOOR
            files["deny.yaml"] = ("description: d\ndeny:\n  - host: "
                                  "g2.grant.test\n    rationale: no\n")
            write_policy(files)
            status, body = control("POST", "/reload")
            self.assertEqual((status, body.get("saved")), (200, False),
                             body)
        finally:
            os.rmdir(block)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with open(path) as f:
                if json.load(f)["grants"] == []:
                    break
            time.sleep(0.2)
        with open(path) as f:
            self.assertEqual(json.load(f)["grants"], [], "not saved again")
        self.restart()
        self.assert_get("g1.grant.test", 403, src="127.0.0.2")

    def test_unsaved_revoke_kept_across_a_crash(self):
        """A revoke grants.json cannot take is kept in grants.json.revoked,
        synced before the answer: a crash then never brings the grant
        back (it did, from the last good grants.json, and /status said
        saved), and the next good save empties that file."""
        sbx = getattr(self, "SBX", "sbx_g")
        for host in ("g1.grant.test", "g2.grant.test"):
            status, body = grant(host, seconds=300, sandbox=sbx)
            self.assertEqual((status, body.get("saved")), (200, True), body)
        path = os.path.join(os.path.dirname(W["sock"]), "grants.json")
        block = "%s.%d.tmp" % (path, self.proxy.pid)
        os.mkdir(block)
        try:
            status, body = control("POST", "/grants/revoke", {
                "sandbox": sbx, "host": "g1.grant.test",
                "port": W["up"].http_port, "by": "tester"})
            self.assertEqual((status, body.get("saved"),
                              body.get("saved_apart"),
                              body.get("grants_saved")),
                             (200, True, True, False), body)
            with open(path) as f:
                self.assertEqual(len(json.load(f)["grants"]), 2,
                                 "grants.json taken")
            self.proxy.kill()
        finally:
            os.rmdir(block)
        mark = self.proxy.mark()
        self.restart()
        status, body = control("GET", "/grants?sandbox=" + sbx)
        self.assertEqual([g["host"] for g in body["grants"]],
                         ["g2.grant.test"])
        self.assertIs(body["grants_saved"], True, body)
        self.assert_get("g1.grant.test", 403, src="127.0.0.2")
        self.assert_get("g2.grant.test", 200, src="127.0.0.2")
        self.assertEqual([e["host"] for e in self.events(
            mark, ("grant.restored",))], ["g2.grant.test"])
        with open(path + ".revoked") as f:   # emptied, its room kept
            self.assertEqual(f.read().strip(), "")
        # The same grant given again is not ended by the old revoke.
        status, body = grant("g1.grant.test", seconds=300, sandbox=sbx)
        self.assertEqual(status, 200, body)
        self.restart()
        status, body = control("GET", "/grants?sandbox=" + sbx)
        self.assertEqual(sorted(g["host"] for g in body["grants"]),
                         ["g1.grant.test", "g2.grant.test"])

    def test_saved_grants_checked_and_logged_at_start(self):
        status, body = grant("g1.grant.test", seconds=300)
        self.assertEqual(status, 200, body)
        path = os.path.join(os.path.dirname(W["sock"]), "grants.json")
        self.assertEqual(os.stat(path).st_mode & 0o777, 0o600)
        self.proxy.stop()
        with open(path) as f:
            top = json.load(f)
        saved = top["grants"]
        planted = dict(saved[0], host="g2.grant.test", by="nobody",
                       rationale="hand-added",
                       granted="2099-01-01T00:00:00Z",
                       expires="2099-01-07T00:00:00Z")
        with open(path, "w") as f:
            json.dump(dict(top, grants=saved + [planted]), f)
        mark = self.proxy.mark()
        status, body = self.restart()
        self.assertEqual([g["host"] for g in body["grants"]],
                         ["g1.grant.test"])
        self.assert_get("g2.grant.test", 403, src="127.0.0.2")
        self.assert_get("g1.grant.test", 200, src="127.0.0.2")
        evs = self.events(mark, ("grant.restored",))
        self.assertEqual([(e["host"], e["by"]) for e in evs],
                         [("g1.grant.test", TESTER)])
        self.assertIn("granted in the future", self.proxy.stderr())
        r = run_cli("audit", "verify", "--log-dir", self.proxy.log_dir)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_exec_end_closes_its_grant_tunnels(self):
        self.grant_to_run_x()
        hp = "g3.grant.test:%d" % W["up"].http_port
        c = bound_conn("127.0.0.2", W["proxy"].port)
        try:
            c.send(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n"
                    "Proxy-Authorization: Basic %s\r\n\r\n"
                    % (hp, hp, basic("e1" * 16))).encode())
            resp = c.read_response(method="CONNECT")
            self.assertEqual(resp.status, 200, resp)
            tunnel_get(c, "g3.grant.test", "/first")
            mark = self.proxy.mark()
            # Another exec ending leaves it open.
            status, body = control("POST", "/execs/end", {"run_id": "run_y"})
            self.assertEqual((status, body.get("closed", 0)), (200, 0), body)
            tunnel_get(c, "g3.grant.test", "/second")
            status, body = control("POST", "/execs/end", {"run_id": "run_x"})
            self.assertTrue(tunnel_closed(c), "tunnel open after exec end")
            self.assertEqual((status, body["removed"], body["closed"]),
                             (200, 1, 1), body)
        finally:
            c.close()
        evs = self.events(mark, ("egress.revoked",))
        self.assertEqual([(e["host"], e.get("run_id")) for e in evs],
                         [("g3.grant.test", "run_x")])


class T12GrantCli(T11Grants):
    """sandgate grant, grants and revoke, as a person runs them."""
    SBX = "sbx_0000000000000000000000aa"

    def setUp(self):
        super().setUp()
        os.makedirs(os.path.join(W["state"], "sandboxes", self.SBX),
                    exist_ok=True)
        status, body = control("POST", "/register", {
            "address": "127.0.0.2", "sandbox": self.SBX, "sets": "test"})
        self.assertEqual(status, 200, body)

    def tearDown(self):
        run_cli("revoke", self.SBX, "g1.grant.test:%d" % W["up"].http_port)
        super().tearDown()

    test_grant_then_expiry_closes_the_tunnel = None
    test_floors_bound_grants = None
    test_grant_for_one_exec = None
    test_revoke_closes_tunnels_and_grants_survive_a_restart = None
    test_a_later_floor_ends_the_grant = None
    test_saved_grants_checked_and_logged_at_start = None
    test_exec_end_closes_its_grant_tunnels = None

    def test_cli(self):
        hp = "g1.grant.test:%d" % W["up"].http_port
        r = run_cli("grant", self.SBX, hp, "--for", "2m", "--rationale",
                    "the build needs the internal mirror")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"^granted %s to %s until "
                         r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\n$"
                         % (re.escape(hp), self.SBX))
        self.assert_get("g1.grant.test", 200, src="127.0.0.2")
        r = run_cli("grants", self.SBX, "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        g = json.loads(r.stdout)
        self.assertEqual((g["host"], g["rationale"], g["run_id"] if "run_id"
                          in g else None),
                         ("g1.grant.test", "the build needs the internal "
                          "mirror", None))
        self.assertRegex(g["by"], r"^\S+ \((sudo, )?uid \d+\)$")
        r = run_cli("grant", self.SBX, "evil.test", "--for", "1h",
                    "--rationale", "x")
        self.assertEqual(r.returncode, 126, r.stderr)
        self.assertIn("sandgate: grant refused: evil.test is not under a "
                      "domain grants may cover (rule: grants: under: "
                      "grant.test (%s/floor.yaml:3))"
                      % self.proxy.policy_dir, r.stderr)
        for bad in (["--for", "8d"], ["--for", "0s"], ["--for", "1h",
                    "--exec", "run_x"]):
            r = run_cli("grant", self.SBX, hp, "--rationale", "x", *bad)
            self.assertEqual(r.returncode, 2, (bad, r.stderr))
        r = run_cli("revoke", self.SBX, hp)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("revoked g1.grant.test", r.stdout)
        self.assert_get("g1.grant.test", 403, src="127.0.0.2")
        r = run_cli("revoke", self.SBX, hp)
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("no such grant", r.stderr)

    def test_revoke_unsaved_said_truly(self):
        """sandgate revoke when grants.json cannot be written: kept in
        grants.json.revoked, exit 0 with a note (it exited 125 saying a
        restart would undo it, and a crash did); when that file cannot
        take it either, 125 naming both."""
        hp = "g1.grant.test:%d" % W["up"].http_port
        path = os.path.join(os.path.dirname(W["sock"]), "grants.json")
        block = "%s.%d.tmp" % (path, self.proxy.pid)
        for tomb_ok in (True, False):
            r = run_cli("grant", self.SBX, hp, "--for", "2m",
                        "--rationale", "unsaved revoke")
            self.assertEqual(r.returncode, 0, r.stderr)
            os.mkdir(block)
            if not tomb_ok:
                os.unlink(path + ".revoked")
                os.mkdir(path + ".revoked")
            try:
                r = run_cli("revoke", self.SBX, hp)
            finally:
                os.rmdir(block)
                if not tomb_ok:
                    os.rmdir(path + ".revoked")
            self.assertIn("revoked g1.grant.test", r.stdout)
            if tomb_ok:
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertIn("kept in grants.json.revoked", r.stderr)
            else:
                self.assertEqual(r.returncode, 125, r.stderr)
                self.assertIn("nor grants.json.revoked", r.stderr)
                self.assertIn("a restart before then would undo it",
                              r.stderr)
            self.assert_get("g1.grant.test", 403, src="127.0.0.2")
        for _ in range(50):     # the retry, at most a second later
            if control("GET", "/status")[1].get("grants_saved"):
                break
            time.sleep(0.1)

    def test_grants_escaped_and_by_from_the_peer(self):
        status, body = control("POST", "/grants", {
            "sandbox": self.SBX, "host": "g1.grant.test",
            "port": W["up"].http_port, "seconds": 60,
            "rationale": "ok\u202e\u2066 reverted txet \u2069\u0085line2"
                         "\u009b31mRED\u009b0m",
            "by": "\u001b]0;pwned\u0007\u001b[2Jroot (uid 0)"})
        self.assertEqual(status, 200, body)
        self.assertEqual(body["grant"]["by"], "? (uid %d)" % os.getuid())
        status, body = control("POST", "/grants", {
            "sandbox": self.SBX, "host": "g1.grant.test",
            "port": W["up"].http_port, "seconds": 60, "rationale": "x",
            "by": "mallory (uid 4242)"})
        self.assertEqual(body["grant"]["by"], "mallory (uid %d)"
                         % os.getuid())
        status, body = control("POST", "/grants", {
            "sandbox": self.SBX, "host": "g2.grant.test",
            "port": W["up"].http_port, "seconds": 60,
            "rationale": "ok\u007f", "by": "t (uid 1)"})
        self.assertEqual(status, 400, body)
        control("POST", "/grants", {
            "sandbox": self.SBX, "host": "g2.grant.test",
            "port": W["up"].http_port, "seconds": 60,
            "rationale": "ok\u202eevil\u009b31m", "by": "t (uid 1)"})
        env = proxylib.clean_env({"SANDGATE_STATE": W["state"]})
        for args in (["grants", self.SBX], ["grants", self.SBX, "--json"]):
            r = subprocess.run([SANDGATE] + args, capture_output=True,
                               timeout=30, env=env, stdin=subprocess.DEVNULL)
            self.assertEqual(r.returncode, 0, r.stderr)
            for raw in (b"\x1b", b"\x07", b"\x7f", "\u202e".encode(),
                        "\u009b".encode()):
                self.assertNotIn(raw, r.stdout, (args, r.stdout))
            self.assertIn(b"g2.grant.test", r.stdout)
        self.assertIn(b"ok\\xe2\\x80\\xaeevil", subprocess.run(
            [SANDGATE, "grants", self.SBX], capture_output=True, timeout=30,
            env=env, stdin=subprocess.DEVNULL).stdout)
        run_cli("revoke", self.SBX, "g2.grant.test:%d" % W["up"].http_port)

    def test_unsaved_grants_shown_until_saved(self):
        """Grants the proxy cannot write to grants.json are live but would
        not survive a restart: /status (grants_saved, the time of the
        last failure), /metrics and `sandgate grants` say so until the
        retry saves them."""
        def metric():
            c = proxylib.UnixHTTPConnection(W["sock"])
            c.request("GET", "/metrics")
            text = c.getresponse().read().decode()
            c.close()
            m = re.search(r"^sandgate_proxy_grants_unsaved (\d+)$", text,
                          re.M)
            return m and int(m.group(1))

        st = control("GET", "/status")[1]
        self.assertEqual((st.get("grants_saved"), metric()), (True, 0), st)
        # A folder where the proxy writes its temporary grants file: no
        # save can succeed.
        block = os.path.join(os.path.dirname(W["sock"]),
                             "grants.json.%d.tmp" % self.proxy.pid)
        os.mkdir(block)
        try:
            hp = "g1.grant.test:%d" % W["up"].http_port
            r = run_cli("grant", self.SBX, hp, "--for", "2m",
                        "--rationale", "r")
            self.assertEqual(r.returncode, 125, r.stderr)
            self.assertIn("could not save its grants", r.stderr)
            self.assert_get("g1.grant.test", 200, src="127.0.0.2")
            st = control("GET", "/status")[1]
            self.assertIs(st.get("grants_saved"), False, st)
            self.assertRegex(st.get("grants_save_failed") or "",
                             r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
            self.assertEqual(metric(), 1)
            r = run_cli("grants", self.SBX)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("g1.grant.test", r.stdout)
            self.assertLessEqual(st["grants_unsaved_since"],
                                 st["grants_save_failed"])
            self.assertIn("warning: the proxy could not save its grants "
                          "since %s" % st["grants_unsaved_since"], r.stderr)
        finally:
            os.rmdir(block)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and metric() != 0:
            time.sleep(0.2)
        st = control("GET", "/status")[1]
        self.assertEqual((st.get("grants_saved"), metric()), (True, 0), st)
        self.assertIsNone(st["grants_unsaved_since"])
        self.assertIsNotNone(st["grants_save_failed"], "kept once saved")
        r = run_cli("grants", self.SBX)
        self.assertEqual((r.returncode, r.stderr), (0, ""))


# ------------------------------------------------- (g) sandgate CLI

class T6Cli(ReloadTest):
    def test_cli_reload_broken_then_good(self):
        files = dict(BASE)
        files["broken.yaml"] = BROKEN
        write_policy(files)
        r = run_cli("proxy", "reload")
        self.assertEqual(r.returncode, 1, r)
        self.assertIn("policy reload rejected", r.stderr)
        self.assertIn("%s:3:5: unknown key \"rationle\""
                      % os.path.join(self.proxy.policy_dir, "broken.yaml"),
                      r.stderr)
        self.assertEqual(digest(), self.base_digest)
        self.assert_get("allowed.test", 200)

        files = dict(BASE)
        files["test.yaml"] += NEW_ENTRY
        write_policy(files)
        r = run_cli("proxy", "reload")
        self.assertEqual(r.returncode, 0, r)
        want = folder_digest()
        self.assertEqual(r.stdout.strip(), "policy reloaded: digest %s"
                         % want)
        self.assertEqual(digest(), want)
        self.assert_get("new.test", 200)

    def test_cli_reload_without_proxy(self):
        env = proxylib.clean_env({"SANDGATE_STATE":
                                  os.path.join(W["dir"], "no-state")})
        r = subprocess.run([SANDGATE, "proxy", "reload"], capture_output=True,
                           text=True, timeout=30, env=env,
                           stdin=subprocess.DEVNULL)
        self.assertEqual(r.returncode, 125, r)


# ------------------------------------------------ (d) policy_digest

class T9Digests(ReloadTest):
    def test_every_event_names_the_policy_in_force(self):
        """Walk the whole log: each event carries the digest of the policy
        in force when it was written (a reload changes it; a rejected
        reload does not)."""
        events = self.proxy.events()
        self.assertGreater(len(events), 20, "the other tests ran first")
        first = events[0]
        self.assertIn("policy_digest", first)
        current = first["policy_digest"]
        seen = set()
        for i, e in enumerate(events):
            self.assertIn("policy_digest", e, "line %d: %r" % (i + 1, e))
            # A restart loads the policy on disk; grant.restored is the
            # first event written under it.
            if e["event"] in ("policy.reloaded", "grant.restored"):
                current = e["policy_digest"]
            self.assertEqual(e["policy_digest"], current,
                             "line %d: %r" % (i + 1, e))
            seen.add(e["event"])
        for kind in ("policy.reloaded", "policy.rejected", "egress.blocked",
                     "egress.would_block", "egress.revoked"):
            self.assertIn(kind, seen)
        self.assertEqual(current, digest())


def main():
    return proxylib.run_tests(sys.modules[__name__])


if __name__ == "__main__":
    sys.exit(main())
