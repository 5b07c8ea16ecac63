#!/usr/bin/env python3
"""The controller's side of a proxy tier: SANDGATE_PROXY_CONTROL naming
three replicas (docs/controller.md, "Several proxy replicas").

Three real sandgate-proxy replicas (--instance r1..r3), each with its
control API over TCP on loopback and one token file. `sandgate grant`
reaches all three (and exits 125 naming one it could not reach);
`sandgate pending --json` gathers the blocks made through each replica
into one list, merged per destination (attempts summed, first the
earliest, last the latest), and ends with a `replicas` line; with one
replica stopped, the others' blocks are shown and its status says it
did not answer (exit 125). With one URL, `pending` is what it was (the
log folder, no replicas line).

Run: python3 tests/integration/test_proxy_replicas.py [-v]
Env: SANDGATE_BIN, SANDGATE_SRC, SANDGATE_KEEP=1 as test_proxy.py.
Everything listens on loopback; every name is under .test.
"""

import base64
import http.server
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proxylib  # noqa: E402

SBX = "sbx_0123456789abcdef01234567"
CLIENT = "127.0.0.5"
NAMES = ("r1", "r2", "r3")
W = {}


def sandgate(args, urls, log_dir=None):
    """sandgate with SANDGATE_PROXY_CONTROL naming urls (None: unset)."""
    env = {"SANDGATE_STATE": W["state"],
           "SANDGATE_LOG_DIR": log_dir or W["proxies"][0].log_dir,
           "SANDGATE_PROXY_CONTROL_TOKEN_FILE": W["tokfile"]}
    if urls is not None:
        env["SANDGATE_PROXY_CONTROL"] = ",".join(urls)
    return subprocess.run([os.path.join(proxylib.BIN, "sandgate")] + args,
                          capture_output=True, text=True, timeout=60,
                          env=proxylib.clean_env(env))


def lines(out):
    return [json.loads(x) for x in out.splitlines() if x.strip()]


def block(p, host):
    """One request of the sandbox's address through replica p: refused."""
    code = proxylib.get_status(p.port, host, src=CLIENT)
    if code != 403:
        raise AssertionError("%s through %s: %d" % (host, p.dir, code))


class FakeReplica:
    """A replica that answers GET /blocks with records of its own making
    (a bad replica), or, with records None, takes connections and never
    answers (a black-holed one)."""

    def __init__(self, records):
        self.held = []
        if records is None:
            self.sock = socket.socket()
            self.sock.bind(("127.0.0.1", 0))
            self.sock.listen(64)
            threading.Thread(target=self.hold, daemon=True).start()
            self.port = self.sock.getsockname()[1]
            return
        body = json.dumps({"blocks": records}).encode()

        class H(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
        self.srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()
        self.port = self.srv.server_port

    def hold(self):
        while True:
            try:
                self.held.append(self.sock.accept()[0])
            except OSError:
                return

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.port

    def close(self):
        if hasattr(self, "srv"):
            self.srv.shutdown()
            self.srv.server_close()
        else:
            self.sock.close()
            for c in self.held:
                c.close()


def record(sandbox, host, attempts=1, port=443):
    return {"sandbox": sandbox, "host": host, "port": port,
            "reason": "not_allowlisted", "message": "m",
            "attempts": attempts, "first": "2026-12-02T00:00:00Z",
            "last": "2026-12-02T00:00:01Z", "run_id": None}


def old_grants(*hosts):
    """The text of a grants.json an older proxy wrote (a bare array):
    SBX's grants of hosts on port 443, given 5 s ago for 10 minutes."""
    now = time.time()
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now - 5))
    until = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now + 600))
    grant = {"sandbox": SBX, "port": 443, "granted": stamp,
             "expires": until, "by": "test", "rationale": "old"}
    return json.dumps([dict(grant, host=h) for h in hosts]).encode()


def chattr(flag, path):
    """chattr FLAG path (quiet): True when done; False where it is refused
    or not installed."""
    try:
        return subprocess.run(["chattr", flag, path],
                              stderr=subprocess.DEVNULL).returncode == 0
    except OSError:
        return False


def setUpModule():
    for k in proxylib.PROXY_ENV:
        os.environ.pop(k, None)
    W["dir"] = tempfile.mkdtemp(prefix="sg-replicas-")
    W["state"] = os.path.join(W["dir"], "state")
    os.makedirs(os.path.join(W["state"], "sandboxes", SBX))
    W["tokfile"] = os.path.join(W["dir"], "control.token")
    with open(W["tokfile"], "w") as f:
        f.write(base64.b64encode(os.urandom(48)).decode() + "\n")
    os.chmod(W["tokfile"], 0o600)
    W["proxies"], W["urls"] = [], []
    try:
        W["up"] = proxylib.Upstreams(W["dir"]).start()
        for name in NAMES:
            port = proxylib.free_port()
            p = proxylib.Proxy(W["dir"], W["up"], name=name, extra_args=[
                "--instance", name,
                "--control-socket", os.path.join(W["dir"], name + ".sock"),
                "--control-listen", "127.0.0.1:%d" % port,
                "--control-token-file", W["tokfile"]])
            p.log_path = os.path.join(p.log_dir,
                                      "security-events.%s.jsonl" % name)
            with open(os.path.join(p.policy_dir, "grants.yaml"), "w") as f:
                f.write("description: grants of the replica tests\n"
                        "grants:\n  under: [grant.test]\n")
            W["proxies"].append(p.start())
            W["urls"].append("http://127.0.0.1:%d" % port)
            status, body = proxylib.control(
                os.path.join(W["dir"], name + ".sock"), "POST", "/register",
                {"address": CLIENT, "sandbox": SBX, "sets": "test"})
            if status != 200:
                raise AssertionError("register on %s: %r" % (name, body))
    except BaseException:
        tearDownModule()
        raise


def tearDownModule():
    proxylib.teardown(W, W.get("proxies", []))


class Replicas(unittest.TestCase):
    """In order: the grant and the blocks with every replica up, then
    one stopped."""

    def test_0_grants_at_once_all_saved(self):
        """The controller asks the replicas at once; these share the
        folder of their control sockets, so their grants.json. Each
        wrote it through the same "grants.json.tmp", removed first: one
        replica's save took or removed the other's file, and its grant
        was answered "not saved" (31 of 120 grants at once under ASan;
        the grant command exits 125). Each now writes its own."""
        socks = [os.path.join(W["dir"], n + ".sock") for n in NAMES]
        unsaved = []
        for i in range(20):
            res = []
            threads = [threading.Thread(target=lambda s=s: res.append(
                proxylib.control(s, "POST", "/grants", {
                    "sandbox": SBX, "host": "c%d.grant.test" % i,
                    "port": 443, "seconds": 600, "rationale": "at once",
                    "by": "test"}))) for s in socks]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            unsaved += [b for st, b in res if st != 200 or
                        b.get("saved") is not True]
        self.assertEqual(unsaved, [], "%d of %d not saved" % (
            len(unsaved), 20 * len(socks)))

    def test_1_grant_reaches_every_replica(self):
        r = sandgate(["grant", SBX, "one.grant.test", "--for", "10m",
                      "--rationale", "replica test"], W["urls"])
        self.assertEqual(r.returncode, 0, r.stderr)
        for name in NAMES:
            status, body = proxylib.control(
                os.path.join(W["dir"], name + ".sock"), "GET",
                "/grants?sandbox=" + SBX)
            self.assertEqual(status, 200)
            self.assertIn("one.grant.test",
                          [g["host"] for g in body["grants"]], name)

    def test_2_pending_gathers_every_replica(self):
        for i, p in enumerate(W["proxies"]):
            block(p, "only-%s.blocked.test" % NAMES[i])
            block(p, "every.blocked.test")
        block(W["proxies"][1], "every.blocked.test")
        r = sandgate(["pending", "--json"], W["urls"])
        self.assertEqual(r.returncode, 0, r.stderr)
        out = lines(r.stdout)
        self.assertEqual(out[-1], {"replicas": [
            {"name": u, "status": "ok", "dropped": 0} for u in W["urls"]]})
        dests = {d["destination"]: d for d in out[:-1]}
        for name in NAMES:
            self.assertIn("only-%s.blocked.test:80" % name, dests)
        every = dests["every.blocked.test:80"]
        self.assertEqual(every["attempts"], 4)
        self.assertEqual(every["sandbox"], SBX)
        self.assertEqual(every["reason"], "not_allowlisted")
        self.assertLess(every["first"], every["last"])
        self.assertEqual(len(out), 5, out)
        # Text: one line per destination, no warning.
        r = sandgate(["pending", SBX], W["urls"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("every.blocked.test:80  not_allowlisted  4 attempts",
                      r.stdout)
        self.assertEqual(r.stderr, "")

    def test_3_one_url_is_as_before(self):
        """One URL: the log folder as before (r1's log, as one proxy's
        security-events.jsonl), no replicas line: the same as without
        SANDGATE_PROXY_CONTROL."""
        logs = os.path.join(W["dir"], "r1-log")
        os.makedirs(logs, exist_ok=True)
        with open(W["proxies"][0].log_path) as f, \
                open(os.path.join(logs, "security-events.jsonl"), "w") as g:
            g.write(f.read())
        r = sandgate(["pending", "--json"], W["urls"][:1], logs)
        unset = sandgate(["pending", "--json"], None, logs)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual((r.stdout, r.stderr), (unset.stdout, unset.stderr))
        out = lines(r.stdout)
        self.assertTrue(out)
        self.assertFalse([x for x in out if "replicas" in x], out)
        self.assertEqual({d["destination"] for d in out},
                         {"only-r1.blocked.test:80",
                          "every.blocked.test:80"})

    def test_4_replica_stopped(self):
        p = W["proxies"][1]
        self.assertEqual(proxylib.stop_and_check(p), [])
        r = sandgate(["pending", "--json"], W["urls"])
        self.assertEqual(r.returncode, 125, r.stderr)
        out = lines(r.stdout)
        reps = out[-1]["replicas"]
        self.assertEqual([x["name"] for x in reps], W["urls"])
        self.assertEqual([x["status"] == "ok" for x in reps],
                         [True, False, True])
        self.assertIn("cannot reach", reps[1]["status"])
        dests = {d["destination"]: d for d in out[:-1]}
        self.assertEqual(set(dests), {"only-r1.blocked.test:80",
                                      "only-r3.blocked.test:80",
                                      "every.blocked.test:80"})
        self.assertEqual(dests["every.blocked.test:80"]["attempts"], 2)
        self.assertIn("proxy replica %s did not answer" % W["urls"][1],
                      r.stderr)
        # A grant that cannot reach r2: 125, naming it; r1 and r3 hold it.
        r = sandgate(["grant", SBX, "two.grant.test", "--for", "10m",
                      "--rationale", "replica test"], W["urls"])
        self.assertEqual(r.returncode, 125, r.stderr)
        self.assertIn("not every proxy replica holds this", r.stderr)
        self.assertIn(W["urls"][1], r.stderr)
        self.assertNotIn(W["urls"][0] + " (", r.stderr)
        for i in (0, 2):
            status, body = proxylib.control(
                os.path.join(W["dir"], NAMES[i] + ".sock"), "GET",
                "/grants?sandbox=" + SBX)
            self.assertIn("two.grant.test",
                          [g["host"] for g in body["grants"]])


    def test_5_bad_list_is_named(self):
        """An empty URL between commas, or more than 16: refused, named,
        nothing sent."""
        for urls, what in (([W["urls"][0], "", W["urls"][2]],
                            "an empty URL"),
                           ([W["urls"][0]] * 17, "too many URLs")):
            r = sandgate(["grant", SBX, "three.grant.test", "--for", "10m",
                          "--rationale", "replica test"], urls)
            self.assertEqual(r.returncode, 125, r.stderr)
            self.assertIn("SANDGATE_PROXY_CONTROL: " + what, r.stderr)
        status, body = proxylib.control(
            os.path.join(W["dir"], "r1.sock"), "GET", "/grants?sandbox=" + SBX)
        self.assertNotIn("three.grant.test",
                         [g["host"] for g in body["grants"]])

    def test_6_dead_replicas_are_not_waited_on(self):
        """Two replicas that take the connection and never answer: asked
        at once with a bounded wait, named, the live one's blocks shown."""
        dead = [FakeReplica(None), FakeReplica(None)]
        try:
            r = sandgate(["pending", "--json"],
                         [W["urls"][0]] + [d.url for d in dead])
        finally:
            for d in dead:
                d.close()
        self.assertEqual(r.returncode, 125, r.stderr)
        # asked once each, not tried again (the wait is bounded by the
        # send timeout; sandgate() itself fails a run past 60 s)
        self.assertEqual([len(d.held) for d in dead], [1, 1], r.stderr)
        out = lines(r.stdout)
        self.assertEqual([x["status"] == "ok" for x in out[-1]["replicas"]],
                         [True, False, False])
        for d in dead:
            self.assertIn("proxy replica %s did not answer" % d.url,
                          r.stderr)
        self.assertIn("every.blocked.test:80",
                      [d["destination"] for d in out[:-1]])

    def test_7_bad_replica_cannot_poison_pending(self):
        """A replica listed first that floods /blocks, sends attempts at
        the top of the range and a sandbox id with terminal escapes: the
        live replica's blocks still show, the sum saturates, the escapes
        are dropped, the drop is named (exit 125)."""
        flood = [record("sbxZ", "f%d.test" % i) for i in range(20000)]
        bad = FakeReplica([
            record(SBX, "every.blocked.test", 2 ** 63 - 1, port=80),
            record("evil\x1b]0;PWNED\x07\x1b[2J", "x.test")] + flood)
        try:
            r = sandgate(["pending", "--json"], [bad.url, W["urls"][0]])
            t = sandgate(["pending"], [bad.url, W["urls"][0]])
        finally:
            bad.close()
        self.assertEqual(r.returncode, 125, r.stderr)
        out = lines(r.stdout)
        dests = {(d["sandbox"], d["destination"]): d for d in out[:-1]}
        self.assertIn((SBX, "only-r1.blocked.test:80"), dests)
        self.assertEqual(dests[(SBX, "every.blocked.test:80")]["attempts"],
                         2 ** 63 - 1)
        self.assertFalse(any("\x1b" in d["sandbox"] for d in out[:-1]))
        reps = out[-1]["replicas"]
        self.assertGreater(reps[0]["dropped"], 0)
        self.assertEqual(reps[1]["dropped"], 0)
        self.assertIn("proxy replica %s: %d more destinations not shown"
                      % (bad.url, reps[0]["dropped"]), r.stderr)
        self.assertEqual(t.returncode, 125, t.stderr)
        self.assertNotIn("\x1b", t.stdout)
        self.assertIn("only-r1.blocked.test:80", t.stdout)

    def test_9_each_replica_keeps_its_own_grants(self):
        """Replicas whose control sockets share a folder shared one
        grants.json, the last saver's: a grant only r1 held was gone
        after r1 restarted, and r3's was in force there. Each now keeps
        grants-NAME.json, and one with none takes grants.json (what an
        older proxy wrote) as its own at start."""
        for name in ("r1", "r3"):
            status, body = proxylib.control(
                os.path.join(W["dir"], name + ".sock"), "POST", "/grants", {
                    "sandbox": SBX, "host": "own-%s.grant.test" % name,
                    "port": 443, "seconds": 600, "rationale": "own",
                    "by": "test"})
            self.assertEqual((status, body.get("saved")), (200, True), body)
        own = os.path.join(W["dir"], "grants-r1.json")
        self.assertEqual(self.restart_r1(), {"own-r1.grant.test"})
        # No file of its own yet: grants.json is taken and saved as one.
        with open(own) as f:
            saved = json.load(f)["grants"]
        W["proxies"][0].stop()
        os.unlink(own)
        with open(os.path.join(W["dir"], "grants.json"), "w") as f:
            json.dump([dict(g, host="old.grant.test") for g in saved
                       if g["host"] == "own-r1.grant.test"], f)
        self.assertEqual(self.restart_r1(), {"old.grant.test"})
        with open(own) as f:
            self.assertEqual([g["host"] for g in json.load(f)["grants"]],
                             ["old.grant.test"])

    def test_9a_grants_json_is_taken_once(self):
        """grants.json was left in the folder once taken and never
        written again: a replica that took it later (one whose own file
        was lost, or one added) brought back a grant revoked since on
        every replica. The first replica to take it renames it; no other
        takes it, and the taken file goes once the own file is saved."""
        W["proxies"][1].stop()
        if os.path.exists(os.path.join(W["dir"], "grants-r2.json")):
            os.unlink(os.path.join(W["dir"], "grants-r2.json"))
        try:
            self.assertNotIn("old.grant.test", self.restart(1))
        finally:
            W["proxies"][1].stop()     # stopped since test_4, as before
        self.assertFalse(os.path.exists(os.path.join(W["dir"],
                                                     "grants.json")))
        self.assertEqual([f for f in os.listdir(W["dir"]) if ".taken" in f],
                         [])

    def test_9b_taken_grants_keep_their_revokes(self):
        """A revoke grants.json could not take, kept in
        grants.json.revoked, was dropped when a replica took grants.json:
        it read its own revokes file instead. The take reads them where
        they are (they stay there, for the file's next take)."""
        W["proxies"][0].stop()
        os.unlink(os.path.join(W["dir"], "grants-r1.json"))
        now = time.time()
        with open(os.path.join(W["dir"], "grants.json"), "wb") as f:
            f.write(old_grants("old.grant.test", "old-kept.grant.test"))
        with open(os.path.join(W["dir"], "grants.json.revoked"), "w") as f:
            f.write("\n" + json.dumps({"sandbox": SBX,
                                       "host": "old.grant.test",
                                       "port": 443,
                                       "revoked": int(now)}) + "\n")
        self.assertEqual(self.restart(0), {"old-kept.grant.test"})
        self.assertEqual(sorted(f for f in os.listdir(W["dir"])
                                if f.startswith("grants.json")),
                         ["grants.json.revoked"])
        os.unlink(os.path.join(W["dir"], "grants.json.revoked"))

    def test_9bb_taken_file_left_by_a_crash(self):
        """atk44d E3: a start killed after the save of its own file and
        before the removal of the file it took (SANDGATE_TEST_CRASH=
        grants:saved) left grants.json.taken-by-r1 for good; a later
        start with no file of its own (here: lost) took it again, and a
        grant revoked since was in force again. The next start removes
        it: its own file holds what the taken one held."""
        p, _ = self.crash_after_take()
        own = os.path.join(W["dir"], "grants-r1.json")
        taken = os.path.join(W["dir"], "grants.json.taken-by-r1")
        self.assertTrue(os.path.exists(own), "no save before the crash")
        self.assertEqual(self.restart(0),
                         {"old-a.grant.test", "old-b.grant.test"})
        self.assertFalse(os.path.exists(taken),
                         "the taken file left by the crash is still there")
        self.assertIn("grants.json.taken-by-r1: left by a start that "
                      "stopped before removing it", p.stderr())
        self.revoke_then_lose_own(p, "old-b.grant.test")
        self.assertEqual(sorted(f for f in os.listdir(W["dir"])
                                if f.startswith("grants.json")), [])

    def crash_after_take(self):
        """r1 with no file of its own takes grants.json (old-a, old-b)
        and is killed between the save of grants-r1.json and the removal
        of grants.json.taken-by-r1: both files are left."""
        p = W["proxies"][0]
        p.stop()
        self.clean_r1()
        with open(os.path.join(W["dir"], "grants.json"), "wb") as f:
            f.write(old_grants("old-a.grant.test", "old-b.grant.test"))
        p.env["SANDGATE_TEST_CRASH"] = "grants:saved"
        try:
            with self.assertRaises(proxylib.ProxyError):
                p.start()
        finally:
            p.env.pop("SANDGATE_TEST_CRASH", None)
        taken = os.path.join(W["dir"], "grants.json.taken-by-r1")
        self.assertTrue(os.path.exists(taken), "no taken file left")
        with open(taken, "rb") as f:
            return p, f.read()

    def clean_r1(self):
        """No grants file of r1's, taken or kept, nor grants.json."""
        for f in os.listdir(W["dir"]):
            path = os.path.join(W["dir"], f)
            if f.startswith(("grants-r1.json", "grants.json")):
                if os.path.isdir(path):
                    os.rmdir(path)
                else:
                    os.unlink(path)

    def test_9bc_taken_file_kept_while_revokes_are_damaged(self):
        """atk45a F1: a start whose own revokes file has a damaged line
        uses no grant and saves nothing (a save would empty that file);
        the removal of a taken file left by a crash saved anyway: the
        revokes were emptied, grants-r1.json written with no grant, and
        after the revokes file was repaired no grant came back."""
        p, data = self.crash_after_take()
        own = os.path.join(W["dir"], "grants-r1.json")
        with open(own, "rb") as f:
            saved = f.read()
        tomb = own + ".revoked"
        with open(tomb, "ab") as f:
            f.write(b'{"damaged revoke line\n')
        try:
            self.assertEqual(self.restart(0), set())
            with open(own, "rb") as f:
                self.assertEqual(f.read(), saved, "grants-r1.json saved")
            self.assertEqual(self.taken_kept(), [data])
            p.stop()
            with open(tomb, "wb") as f:     # an admin repairs it
                f.write(b"")
            self.assertEqual(self.restart(0),
                             {"old-a.grant.test", "old-b.grant.test"})
            self.assertFalse(os.path.exists(os.path.join(
                W["dir"], "grants.json.taken-by-r1")))
        finally:
            p.stop()
            self.clean_r1()
            self.restart(0)

    def test_9bd_taken_file_kept_when_the_own_file_is_damaged(self):
        """atk45a F2: the taken file was removed because grants-r1.json
        was there, though it was empty and no grant of it was used: the
        one whole record of the grants went. It stays, and a start with
        no own file takes it again."""
        p, data = self.crash_after_take()
        own = os.path.join(W["dir"], "grants-r1.json")
        with open(own, "wb"):
            pass
        try:
            self.assertEqual(self.restart(0), set())
            self.assertEqual(self.taken_kept(), [data],
                             "the taken file went with the own file empty")
            # atk45c N1: the start after (its own file saved whole
            # meanwhile) removed a taken file left in place
            self.assertEqual(self.restart(0), set())
            self.assertEqual(self.taken_kept(), [data])
        finally:
            p.stop()
            self.clean_r1()
            self.restart(0)

    def test_9bf_taken_file_kept_is_not_taken_again(self):
        """atk45c N2: a start that could not use its own file whole (a
        grant of it refused) left the taken file in place; a grant
        revoked later, then the own file lost, and the next start took
        the taken file again: the revoked grant was in force."""
        p, data = self.crash_after_take()
        self.refuse_in_own("old-b.grant.test")
        try:
            self.assertEqual(self.restart(0), {"old-a.grant.test"})
            self.revoke_then_lose_own(p, "old-a.grant.test")
            self.assertEqual(self.taken_kept(), [data])
        finally:
            p.stop()
            self.clean_r1()
            self.restart(0)

    def refuse_in_own(self, host):
        """grants-r1.json's grant of host made one the next start
        refuses (given in 2099)."""
        own = os.path.join(W["dir"], "grants-r1.json")
        with open(own) as f:
            top = json.load(f)
        for g in top["grants"]:
            if g["host"] == host:
                g["granted"] = "2099-01-01T00:00:00Z"
        with open(own, "w") as f:
            json.dump(top, f)

    def revoke_then_lose_own(self, p, host, left=frozenset()):
        """r1 (p, running) revokes SBX's grant of host; then stopped, its
        grants-r1.json lost and started again, it has the grants left
        (none unless said)."""
        status, body = proxylib.control(
            os.path.join(W["dir"], "r1.sock"), "POST", "/grants/revoke", {
                "sandbox": SBX, "host": host, "port": 443, "by": "test"})
        self.assertEqual(status, 200, body)
        p.stop()
        os.unlink(os.path.join(W["dir"], "grants-r1.json"))
        self.assertEqual(self.restart(0), set(left),
                         "a grant revoked since came back")

    def taken_kept(self):
        """The bytes of each copy of grants.json.taken-by-r1 kept (none
        of them is taken again), and no taken file left."""
        self.assertFalse(os.path.exists(os.path.join(
            W["dir"], "grants.json.taken-by-r1")), "the taken file stays")
        kept = []
        for f in sorted(os.listdir(W["dir"])):
            if f.startswith("grants.json.taken-by-r1.unused-"):
                with open(os.path.join(W["dir"], f), "rb") as fh:
                    kept.append(fh.read())
        return kept

    def test_9be_take_kept_while_its_revokes_are_damaged(self):
        """atk45a F3: a replica taking grants.json whose revokes file has
        a damaged line uses no grant of it; when no copy of it could be
        kept either, the take saved at once, which removed the taken file
        and its revokes: the grants were on no file. The taken file now
        stays until a start can use it."""
        p, old, planted = self.damaged_take()
        taken = os.path.join(W["dir"], "grants.json.taken-by-r1")
        try:
            self.assertEqual(self.restart(0), set())
            self.assertTrue(os.path.exists(taken), "the taken file is lost")
            with open(taken, "rb") as f:
                self.assertEqual(f.read(), old)
            p.stop()
            planted = self.unplant(planted)
            with open(os.path.join(W["dir"], "grants.json.revoked"),
                      "wb") as f:   # repaired
                f.write(b"")
            self.assertEqual(self.restart(0),
                             {"old-a.grant.test", "old-b.grant.test"})
            self.assertFalse(os.path.exists(taken))
        finally:
            p.stop()
            self.unplant(planted)
            self.clean_r1()
            self.restart(0)

    def damaged_take(self):
        """r1 stopped with no file of its own, grants.json (old-a, old-b)
        with a damaged line in its revokes, and no copy of the taken file
        can be kept (plant_unused): r1, the old bytes, what was planted."""
        p = W["proxies"][0]
        p.stop()
        self.clean_r1()
        old = old_grants("old-a.grant.test", "old-b.grant.test")
        with open(os.path.join(W["dir"], "grants.json"), "wb") as f:
            f.write(old)
        with open(os.path.join(W["dir"], "grants.json.revoked"), "wb") as f:
            f.write(b'{"damaged revoke line\n')
        return p, old, self.plant_unused()

    def plant_unused(self, base="grants.json.taken-by-r1"):
        """A folder at each name a copy of base could take for the next
        20 s: none can be kept (the list, to unplant)."""
        t0 = int(time.time())
        planted = []
        for t in range(t0, t0 + 20):
            for i in range(100):
                planted.append(os.path.join(
                    W["dir"], "%s.unused-%d%s" %
                    (base, t, "-%d" % i if i else "")))
                os.mkdir(planted[-1])
        return planted

    def unplant(self, planted):
        for d in planted:
            os.rmdir(d)
        return []

    def revoke_line(self, host):
        """A line of a revokes file the single proxy kept: SBX's grant of
        host on port 443 revoked now."""
        return "\n" + json.dumps({"sandbox": SBX, "host": host,
                                  "port": 443,
                                  "revoked": int(time.time())}) + "\n"

    def test_9bg_take_reads_revokes_it_cannot_move(self):
        """atk45d K4: a take whose grants.json.revoked could not be
        renamed beside the taken file (here immutable; any EPERM, EBUSY)
        loaded the grants without those revokes and saved them: a grant
        revoked by the single proxy was in force again for good. The
        revokes are read where they are."""
        p = W["proxies"][0]
        p.stop()
        self.clean_r1()
        with open(os.path.join(W["dir"], "grants.json"), "wb") as f:
            f.write(old_grants("old-a.grant.test", "old-b.grant.test"))
        tomb = os.path.join(W["dir"], "grants.json.revoked")
        with open(tomb, "w") as f:
            f.write(self.revoke_line("old-a.grant.test"))
        if not chattr("+i", tomb):
            self.restart(0)
            self.skipTest("chattr +i is refused here")
        try:
            self.assertEqual(self.restart(0), {"old-b.grant.test"})
            self.assertEqual(self.restart(0), {"old-b.grant.test"},
                             "the revoked grant was saved")
        finally:
            chattr("-i", tomb)
            p.stop()
            self.clean_r1()
            self.restart(0)

    def test_9bh_taken_file_beside_revokes_not_moved(self):
        """atk45d K5: a start killed between the rename of grants.json
        and that of its revokes left grants.json.taken-by-r1 with
        grants.json.revoked; the next start took the file with no
        revokes, and a revoked grant was in force again for good."""
        p = W["proxies"][0]
        p.stop()
        self.clean_r1()
        with open(os.path.join(W["dir"], "grants.json.taken-by-r1"),
                  "wb") as f:
            f.write(old_grants("old-a.grant.test", "old-b.grant.test"))
        with open(os.path.join(W["dir"], "grants.json.revoked"), "w") as f:
            f.write(self.revoke_line("old-a.grant.test"))
        try:
            self.assertEqual(self.restart(0), {"old-b.grant.test"})
            self.assertEqual(self.restart(0), {"old-b.grant.test"})
            self.assertEqual(sorted(f for f in os.listdir(W["dir"])
                                    if f.startswith("grants.json")),
                             ["grants.json.revoked"])
        finally:
            p.stop()
            self.clean_r1()
            self.restart(0)

    def test_9bi_taken_file_that_stays_keeps_later_revokes(self):
        """atk45d K1: where the taken file could be neither removed nor
        kept as a copy it stayed, a later revoke went to the own file
        alone, and once that was lost the next start took the taken file
        again: the revoked grant was in force. Each revoke is now kept
        beside the taken file too."""
        p, data = self.crash_after_take()
        self.refuse_in_own("old-b.grant.test")
        planted = self.plant_unused()
        try:
            self.assertEqual(self.restart(0), {"old-a.grant.test"})
            planted = self.unplant(planted)
            self.revoke_then_lose_own(p, "old-a.grant.test",
                                      {"old-b.grant.test"})
        finally:
            p.stop()
            self.unplant(planted)
            self.clean_r1()
            self.restart(0)

    def test_9bj_taken_file_not_kept_outlives_a_grant(self):
        """atk45d K2: a take that could use nothing of grants.json (its
        revokes damaged) and keep no copy of it left the file in place,
        but the first grant's save removed it with its revokes: the
        grants were on no file. It stays until a start can keep it."""
        p, old, planted = self.damaged_take()
        taken = os.path.join(W["dir"], "grants.json.taken-by-r1")
        try:
            self.assertEqual(self.restart(0), set())
            self.grant_own_c()
            self.assertTrue(os.path.exists(taken),
                            "the grant's save removed the taken file")
            planted = self.unplant(planted)
            self.assertEqual(self.restart(0), {"own-c.grant.test"})
            self.assertEqual(self.taken_kept(), [old])
        finally:
            p.stop()
            self.unplant(planted)
            self.clean_r1()
            self.restart(0)

    def test_9bk_taken_file_kept_past_a_crash_in_the_own_files_save(self):
        """atk45d K3: a start that found its own file damaged saved what
        was in force over it and was killed before it set the taken file
        aside; the next start found a whole own file and removed the
        taken file, the one record of its grants. A taken file goes only
        beside an own file that says it took it."""
        p, data = self.crash_after_take()
        with open(os.path.join(W["dir"], "grants-r1.json"), "wb"):
            pass
        p.env["SANDGATE_TEST_CRASH"] = "grants:saved"
        try:
            with self.assertRaises(proxylib.ProxyError):
                p.start()
            p.env.pop("SANDGATE_TEST_CRASH", None)
            self.assertEqual(self.restart(0), set())
            self.assertEqual(self.taken_kept(), [data])
        finally:
            p.env.pop("SANDGATE_TEST_CRASH", None)
            p.stop()
            self.clean_r1()
            self.restart(0)

    def test_9bl_taken_file_kept_past_a_failed_rename(self):
        """atk45d K3b: the same when the taken file's rename to a copy
        failed once: it stayed, and the next start removed it."""
        p, data = self.crash_after_take()
        with open(os.path.join(W["dir"], "grants-r1.json"), "wb"):
            pass
        planted = self.plant_unused()
        try:
            self.assertEqual(self.restart(0), set())
            planted = self.unplant(planted)
            self.assertEqual(self.restart(0), set())
            self.assertEqual(self.taken_kept(), [data])
        finally:
            p.stop()
            self.unplant(planted)
            self.clean_r1()
            self.restart(0)

    def held(self, data):
        """The names of the files in the folder holding data."""
        found = []
        for f in sorted(os.listdir(W["dir"])):
            path = os.path.join(W["dir"], f)
            if os.path.isfile(path):
                with open(path, "rb") as fh:
                    if fh.read() == data:
                        found.append(f)
        return found

    def grant_own_c(self):
        """r1 (running) grants SBX own-c.grant.test for 10 minutes."""
        status, body = proxylib.control(
            os.path.join(W["dir"], "r1.sock"), "POST", "/grants", {
                "sandbox": SBX, "host": "own-c.grant.test", "port": 443,
                "seconds": 600, "rationale": "after", "by": "test"})
        self.assertEqual(status, 200, body)

    def refused_take(self, *hosts):
        """r1 stopped with no file of its own, grants.json holding hosts,
        the second given in 2099 (refused at the take), and no copy of the
        taken file can be kept (plant_unused): r1, the bytes, what was
        planted."""
        p = W["proxies"][0]
        p.stop()
        self.clean_r1()
        top = json.loads(old_grants(*hosts))
        top[1]["granted"] = "2099-01-01T00:00:00Z"
        data = json.dumps(top).encode()
        with open(os.path.join(W["dir"], "grants.json"), "wb") as f:
            f.write(data)
        return p, data, self.plant_unused()

    def chattr_or_skip(self, flag, path):
        """chattr FLAG path; the test skipped where it is refused."""
        if not chattr(flag, path):
            self.skipTest("chattr %s is refused here" % flag)

    def test_9bm_taken_file_that_cannot_be_removed_stays(self):
        """atk46a L1: when the removal of the taken file after the save
        failed (here immutable), it was forgotten, a later revoke did not
        reach it, and a start with the own file lost took it again: the
        revoked grant was in force. It stays instead."""
        p, data = self.crash_after_take()
        taken = os.path.join(W["dir"], "grants.json.taken-by-r1")
        self.chattr_or_skip("+i", taken)
        try:
            self.assertEqual(self.restart(0),
                             {"old-a.grant.test", "old-b.grant.test"})
            self.revoke_then_lose_own(p, "old-a.grant.test",
                                      {"old-b.grant.test"})
        finally:
            chattr("-i", taken)
            p.stop()
            self.clean_r1()
            self.restart(0)

    def test_9bn_taken_file_is_not_replaced_by_a_later_take(self):
        """atk46a L2: a taken file that stays (a grant of it refused, no
        copy kept) was replaced by the next take of a newer grants.json
        (a single proxy ran between): its bytes were on no file. The
        take takes the file already there again, and leaves grants.json."""
        p, data, planted = self.refused_take("old-a.grant.test",
                                             "old-b.grant.test")
        try:
            self.assertEqual(self.restart(0), {"old-a.grant.test"})
            p.stop()
            planted = self.unplant(planted)
            newer = old_grants("old-n.grant.test")
            with open(os.path.join(W["dir"], "grants.json"), "wb") as f:
                f.write(newer)
            self.assertEqual(self.restart(0), {"old-a.grant.test"})
            self.assertNotEqual(self.held(data), [],
                                "the taken file's bytes are on no file")
            self.assertEqual(self.held(newer), ["grants.json"])
        finally:
            p.stop()
            self.unplant(planted)
            self.clean_r1()
            self.restart(0)

    def test_9bo_revokes_of_a_file_not_taken_stay_with_it(self):
        """atk46a L3: a start that found its old taken file moved the
        revokes of grants.json beside it though grants.json itself could
        not be taken (immutable), and removed them with that file: a
        later take of grants.json had the revoked grant in force."""
        p = W["proxies"][0]
        p.stop()
        self.clean_r1()
        with open(os.path.join(W["dir"], "grants.json.taken-by-r1"),
                  "wb") as f:
            f.write(old_grants("old-1.grant.test"))
        old = os.path.join(W["dir"], "grants.json")
        with open(old, "wb") as f:
            f.write(old_grants("old-a.grant.test", "old-b.grant.test"))
        with open(old + ".revoked", "w") as f:
            f.write(self.revoke_line("old-a.grant.test"))
        self.chattr_or_skip("+i", old)
        try:
            self.assertEqual(self.restart(0), {"old-1.grant.test"})
            p.stop()
            chattr("-i", old)
            os.unlink(os.path.join(W["dir"], "grants-r1.json"))
            self.assertEqual(self.restart(0), {"old-b.grant.test"},
                             "grants.json was taken without its revokes")
        finally:
            chattr("-i", old)
            p.stop()
            self.clean_r1()
            self.restart(0)

    def test_9bp_floor_save_keeps_a_taken_file_that_stays(self):
        """atk46a L4: the save the policy's floor made inside the take's
        load (a grant the policy no longer allows, ended) removed the
        taken file that was to stay (a grant refused, no copy kept): its
        bytes were on no file."""
        p, data, planted = self.refused_take(
            "old-a.grant.test", "old-b.grant.test", "old-p.other.test")
        try:
            self.assertEqual(self.restart(0), {"old-a.grant.test"})
            self.assertEqual(self.held(data), ["grants.json.taken-by-r1"])
        finally:
            p.stop()
            self.unplant(planted)
            self.clean_r1()
            self.restart(0)

    def test_9bq_revoke_kept_beside_the_taken_file_before_the_save(self):
        """atk46a L5: a revoke was kept beside a taken file that stays
        only after the own file's save, so a kill between the two (here
        SANDGATE_TEST_CRASH=grants:saved at the revoke's save, the start
        making none: no copy of either file can be kept) and the own
        file lost brought the revoked grant back."""
        p, data = self.crash_after_take()
        self.refuse_in_own("old-b.grant.test")
        planted = self.plant_unused() + self.plant_unused("grants-r1.json")
        sock = os.path.join(W["dir"], "r1.sock")
        try:
            p.env["SANDGATE_TEST_CRASH"] = "grants:saved"
            p.stop()
            p.start()
            proxylib.wait_unix_socket(sock)
            try:
                proxylib.control(sock, "POST", "/grants/revoke", {
                    "sandbox": SBX, "host": "old-a.grant.test",
                    "port": 443, "by": "test"})
            except (OSError, ValueError):
                pass            # killed before it answered
            p.env.pop("SANDGATE_TEST_CRASH", None)
            p.stop()
            planted = self.unplant(planted)
            os.unlink(os.path.join(W["dir"], "grants-r1.json"))
            self.assertEqual(self.restart(0), {"old-b.grant.test"},
                             "a revoke saved came back")
        finally:
            p.env.pop("SANDGATE_TEST_CRASH", None)
            p.stop()
            self.unplant(planted)
            self.clean_r1()
            self.restart(0)

    def test_9br_damaged_revokes_of_a_taken_file_are_kept(self):
        """atk46a L7: a take whose revokes were damaged kept a copy of
        grants.json, and the first grant's save removed the taken file
        with the revokes, moved beside it: no file held them. They are
        never moved now, and stay for an admin to repair."""
        p = W["proxies"][0]
        p.stop()
        self.clean_r1()
        with open(os.path.join(W["dir"], "grants.json"), "wb") as f:
            f.write(old_grants("old-a.grant.test", "old-b.grant.test"))
        damaged = self.revoke_line("old-a.grant.test").encode() + \
            b'{"damaged revoke line\n'
        with open(os.path.join(W["dir"], "grants.json.revoked"), "wb") as f:
            f.write(damaged)
        try:
            self.assertEqual(self.restart(0), set())
            self.grant_own_c()
            self.assertEqual(self.held(damaged), ["grants.json.revoked"])
        finally:
            p.stop()
            self.clean_r1()
            self.restart(0)

    def test_9bs_revoke_not_kept_beside_the_taken_file_is_unsaved(self):
        """atk46c M2: a revoke that could not be recorded beside a taken
        file that stays (its revokes file immutable here) was answered
        saved, and a start with the own file lost had it in force. The
        answer says it is not saved."""
        p, data = self.crash_after_take()
        self.refuse_in_own("old-b.grant.test")
        planted = self.plant_unused()
        tomb = os.path.join(W["dir"], "grants.json.taken-by-r1.revoked")
        try:
            self.assertEqual(self.restart(0), {"old-a.grant.test"})
            planted = self.unplant(planted)
            self.assertTrue(os.path.exists(tomb), "no room made beside it")
            self.chattr_or_skip("+i", tomb)
            status, body = proxylib.control(
                os.path.join(W["dir"], "r1.sock"), "POST",
                "/grants/revoke", {"sandbox": SBX, "host": "old-a.grant.test",
                                   "port": 443, "by": "test"})
            self.assertEqual((status, body.get("saved"),
                              body.get("saved_beside_taken")),
                             (200, False, False), body)
        finally:
            chattr("-i", tomb)
            p.stop()
            self.unplant(planted)
            self.clean_r1()
            self.restart(0)

    def test_9c_each_replica_keeps_its_own_registry(self):
        """registry.json was one file for the replicas of a folder, the
        last saver's: r1 restarted with r3's registrations and not its
        own. Each now keeps registry-NAME.json."""
        for i, name in ((0, "r1"), (2, "r3")):
            status, body = proxylib.control(
                os.path.join(W["dir"], name + ".sock"), "POST", "/register",
                {"address": "127.0.0.%d" % (31 + i),
                 "sandbox": "sbx_only_" + name, "sets": "test"})
            self.assertEqual(status, 200, body)
        self.restart(0)
        status, body = proxylib.control(os.path.join(W["dir"], "r1.sock"),
                                        "GET", "/status")
        self.assertEqual(status, 200, body)
        held = json.dumps(body)
        self.assertIn("sbx_only_r1", held)
        self.assertNotIn("sbx_only_r3", held)

    def restart_r1(self):
        return self.restart(0)

    def restart(self, i):
        """Restart replica i; the own-* and old*.grant.test grants it
        holds."""
        p = W["proxies"][i]
        sock = os.path.join(W["dir"], NAMES[i] + ".sock")
        p.stop()
        p.start()
        proxylib.wait_unix_socket(sock)
        status, body = proxylib.control(sock, "GET", "/grants?sandbox=" +
                                        SBX)
        self.assertEqual(status, 200, body)
        return {g["host"] for g in body["grants"]
                if g["host"].startswith(("own-", "old"))}


class SaveBlocked(proxylib.Proxy):
    """A replica r1 whose saves of grants-r1.json fail while blocked: the
    path of its temporary file (named by its pid) is a folder, made by
    the shell it is exec'd from (so under its pid) before it starts."""

    blocked = True
    own = "grants-r1.json"

    def argv(self):
        own = os.path.join(self.sock_dir, self.own)
        if not self.blocked:
            return super().argv()
        return ["sh", "-c", 'mkdir "$0.$$.tmp" && exec "$@"', own] + \
            super().argv()


class RegistrySaveBlocked(SaveBlocked):
    """SaveBlocked, for the saves of registry-r1.json."""

    own = "registry-r1.json"


class RegistryApart(unittest.TestCase):
    """atk1921e F3: an /unregister whose registry save failed answered
    ok with no saved flag, was never tried again nor shown in /status,
    and a restart brought the removed sandbox back. Now, as the grants:
    saved:false unless kept apart (registry-r1.json.removed, which the
    next start applies), registry_saved in /status, and the save tried
    again every second."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="regapart-", dir=W["dir"])
        self.sock = os.path.join(self.dir, "r1.sock")
        with open(os.path.join(self.dir, "registry-r1.json"), "w") as f:
            json.dump([{"address": "127.0.0.5", "sandbox": "sbx_gone",
                        "sets": ["test"]}], f)
        p = RegistrySaveBlocked(self.dir, W["up"], name="p", extra_args=[
            "--instance", "r1", "--control-socket", self.sock])
        p.sock_dir = self.dir
        self.addCleanup(p.stop)   # not in W["proxies"]: Replicas' own
        self.p = p.start()
        proxylib.wait_unix_socket(self.sock)

    def status(self):
        status, body = proxylib.control(self.sock, "GET", "/status")
        self.assertEqual(status, 200, body)
        return body

    def unblock(self):
        for f in os.listdir(self.dir):
            if f.endswith(".tmp"):
                os.rmdir(os.path.join(self.dir, f))

    def unregister_apart(self):
        self.assertEqual([e["sandbox"] for e in self.status()["sandboxes"]],
                         ["sbx_gone"])
        status, body = proxylib.control(self.sock, "POST", "/unregister",
                                        {"sandbox": "sbx_gone"})
        self.assertEqual((status, body.get("saved"), body.get("saved_apart")),
                         (200, True, True), body)
        self.assertIs(self.status().get("registry_saved"), False)

    def test_unregister_kept_apart_survives_the_restart(self):
        self.unregister_apart()
        self.p.stop()
        self.unblock()
        self.p.blocked = False
        self.p.start()
        proxylib.wait_unix_socket(self.sock)
        self.assertEqual(self.status()["sandboxes"], [])

    def test_save_tried_again(self):
        self.unregister_apart()
        self.unblock()
        deadline = time.monotonic() + 20
        while not self.status().get("registry_saved") and \
                time.monotonic() < deadline:
            time.sleep(0.2)
        self.assertIs(self.status().get("registry_saved"), True)
        # emptied, its room kept (only blank lines left)
        with open(os.path.join(self.dir, "registry-r1.json.removed")) as f:
            self.assertEqual(f.read().strip(), "")
        with open(os.path.join(self.dir, "registry-r1.json")) as f:
            self.assertEqual(json.load(f)["sandboxes"], [])


def registered(sock):
    status, body = proxylib.control(sock, "GET", "/status")
    if status != 200:
        raise AssertionError("status: %r" % (body,))
    return sorted(e["sandbox"] for e in body["sandboxes"])


def run_records(state):
    path = os.path.join(state, "records", "runs.jsonl")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(x) for x in f if x.strip()]


class TwoReplicas(unittest.TestCase):
    """Two replicas d1, d2 of their own (TCP control, one token file)
    with SBX registered on both at 127.0.0.41; no tests of its own."""

    SBX = "sbx_d15ca4d0000000000000000a"
    PREFIX = "discard-"
    EXTRA = []

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix=self.PREFIX, dir=W["dir"])
        self.state = os.path.join(self.dir, "state")
        os.makedirs(os.path.join(self.state, "sandboxes"))
        self.socks, self.urls, self.ps = [], [], []
        for name in ("d1", "d2"):
            port = proxylib.free_port()
            sock = os.path.join(self.dir, name + ".sock")
            p = proxylib.Proxy(self.dir, W["up"], name=name, extra_args=[
                "--instance", name, "--control-socket", sock,
                "--control-listen", "127.0.0.1:%d" % port,
                "--control-token-file", W["tokfile"]] + self.EXTRA)
            p.log_path = os.path.join(p.log_dir,
                                      "security-events.%s.jsonl" % name)
            self.addCleanup(p.stop)
            self.ps.append(p.start())
            proxylib.wait_unix_socket(sock)
            self.socks.append(sock)
            self.urls.append("http://127.0.0.1:%d" % port)
            status, body = proxylib.control(sock, "POST", "/register", {
                "address": "127.0.0.41", "sandbox": self.SBX,
                "sets": "test"})
            self.assertEqual(status, 200, body)

    def sandgate(self, args, urls):
        env = {"SANDGATE_STATE": self.state,
               "SANDGATE_PROXY_CONTROL_TOKEN_FILE": W["tokfile"]}
        if urls is not None:
            env["SANDGATE_PROXY_CONTROL"] = ",".join(urls)
        return subprocess.run(
            [os.path.join(proxylib.BIN, "sandgate")] + args,
            capture_output=True, text=True, timeout=120,
            env=proxylib.clean_env(env))


class DiscardOwed(TwoReplicas):
    """atk1921f F3: `sandgate discard` exited 0 and said nothing when its
    /unregister did not reach a replica, or was answered saved: false:
    that replica kept letting the discarded sandbox's token and address
    through. Now discard says so on stderr, exits 125, keeps the
    unregister in $SANDGATE_STATE/unregister/ID with a
    sandbox.unregister_pending run record, and gc sends it again until
    every replica confirms it."""

    def owed(self):
        return os.path.join(self.state, "unregister", self.SBX)

    def test_every_replica_confirms(self):
        r = self.sandgate(["discard", self.SBX], self.urls)
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        self.assertEqual([registered(s) for s in self.socks], [[], []])
        self.assertFalse(os.path.exists(self.owed()))

    def test_replica_away_is_said_kept_and_sent_again(self):
        self.ps[1].stop()
        r = self.sandgate(["discard", self.SBX], self.urls)
        self.assertEqual(r.returncode, 125, r.stderr)
        self.assertIn("not every proxy replica confirmed its unregister",
                      r.stderr)
        self.assertIn(self.urls[1], r.stderr)
        self.assertNotIn(self.urls[0] + " (", r.stderr)
        self.assertTrue(os.path.exists(self.owed()), r.stderr)
        self.assertEqual(registered(self.socks[0]), [])
        ev = [e for e in run_records(self.state)
              if e.get("event") == "sandbox.unregister_pending"]
        self.assertEqual([e["sandbox"] for e in ev], [self.SBX])
        self.assertIn(self.urls[1], ev[0]["detail"])
        # d2 comes back with its registry: the sandbox in it, until gc.
        self.ps[1].start()
        proxylib.wait_unix_socket(self.socks[1])
        self.assertEqual(registered(self.socks[1]), [self.SBX])
        r = self.sandgate(["gc", "--dry-run"], self.urls)
        self.assertIn("would send again the unregister of removed "
                      "sandbox " + self.SBX, r.stdout)
        self.assertEqual(registered(self.socks[1]), [self.SBX])
        r = self.sandgate(["gc"], self.urls)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("unregistered removed sandbox " + self.SBX, r.stdout)
        self.assertEqual(registered(self.socks[1]), [])
        self.assertFalse(os.path.exists(self.owed()))
        self.assertIn("sandbox.unregistered", [
            e.get("event") for e in run_records(self.state)])

    def test_not_saved_is_said(self):
        """A replica that holds the removal but can save it nowhere
        (saved: false) would bring the sandbox back at its restart."""
        d1 = self.ps[0]
        d1.stop()
        os.unlink(os.path.join(self.dir, "registry-d1.json.removed"))
        os.mkdir(os.path.join(self.dir, "registry-d1.json.removed"))
        blocked = RegistrySaveBlocked(self.dir, W["up"], name="d1b",
                                      extra_args=d1.extra_args)
        blocked.own = "registry-d1.json"
        blocked.sock_dir = self.dir
        self.addCleanup(blocked.stop)
        blocked.start()
        proxylib.wait_unix_socket(self.socks[0])
        r = self.sandgate(["discard", self.SBX], self.urls)
        self.assertEqual(r.returncode, 125, r.stderr)
        self.assertIn(self.urls[0] + " (it holds the removal but could "
                      "not save it", r.stderr)
        self.assertNotIn(self.urls[1] + " (", r.stderr)
        self.assertTrue(os.path.exists(self.owed()))
        status, body = proxylib.control(self.socks[0], "GET", "/status")
        self.assertEqual((body["registry_saved"],
                          body["registry_removals_unkept"]), (False, 1))


class DiscardLocalStopped(unittest.TestCase):
    """atk1921g F1: with the local proxy stopped (its control socket at
    $SANDGATE_STATE/proxy/run/control.sock, which a stop unlinks) discard
    took the missing socket for "no proxy": exit 0, nothing kept, and the
    proxy's next start loaded its registry.json and served the discarded
    sandbox again. A missing socket beside a registry is now "not
    confirmed": exit 125, the unregister kept and sent again once the
    proxy is back. A host where no proxy ever ran still discards with 0."""

    SBX = "sbx_d15ca4d0000000000000000b"
    ADDR = "127.0.0.43"

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="discard-local-", dir=W["dir"])
        self.state = os.path.join(self.dir, "state")
        self.run_dir = os.path.join(self.state, "proxy", "run")
        os.makedirs(self.run_dir)
        os.makedirs(os.path.join(self.state, "sandboxes"))
        self.sock = os.path.join(self.run_dir, "control.sock")
        self.p = proxylib.Proxy(self.dir, W["up"], name="local", extra_args=[
            "--control-socket", self.sock])
        self.addCleanup(self.p.stop)

    def sandgate(self, args):
        return subprocess.run(
            [os.path.join(proxylib.BIN, "sandgate")] + args,
            capture_output=True, text=True, timeout=120,
            env=proxylib.clean_env({"SANDGATE_STATE": self.state}))

    def owed(self):
        return os.path.join(self.state, "unregister", self.SBX)

    def test_no_proxy_ever_is_nothing_to_forget(self):
        r = self.sandgate(["discard", self.SBX])
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        self.assertFalse(os.path.exists(self.owed()))

    def test_stopped_proxy_is_not_confirmed(self):
        self.p.start()
        proxylib.wait_unix_socket(self.sock)
        status, body = proxylib.control(self.sock, "POST", "/register", {
            "address": self.ADDR, "sandbox": self.SBX, "sets": "test"})
        self.assertEqual(status, 200, body)
        self.p.stop()
        self.assertFalse(os.path.exists(self.sock))
        r = self.sandgate(["discard", self.SBX])
        self.assertEqual(r.returncode, 125, r.stderr)
        self.assertIn("not every proxy replica confirmed its unregister",
                      r.stderr)
        self.assertTrue(os.path.exists(self.owed()), r.stderr)
        # back with its registry: the sandbox in it, until it is sent
        self.p.start()
        proxylib.wait_unix_socket(self.sock)
        self.assertEqual(registered(self.sock), [self.SBX])
        r = self.sandgate(["gc"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("unregistered removed sandbox " + self.SBX, r.stdout)
        self.assertEqual(registered(self.sock), [])
        self.assertFalse(os.path.exists(self.owed()))

    def test_stopped_proxy_without_it_is_nothing_to_forget(self):
        """A stopped proxy whose registry names other sandboxes only (this
        one never registered: --network none) has nothing to forget of it:
        discard exits 0 and keeps nothing (CI: test_audit_runs' discard of
        a --network none sandbox after a proxy stop exited 125)."""
        self.p.start()
        proxylib.wait_unix_socket(self.sock)
        status, body = proxylib.control(self.sock, "POST", "/register", {
            "address": self.ADDR, "sandbox": self.SBX + "1", "sets": "test"})
        self.assertEqual(status, 200, body)
        self.p.stop()
        r = self.sandgate(["discard", self.SBX])
        self.assertEqual((r.returncode, r.stderr), (0, ""))
        self.assertFalse(os.path.exists(self.owed()))

    def test_fifo_in_its_folder_hangs_nothing(self):
        """atk1921i F5: a FIFO among the stopped proxy's files (its own
        folder, written by its uid) hung discard and gc: opened to be read
        as a registry. What cannot be read as a file names the sandbox:
        not confirmed, kept, said; nothing waits."""
        os.mkfifo(os.path.join(self.run_dir, "registry-x.json"))
        for args in (["discard", self.SBX], ["gc"]):
            r = subprocess.run(
                [os.path.join(proxylib.BIN, "sandgate")] + args,
                capture_output=True, text=True, timeout=30,
                env=proxylib.clean_env({"SANDGATE_STATE": self.state}))
            self.assertEqual(r.returncode, 125, r.stderr)
        self.assertTrue(os.path.exists(self.owed()))


def answering(test, answer):
    """A replica stand-in on loopback answering each GET and POST with
    answer(method, path) -> (status, JSON object), shut down with test;
    its URL."""

    class Answer(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            code, r = answer(self.command, self.path.split("?")[0])
            body = json.dumps(r).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST

        def log_message(self, *args):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    test.addCleanup(srv.server_close)
    test.addCleanup(srv.shutdown)
    return "http://127.0.0.1:%d" % srv.server_address[1]


class ReplicaWordsEscaped(unittest.TestCase):
    """atk1921i F13: a replica's /unregister refusal text reached the
    operator's terminal raw (an erase-line sequence, a forged
    `sandgate:` line, a title sequence) and the kept file verbatim. What a
    replica says is cut and escaped before it is shown or kept."""

    SBX = "sbx_e5c0e5c0000000000000000c"
    WORDS = ("busy\x1b[2K\r\nsandgate: unregistered %s from every proxy "
             "replica\x1b]0;pwned\x07" % SBX)

    def setUp(self):
        self.url = answering(self, lambda m, p: (503, {"error": self.WORDS}))
        self.state = tempfile.mkdtemp(prefix="words-", dir=W["dir"])

    def test_refusal_is_shown_escaped(self):
        url = self.url
        r = subprocess.run(
            [os.path.join(proxylib.BIN, "sandgate"), "discard", self.SBX],
            capture_output=True, text=True, timeout=60,
            env=proxylib.clean_env({
                "SANDGATE_STATE": self.state,
                "SANDGATE_PROXY_CONTROL": url,
                "SANDGATE_PROXY_CONTROL_TOKEN_FILE": W["tokfile"]}))
        self.assertEqual(r.returncode, 125, r.stderr)
        self.assertIn("HTTP 503: busy", r.stderr)
        for bad in ("\x1b", "\x07", "\r", "\nsandgate: unregistered"):
            self.assertNotIn(bad, r.stderr)
        with open(os.path.join(self.state, "unregister", self.SBX)) as f:
            kept = f.read()
        self.assertNotIn("\x1b", kept)
        self.assertEqual(len(kept.splitlines()), 3, kept)


class ReplicaAnswersEscaped(unittest.TestCase):
    """atk1921j F1: beside "error", a replica's other words reached the
    terminal raw: a grant's expiry, grants_unsaved_since, a reload's
    digest and errors. Every string taken from an answer is cut and
    escaped as its "error" is."""

    SBX = "sbx_e5c0e5c0000000000000000d"
    WORDS = ReplicaWordsEscaped.WORDS

    def serve(self, reload_code):
        words = self.WORDS

        def answer(method, path):
            if path == "/grants" and method == "POST":
                return 200, {"grant": {"expires": words}, "saved": True}
            if path == "/grants":
                return 200, {"grants": [], "grants_saved": False,
                             "grants_unsaved_since": words}
            return reload_code, {"digest": words, "errors": [words]}
        return answering(self, answer)

    def test_every_word_is_shown_escaped(self):
        state = tempfile.mkdtemp(prefix="answers-", dir=W["dir"])
        d = os.path.join(state, "sandboxes", self.SBX)
        os.makedirs(os.path.join(d, "runs"))
        open(os.path.join(d, "lock"), "w").close()
        with open(os.path.join(d, "meta.json"), "w") as f:
            json.dump({"source": state, "image": "test",
                       "container": "c" * 64, "network": "proxy",
                       "created": "2026-12-03T00:00:00Z"}, f)
        for code, args in (
                (200, ["grant", self.SBX, "x.test:443", "--for", "5m",
                       "--rationale", "t"]),
                (200, ["grants"]), (200, ["proxy", "reload"]),
                (400, ["proxy", "reload"])):
            r = subprocess.run(
                [os.path.join(proxylib.BIN, "sandgate")] + args,
                capture_output=True, text=True, timeout=60,
                env=proxylib.clean_env({
                    "SANDGATE_STATE": state,
                    "SANDGATE_PROXY_CONTROL": self.serve(code),
                    "SANDGATE_PROXY_CONTROL_TOKEN_FILE": W["tokfile"]}))
            out = r.stdout + r.stderr
            self.assertIn("busy\\x1b[2K", out, (args, out))
            for bad in ("\x1b", "\x07", "\r", "\nsandgate: unregistered"):
                self.assertNotIn(bad, out, (args, out))


class NoEnvironmentProxy(unittest.TestCase):
    """atk1921j F5: control calls followed the shell's http_proxy /
    all_proxy: the bearer control token went in clear text to that proxy
    instead of to the replica SANDGATE_PROXY_CONTROL names."""

    def test_control_calls_ignore_http_proxy(self):
        got = []

        class Record(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                got.append((self.path, self.headers.get("Authorization")))
                self.send_response(502)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST

            def log_message(self, *args):
                pass

        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Record)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        self.addCleanup(srv.shutdown)
        envproxy = "http://127.0.0.1:%d" % srv.server_address[1]
        state = tempfile.mkdtemp(prefix="envproxy-", dir=W["dir"])
        env = proxylib.clean_env({
            "SANDGATE_STATE": state,
            "SANDGATE_PROXY_CONTROL": "http://127.0.0.1:%d"
                                      % proxylib.free_port(),
            "SANDGATE_PROXY_CONTROL_TOKEN_FILE": W["tokfile"]})
        for var in ("http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"):
            env[var] = envproxy
        env.pop("no_proxy", None)
        env.pop("NO_PROXY", None)
        r = subprocess.run(
            [os.path.join(proxylib.BIN, "sandgate"), "discard",
             "sbx_e9e9e9e90000000000000001"], capture_output=True,
            text=True, timeout=60, env=env)
        self.assertEqual(r.returncode, 125, r.stderr)
        self.assertEqual(got, [])


class FakeDocker:
    """A Docker API on a unix socket (DOCKER_HOST) that lists the given
    containers of one sandbox and state (each {"role", "ip"}, a fresh
    one with an owner label naming a process that does not run),
    inspects and removes them; calls in self.log."""

    def __init__(self, folder, sandbox, state, ctrs):
        import re
        import socketserver
        self.ctrs, self.log = ctrs, []
        boot = open("/proc/sys/kernel/random/boot_id").read().strip()
        owner = "4190000 12345 %d %s 0" % (
            os.stat("/proc/self/ns/pid").st_ino, boot)
        fake = self

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def reply(self, code, obj=None):
                body = b"" if obj is None else json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Api-Version", "1.43")
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def labels(self, c):
                lab = {"sandgate.sandbox": sandbox, "sandgate.state": state,
                       "sandgate.role": c["role"]}
                if c["role"] == "fresh":
                    lab["sandgate.owner"] = owner
                return lab

            def one(self, method):
                path = re.sub(r"^/v1\.\d+", "", self.path)
                fake.log.append("%s %s" % (method, path.split("?")[0]))
                if path.startswith("/_ping"):
                    return self.reply(200, "OK")
                if path.startswith("/version"):
                    return self.reply(200, {"ApiVersion": "1.43"})
                if path.startswith("/containers/json"):
                    return self.reply(200, [{
                        "Id": cid, "Names": ["/x" + cid[:6]],
                        "State": "running", "Labels": self.labels(c)}
                        for cid, c in fake.ctrs.items()])
                m = re.match(r"^/containers/([0-9a-f]+)", path)
                if m and m.group(1) in fake.ctrs:
                    c = fake.ctrs[m.group(1)]
                    if method == "DELETE":
                        del fake.ctrs[m.group(1)]
                        return self.reply(204)
                    return self.reply(200, {
                        "Id": m.group(1), "State": {
                            "Running": True, "Status": "running", "Pid": 1},
                        "Config": {"Labels": self.labels(c)},
                        "NetworkSettings": {"Networks": {
                            "sandgate-internal": {"IPAddress": c["ip"]}}}})
                return self.reply(404, {"message": "no such thing"})

            def do_GET(self):
                self.one("GET")

            def do_DELETE(self):
                self.one("DELETE")

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.one("POST")

        class U(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
            daemon_threads = True

            def get_request(self):
                return super().get_request()[0], ("local", 0)
        self.path = os.path.join(folder, "docker.sock")
        self.srv = U(self.path, H)
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()

    def close(self):
        self.srv.shutdown()
        self.srv.server_close()


class FreshSweepLocalStopped(unittest.TestCase):
    """atk1921h F5 (the sweep): gc removed a dead `exec --fresh`'s
    container while the local proxy was stopped (its socket gone, its
    registry naming the container's address) without a word: the proxy's
    next start served the address as the sandbox's again. Now a stopped
    proxy whose files name the sandbox has not forgotten it: the
    container is left, said, and removed by the sweep once the proxy
    answers. Docker is a fake API (no container is made)."""

    SBX = "sbx_f5e55e000000000000000001"
    FRESH = "f" * 64

    def test_left_until_the_proxy_forgets_its_address(self):
        d = tempfile.mkdtemp(prefix="sweep-", dir=W["dir"])
        state = os.path.join(d, "state")
        sdir = os.path.join(state, "sandboxes", self.SBX)
        os.makedirs(os.path.join(sdir, "runs"))
        open(os.path.join(sdir, "lock"), "w").close()
        with open(os.path.join(sdir, "meta.json"), "w") as f:
            json.dump({"source": d, "image": "test", "container": "c" * 64,
                       "network": "proxy",
                       "created": "2026-12-03T00:00:00Z"}, f)
        run = os.path.join(state, "proxy", "run")
        os.makedirs(run)
        sock = os.path.join(run, "control.sock")
        docker = FakeDocker(d, self.SBX, state, {
            "c" * 64: {"role": "session", "ip": "127.0.0.44"},
            self.FRESH: {"role": "fresh", "ip": "127.0.0.45"}})
        self.addCleanup(docker.close)
        p = proxylib.Proxy(d, W["up"], name="local",
                           extra_args=["--control-socket", sock])
        self.addCleanup(p.stop)
        p.start()
        proxylib.wait_unix_socket(sock)
        for a, extra in (("127.0.0.44", False), ("127.0.0.45", True)):
            st, body = proxylib.control(sock, "POST", "/register", {
                "address": a, "sandbox": self.SBX, "sets": "test",
                "extra": extra})
            self.assertEqual(st, 200, body)
        p.stop()
        env = proxylib.clean_env({
            "SANDGATE_STATE": state, "DOCKER_HOST": "unix://" + docker.path,
            "SANDGATE_UID_DIR": os.path.join(d, "uids")})
        gc = [os.path.join(proxylib.BIN, "sandgate"), "gc"]
        r = subprocess.run(gc, capture_output=True, text=True, env=env,
                           timeout=60)
        self.assertIn("the fresh container ffffffffffff of %s is left"
                      % self.SBX, r.stderr)
        self.assertIn(self.FRESH, docker.ctrs)
        p.start()
        proxylib.wait_unix_socket(sock)
        r = subprocess.run(gc, capture_output=True, text=True, env=env,
                           timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("removed 1 fresh container of " + self.SBX, r.stdout)
        self.assertNotIn(self.FRESH, docker.ctrs)
        st, body = proxylib.control(sock, "GET", "/status")
        self.assertEqual([e.get("address") for e in body["sandboxes"]],
                         ["127.0.0.44"])


def run_through(p, password, src):
    """The run_id the replica p gives one request from src with password
    (its egress.allowed event), or why it refused it."""
    auth = base64.b64encode(b"sandgate:" + password.encode()).decode()
    host = "allowed.test:%d" % W["up"].http_port
    mark = p.mark()
    with socket.create_connection(("127.0.0.1", p.port), timeout=10,
                                  source_address=(src, 0)) as s:
        s.sendall(proxylib.get_request(
            "http://%s/t" % host, host, "Proxy-Authorization: Basic %s\r\n"
            "Connection: close\r\n" % auth))
        status = int(proxylib.read_until_closed(s).split(b" ", 2)[1])
    if status != 200:
        return "refused: HTTP %d" % status
    ev = p.wait_event(lambda e: e.get("event") in (
        "egress.allowed", "egress.blocked"), mark)
    if ev is None:
        raise AssertionError("no egress event from %s: %r" % (
            p.dir, p.log_lines()[mark:]))
    if ev["event"] == "egress.blocked":
        return "blocked: " + ev.get("reason", "?")
    return ev.get("run_id")


class ExecEndOwed(TwoReplicas):
    """Issues 19/21: an exec's POST /execs/end that a replica did not
    confirm was only warned of, and that replica kept accepting the
    finished run's credential (its attribution, its --exec grants) until
    the token expired, or for a hex credential until the sandbox was
    unregistered. Now the end is kept in $SANDGATE_STATE/execend/RUN (the
    sandbox, why) with a sandbox.exec_end_pending run record, and the
    sandbox's next exec/run, gc and proxy start send it again until every
    replica confirms it (sandbox.exec_ended); discard drops it. Here the
    exec's end reached d1 only and the end is kept as the controller keeps
    it (the exec itself needs Docker and the proxy container); gc and
    discard act on it through the same code as an exec's."""

    SBX = "sbx_e0ec0e0d000000000000000b"
    RUN = "run_e0ec0e0d0000000000000001"
    CRED = "e0" * 16
    PREFIX = "execend-"
    EXTRA = ["--log-allowed"]

    def setUp(self):
        super().setUp()
        for sock in self.socks:
            st, body = proxylib.control(sock, "POST", "/execs", {
                "token": self.CRED, "sandbox": self.SBX,
                "run_id": self.RUN})
            self.assertEqual(st, 200, body)
        st, body = proxylib.control(self.socks[0], "POST", "/execs/end",
                                    {"run_id": self.RUN})
        self.assertEqual((st, body["removed"]), (200, 1), body)
        os.makedirs(os.path.dirname(self.owed()), mode=0o700)
        with open(self.owed(), "w") as f:
            f.write("%s\n%s (unreachable)\n" % (self.SBX, self.urls[1]))

    def owed(self):
        return os.path.join(self.state, "execend", self.RUN)

    def test_gc_sends_the_kept_end_again(self):
        self.assertNotEqual(run_through(self.ps[0], self.CRED,
                                        "127.0.0.41"), self.RUN)
        self.assertEqual(run_through(self.ps[1], self.CRED, "127.0.0.41"),
                         self.RUN)
        r = self.sandgate(["gc", "--dry-run"], self.urls)
        self.assertIn("would send again the end of the proxy credential "
                      "of %s (%s)" % (self.RUN, self.SBX), r.stdout)
        self.assertTrue(os.path.exists(self.owed()))
        r = self.sandgate(["gc"], self.urls)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("ended the proxy credential of " + self.RUN, r.stdout)
        self.assertFalse(os.path.exists(self.owed()))
        self.assertNotEqual(run_through(self.ps[1], self.CRED,
                                        "127.0.0.41"), self.RUN)
        st, body = proxylib.control(self.socks[1], "POST", "/execs/end",
                                    {"run_id": self.RUN})
        self.assertEqual((st, body["removed"]), (200, 0), body)
        ev = [e for e in run_records(self.state)
              if e.get("event") == "sandbox.exec_ended"]
        self.assertEqual([e["sandbox"] for e in ev], [self.SBX])
        self.assertIn(self.RUN, ev[0]["detail"])

    def test_replica_still_away_keeps_it_and_says_so(self):
        self.ps[1].stop()
        r = self.sandgate(["gc"], self.urls)
        self.assertEqual(r.returncode, 125, r.stderr)
        self.assertIn("the end of the proxy credential of %s (%s) is still "
                      "owed" % (self.RUN, self.SBX), r.stderr)
        self.assertIn(self.urls[1], r.stderr)
        self.assertNotIn(self.urls[0] + " (", r.stderr)
        with open(self.owed()) as f:
            sbx, to, why = f.read().splitlines()
        self.assertEqual(sbx, self.SBX)
        self.assertEqual(to, "to " + self.urls[1])
        self.assertIn(self.urls[1], why)

    def test_discard_drops_it(self):
        r = self.sandgate(["discard", self.SBX], self.urls)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertFalse(os.path.exists(self.owed()))
        self.assertFalse(os.path.exists(os.path.join(
            self.state, "unregister", self.SBX)))


class OwedToItsReplicas(ExecEndOwed):
    """atk1921h F3: a kept exec end or unregister was "confirmed" by
    whatever replicas the retrying command named (a gc with d1 only
    deleted an end owed to d2, which kept the run's credential), and a
    discard without SANDGATE_PROXY_CONTROL exited 0, kept nothing and
    dropped the owed ends while every replica kept the sandbox. Now a
    sandbox's folder records the replicas it was registered with, a kept
    send names those that have not confirmed it, and each is cleared only
    by its own confirmation; one the command cannot reach or authenticate
    to stays kept, said, exit 125."""

    PREFIX = "owedto-"

    def setUp(self):
        super().setUp()
        with open(self.owed(), "w") as f:    # as execend_send keeps it
            f.write("%s\nto %s\n%s (unreachable)\n" % (
                self.SBX, self.urls[1], self.urls[1]))

    def unreg(self):
        return os.path.join(self.state, "unregister", self.SBX)

    def folder(self):
        """SBX's folder as create leaves it: the replicas it was
        registered with (no container: the rest is Docker's)."""
        d = os.path.join(self.state, "sandboxes", self.SBX)
        os.makedirs(d)
        with open(os.path.join(d, "replicas"), "w") as f:
            f.write(",".join(self.urls) + "\n")
        return d

    def test_exec_end_goes_to_the_replica_that_owes_it(self):
        r = self.sandgate(["gc"], self.urls[:1])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertFalse(os.path.exists(self.owed()))
        self.assertNotEqual(run_through(self.ps[1], self.CRED,
                                        "127.0.0.41"), self.RUN)

    def test_exec_end_kept_while_its_replica_is_away(self):
        self.ps[1].stop()
        r = self.sandgate(["gc"], self.urls[:1])
        self.assertEqual(r.returncode, 125, r.stderr)
        self.assertIn(self.urls[1], r.stderr)
        with open(self.owed()) as f:
            self.assertEqual(f.read().splitlines()[1], "to " + self.urls[1])

    def test_unregister_cleared_by_its_own_replica_only(self):
        self.folder()
        self.ps[1].stop()
        r = self.sandgate(["discard", self.SBX], self.urls)
        self.assertEqual(r.returncode, 125, r.stderr)
        self.assertTrue(os.path.exists(self.unreg()))
        self.assertTrue(os.path.exists(self.owed()))
        r = self.sandgate(["gc"], self.urls[:1])
        self.assertEqual(r.returncode, 125, r.stderr)
        self.assertIn("still owed", r.stderr)
        with open(self.unreg()) as f:
            self.assertEqual(f.read().splitlines()[1], "to " + self.urls[1])
        self.ps[1].start()
        proxylib.wait_unix_socket(self.socks[1])
        self.assertEqual(registered(self.socks[1]), [self.SBX])
        r = self.sandgate(["gc"], self.urls[:1])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(registered(self.socks[1]), [])
        self.assertFalse(os.path.exists(self.unreg()))
        self.assertFalse(os.path.exists(self.owed()))

    def test_second_discard_keeps_what_is_owed(self):
        """atk1921i F1: a second discard of a removed sandbox, run with
        fewer replicas (here none named), sent its unregister to those,
        took their answers for every replica's and forgot the unregister
        kept for the one away: exit 0, and that replica kept serving the
        sandbox. A discard sends to the replicas a kept send is owed to
        too."""
        self.folder()
        os.remove(self.owed())          # no exec end owed: only this
        self.ps[1].stop()
        r = self.sandgate(["discard", self.SBX], self.urls)
        self.assertEqual(r.returncode, 125, r.stderr)
        self.assertTrue(os.path.exists(self.unreg()))
        for urls in (self.urls[:1], None):
            r = self.sandgate(["discard", self.SBX], urls)
            self.assertEqual(r.returncode, 125, r.stderr)
            self.assertTrue(os.path.exists(self.unreg()), r.stderr)
            with open(self.unreg()) as f:
                self.assertEqual(f.read().splitlines()[1],
                                 "to " + self.urls[1])
        self.ps[1].start()
        proxylib.wait_unix_socket(self.socks[1])
        r = self.sandgate(["discard", self.SBX], None)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(registered(self.socks[1]), [])
        self.assertFalse(os.path.exists(self.unreg()))

    def test_discard_without_the_tier_reaches_its_replicas(self):
        self.folder()
        r = self.sandgate(["discard", self.SBX], None)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual([registered(s) for s in self.socks], [[], []])
        self.assertFalse(os.path.exists(self.owed()))

    def test_discard_that_cannot_authenticate_keeps_it(self):
        self.folder()
        env = {"SANDGATE_STATE": self.state}
        r = subprocess.run(
            [os.path.join(proxylib.BIN, "sandgate"), "discard", self.SBX],
            capture_output=True, text=True, timeout=120,
            env=proxylib.clean_env(env))
        self.assertEqual(r.returncode, 125, r.stderr)
        self.assertIn("SANDGATE_PROXY_CONTROL_TOKEN_FILE", r.stderr)
        self.assertTrue(os.path.exists(self.unreg()))
        self.assertTrue(os.path.exists(self.owed()))
        self.assertEqual([registered(s) for s in self.socks],
                         [[self.SBX], [self.SBX]])

    def test_gc_unregisters_a_folder_without_container(self):
        """atk1921h F5: gc removed such a folder (and with it the record
        of its replicas) without unregistering the sandbox."""
        d = self.folder()
        self.ps[1].stop()
        r = self.sandgate(["gc"], self.urls[:1])
        self.assertEqual(r.returncode, 125, r.stderr)
        self.assertIn("removed sandbox folder " + self.SBX, r.stdout)
        self.assertFalse(os.path.exists(d))
        self.assertEqual(registered(self.socks[0]), [])
        with open(self.unreg()) as f:
            self.assertEqual(f.read().splitlines()[1], "to " + self.urls[1])
        self.ps[1].start()
        proxylib.wait_unix_socket(self.socks[1])
        r = self.sandgate(["gc"], None)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(registered(self.socks[1]), [])
        self.assertFalse(os.path.exists(self.unreg()))


class HeldReplica:
    """A replica stand-in whose first POST /unregister is held until
    release() (self.arrived is set when it comes); every other request
    is answered at once, saved. Shut down with test."""

    def __init__(self, test):
        self.arrived, self.go, self.seen = (threading.Event(),
                                            threading.Event(), [])
        self.url = answering(test, self.answer)
        test.addCleanup(self.go.set)        # first: the held one ends

    def answer(self, method, path):
        self.seen.append(path)
        if len(self.seen) == 1:
            self.arrived.set()
            self.go.wait(120)
        return 200, {"ok": True, "removed": 0, "saved": True,
                     "saved_apart": False, "removals_unkept": 0}

    def release(self):
        self.go.set()


def waiting_on_a_lock(pid):
    """1 when process pid waits for a flock (/proc/locks "->")."""
    with open("/proc/locks") as f:
        return any("->" in x and str(pid) in x.split() for x in f)


class KeptSendsLocked(unittest.TestCase):
    """atk1921j F3: a `gc` whose retry of a kept unregister (to d2) was
    in flight unlinked the file by name once d2 confirmed, while a
    concurrent `discard` (d2, d3; d3 down) had just rewritten it to
    `to d3`: gc exit 0, nothing owed to d3, which kept the sandbox. Now a
    kept send is read, sent and forgotten or rewritten under one lock
    (owed.lock) that discard's own send takes too. d2 holds gc's answer
    until discard has either kept its send (before the fix) or waits for
    that lock (after)."""

    SBX = "sbx_f3f3f3f30000000000000001"

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="owedlock-", dir=W["dir"])
        self.state = os.path.join(self.dir, "state")
        self.d2 = HeldReplica(self)
        self.d3 = "http://127.0.0.1:%d" % proxylib.free_port()   # down
        os.makedirs(os.path.join(self.state, "unregister"), mode=0o700)
        with open(self.unreg(), "w") as f:      # as discard keeps it
            f.write("%s\nto %s\n%s (HTTP 503)\n" % (self.SBX, self.d2.url,
                                                     self.d2.url))

    def unreg(self):
        return os.path.join(self.state, "unregister", self.SBX)

    def start(self, args, urls):
        return subprocess.Popen(
            [os.path.join(proxylib.BIN, "sandgate")] + args,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=proxylib.clean_env({
                "SANDGATE_STATE": self.state,
                "SANDGATE_PROXY_CONTROL": ",".join(urls),
                "SANDGATE_PROXY_CONTROL_TOKEN_FILE": W["tokfile"]}))

    def test_retry_in_flight_keeps_what_discard_kept(self):
        self.race()

    def test_a_lock_that_cannot_be_taken(self):
        """atk1921k F1: a folder (or a symlink, or another user's file) at
        owed.lock made every command go on unlocked, and the race above
        lost the send again. Unlocked, a kept send is never removed nor
        rewritten: what discard kept for d3 stays (added beside it)."""
        os.mkdir(os.path.join(self.state, "owed.lock"))
        self.race()

    def test_a_lock_swapped_while_held(self):
        """atk1921l F4: gc held owed.lock, then it was swapped for a
        folder; discard went on unlocked and replaced the kept file with
        `to d3`, which gc, confirmed by d2, then removed: nothing owed to
        d3. Now unlocked discard only adds a file of its own, and gc sees
        that its lock is no longer at owed.lock and removes nothing."""
        self.race(swap=True)

    def kept_to(self):
        """The `to` lines of every kept unregister of SBX."""
        d = os.path.dirname(self.unreg())
        out = []
        for name in sorted(os.listdir(d)):
            if name.startswith(self.SBX):
                with open(os.path.join(d, name)) as f:
                    out.append(f.read().splitlines()[1])
        return out

    def race(self, swap=False):
        gc = self.start(["gc"], [self.d2.url])
        self.addCleanup(gc.kill)
        self.assertTrue(self.d2.arrived.wait(60))
        if swap:
            lock = os.path.join(self.state, "owed.lock")
            os.rename(lock, lock + ".held")
            os.mkdir(lock)
        discard = self.start(["discard", self.SBX], [self.d2.url, self.d3])
        self.addCleanup(discard.kill)
        for _ in range(6000):
            if discard.poll() is not None or waiting_on_a_lock(discard.pid):
                break
            time.sleep(0.01)
        self.d2.release()
        gc.communicate(timeout=120)
        _, err = discard.communicate(timeout=120)
        self.assertEqual(discard.returncode, 125, err)
        self.assertIn(self.d3, err)
        self.assertIn("to " + self.d3, self.kept_to())
        r = subprocess.run(
            [os.path.join(proxylib.BIN, "sandgate"), "gc"],
            capture_output=True, text=True, timeout=120,
            env=proxylib.clean_env({
                "SANDGATE_STATE": self.state,
                "SANDGATE_PROXY_CONTROL": self.d2.url + "," + self.d3,
                "SANDGATE_PROXY_CONTROL_TOKEN_FILE": W["tokfile"]}))
        self.assertEqual(r.returncode, 125, r.stderr)
        self.assertIn("still owed", r.stderr)


class StalledReplicaOncePerCommand(unittest.TestCase):
    """atk1921j F6: a replica that accepts and never answers cost every
    discard and gc one send timeout per kept send, one after another
    (the k-th discard while it stalls ~k x 10 s). Now once it timed out
    in a command, later sends to it in that command are not made: they
    stay owed, said. Two kept unregisters and discard's own: one
    connection reaches it, not three."""

    def test_one_timeout_per_command(self):
        state = tempfile.mkdtemp(prefix="stalled-", dir=W["dir"])
        hole = FakeReplica(None)
        self.addCleanup(hole.close)
        kept = ["sbx_57a11ed000000000000000%02x" % i for i in (1, 2)]
        os.makedirs(os.path.join(state, "unregister"), mode=0o700)
        for sbx in kept:
            with open(os.path.join(state, "unregister", sbx), "w") as f:
                f.write("%s\nto %s\nx (unreachable)\n" % (sbx, hole.url))
        sbx = "sbx_57a11ed00000000000000003"
        r = subprocess.run(
            [os.path.join(proxylib.BIN, "sandgate"), "discard", sbx],
            capture_output=True, text=True, timeout=120,
            env=proxylib.clean_env({
                "SANDGATE_STATE": state,
                "SANDGATE_PROXY_CONTROL": hole.url,
                "SANDGATE_PROXY_CONTROL_TOKEN_FILE": W["tokfile"]}))
        self.assertEqual(r.returncode, 125, r.stderr)
        self.assertEqual(len(hole.held), 1, r.stderr)
        self.assertEqual(r.stderr.count("not sent: it did not answer in "
                                        "time earlier in this command"), 2,
                         r.stderr)
        for x in kept + [sbx]:
            with open(os.path.join(state, "unregister", x)) as f:
                self.assertEqual(f.read().splitlines()[1], "to " + hole.url)


class SlowCloser:
    """A replica stand-in that reads each request and closes it
    unanswered after delay seconds; self.conns counts the connections.
    Shut down with test."""

    def __init__(self, test, delay):
        self.delay, self.conns = delay, 0
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.url = "http://127.0.0.1:%d" % self.sock.getsockname()[1]
        threading.Thread(target=self.accept, daemon=True).start()
        test.addCleanup(self.sock.close)

    def accept(self):
        while True:
            try:
                c = self.sock.accept()[0]
            except OSError:
                return
            self.conns += 1
            threading.Thread(target=self.close_late, args=(c,),
                             daemon=True).start()

    def close_late(self, c):
        try:
            c.recv(65536)
            time.sleep(self.delay)
        finally:
            c.close()


def discard_with(test, state, sbx, urls):
    """`sandgate discard sbx` with state and urls; its result."""
    return subprocess.run(
        [os.path.join(proxylib.BIN, "sandgate"), "discard", sbx],
        capture_output=True, text=True, timeout=150,
        env=proxylib.clean_env({
            "SANDGATE_STATE": state,
            "SANDGATE_PROXY_CONTROL": ",".join(urls),
            "SANDGATE_PROXY_CONTROL_TOKEN_FILE": W["tokfile"]}))


def keep_unregister(state, sbx, to):
    os.makedirs(os.path.join(state, "unregister"), mode=0o700,
                exist_ok=True)
    with open(os.path.join(state, "unregister", sbx), "w") as f:
        f.write("%s\nto %s\nx (unreachable)\n" % (sbx, to))


class SlowClosingReplica(unittest.TestCase):
    """atk1921k F2: a replica that took each request and closed it
    unanswered just before the send timeout was tried 4 times a send and
    never marked stalled: ~38 s a kept send, all under owed.lock. Now a
    failed answer that took 2 s or more (or 8 failed answers) marks it
    stalled for the command, and a command sends kept sends again for
    20 s at most; the rest stay kept, said."""

    def test_one_slow_failure_per_command(self):
        state = tempfile.mkdtemp(prefix="slowclose-", dir=W["dir"])
        slow = SlowCloser(self, 3)
        kept = ["sbx_5c105ed000000000000000%02x" % i for i in (1, 2)]
        for sbx in kept:
            keep_unregister(state, sbx, slow.url)
        sbx = "sbx_5c105ed00000000000000003"
        r = discard_with(self, state, sbx, [slow.url])
        self.assertEqual(r.returncode, 125, r.stderr)
        self.assertEqual(slow.conns, 1, r.stderr)
        self.assertEqual(r.stderr.count("not sent: it did not answer in "
                                        "time earlier in this command"), 2,
                         r.stderr)
        for x in kept + [sbx]:
            with open(os.path.join(state, "unregister", x)) as f:
                self.assertEqual(f.read().splitlines()[1], "to " + slow.url)

    def test_kept_sends_have_a_budget(self):
        state = tempfile.mkdtemp(prefix="slowbudget-", dir=W["dir"])
        ok = answering(self, lambda m, p: (200, {
            "ok": True, "removed": 0, "saved": True, "saved_apart": False,
            "removals_unkept": 0}))
        kept = ["sbx_b0d9e7000000000000000a%02x" % i for i in range(8)]
        closers = [SlowCloser(self, 3) for _ in kept]
        for sbx, closer in zip(kept, closers):
            keep_unregister(state, sbx, closer.url)
        r = discard_with(self, state, "sbx_b0d9e7000000000000000b00", [ok])
        # 8 x 3 s is past the 20 s: some kept sends are not tried at all
        self.assertLess(sum(c.conns for c in closers), len(kept), r.stderr)
        self.assertEqual(r.stderr.count("time for sending kept sends "
                                        "again (20 s) is spent"), 1,
                         r.stderr)
        for sbx in kept:
            self.assertTrue(os.path.exists(
                os.path.join(state, "unregister", sbx)), sbx)


class SlowFailedAnswer(unittest.TestCase):
    """atk1921m F2, F3: a replica answering an HTTP error (503) or a 200
    that is not the proxy's answer, each after seconds, was never marked
    stalled (only a transfer error was timed; a "not ours" 200 counted as
    a fast failure): every send of a command waited for it, all under
    owed.lock (`discard` of 3 ids: 27 s). Now any answer that does not
    confirm is timed, and one taking 2 s or more stalls the replica for
    the command: its later sends, the command's own ones too, are kept
    unsent."""

    def discard3(self, answer):
        state = tempfile.mkdtemp(prefix="slowans-", dir=W["dir"])
        asked = []

        def slow(m, p):
            asked.append(p)
            time.sleep(3)
            return answer

        url = answering(self, slow)
        ids = ["sbx_5a0e0000000000000000000%d" % i for i in (1, 2, 3)]
        r = subprocess.run(
            [os.path.join(proxylib.BIN, "sandgate"), "discard"] + ids,
            capture_output=True, text=True, timeout=150,
            env=proxylib.clean_env({
                "SANDGATE_STATE": state, "SANDGATE_PROXY_CONTROL": url,
                "SANDGATE_PROXY_CONTROL_TOKEN_FILE": W["tokfile"]}))
        self.assertEqual(r.returncode, 125, r.stderr)
        self.assertEqual(len(asked), 1, r.stderr)
        self.assertEqual(r.stderr.count("not sent: it did not answer in "
                                        "time earlier in this command"), 2,
                         r.stderr)
        for x in ids:
            with open(os.path.join(state, "unregister", x)) as f:
                self.assertEqual(f.read().splitlines()[1], "to " + url)

    def test_slow_http_error_stalls(self):
        self.discard3((503, {"error": "busy"}))

    def test_slow_answer_not_ours_stalls(self):
        self.discard3((200, {"ok": True}))


def keep(state, folder, name, subject, to):
    """A kept send written as commands write it (0600 in a 0700 folder)."""
    os.makedirs(os.path.join(state, folder), mode=0o700, exist_ok=True)
    path = os.path.join(state, folder, name)
    with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        f.write("%s\nto %s\nkept\n" % (subject, to))


class ManyFailedReplicas(unittest.TestCase):
    """atk1921n F4: the replicas that failed in a command were kept in 32
    slots; past them a failure was not recorded, so a replica answering
    503 after seconds was never stalled: each send waited for it (one per
    id of a `discard`, all under owed.lock). A kept unregister naming 32
    replicas (each a fast 503) filled them. Now every name is kept: the
    slow one is asked once, its other kept ends stay, unsent, said."""

    def test_slow_replica_past_32_failed_ones_stalls(self):
        state = tempfile.mkdtemp(prefix="manyfailed-", dir=W["dir"])
        fast = answering(self, lambda m, p: (503, {"error": "busy"}))
        asked = []

        def slow(m, p):
            asked.append(p)
            time.sleep(2.5)
            return (503, {"error": "busy"})

        slow_url = answering(self, slow)
        keep(state, "unregister", "sbx_cccccccccccccccccccccccc",
             "sbx_cccccccccccccccccccccccc",
             ",".join("%s/a%d" % (fast, k) for k in range(1, 33)))
        ids = ["sbx_dddddddddddddddddddddd0%d" % i for i in (1, 2, 3)]
        for i, sbx in enumerate(ids):
            keep(state, "execend", "run_eeeeeeeeeeeeeeeeeeeeee0%d" % i,
                 sbx, slow_url)
        r = subprocess.run(
            [os.path.join(proxylib.BIN, "sandgate"), "discard"] + ids,
            capture_output=True, text=True, timeout=150,
            env=proxylib.clean_env({
                "SANDGATE_STATE": state,
                "SANDGATE_PROXY_CONTROL": fast + "/e",
                "SANDGATE_PROXY_CONTROL_TOKEN_FILE": W["tokfile"]}))
        self.assertEqual(r.returncode, 125, r.stderr)
        # the slow replica is asked once, then stalled: the unregisters
        # of the two other ids are not sent to it, nor the kept ends
        self.assertEqual(len(asked), 1, r.stderr)
        self.assertEqual(r.stderr.count(
            "%s (not sent: it did not answer in time earlier in this "
            "command)" % slow_url), 2, r.stderr)
        for i in range(len(ids)):
            self.assertTrue(os.path.exists(os.path.join(
                state, "execend", "run_eeeeeeeeeeeeeeeeeeeeee0%d" % i)))


class SlowDns(threading.Thread):
    """A DNS server on 127.0.0.77:53 answering every query NXDOMAIN after
    delay seconds; queries counts them."""

    def __init__(self, delay):
        super().__init__(daemon=True)
        self.delay = delay
        self.queries = 0
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.77", 53))

    def answer(self, q, a):
        time.sleep(self.delay)
        # the query's id, QR RD RA, rcode 3, one question (copied), no more
        try:
            self.sock.sendto(q[:2] + bytes([0x81, 0x83]) + q[4:6] +
                             bytes(6) + q[12:], a)
        except OSError:
            pass

    def run(self):
        while True:
            try:
                q, a = self.sock.recvfrom(2048)
            except OSError:
                return
            self.queries += 1
            threading.Thread(target=self.answer, args=(q, a),
                             daemon=True).start()

    def close(self):
        self.sock.close()


class SlowNameResolution(unittest.TestCase):
    """atk1921n F3: a replica whose name failed to resolve (or whose
    connection failed) was never counted, however long that took: a
    resolver answering NXDOMAIN after ~2 s cost every send that long,
    without the bound of 8 failures (a discard of N ids: N x 1.8 s under
    owed.lock). Now one that took 200 ms or more counts as a failed
    answer: after 8 the name is stalled for the command. sandgate runs
    in a mount namespace whose /etc/resolv.conf names the slow server."""

    def test_slow_resolve_failures_count(self):
        if os.geteuid() != 0:
            self.skipTest("needs root for a mount namespace")
        try:
            dns = SlowDns(0.5)
        except OSError as e:
            self.skipTest("cannot serve DNS on 127.0.0.77:53: %s" % e)
        dns.start()
        self.addCleanup(dns.close)
        state = tempfile.mkdtemp(prefix="slowdns-", dir=W["dir"])
        resolv = os.path.join(state, "resolv.conf")
        with open(resolv, "w") as f:
            f.write("nameserver 127.0.0.77\noptions attempts:1\n")
        ids = ["sbx_d5d5d5d5000000000000%04d" % i for i in range(10)]
        r = subprocess.run(
            ["unshare", "-m", "sh", "-c",
             'mount --bind "$0" /etc/resolv.conf && exec "$@"', resolv,
             os.path.join(proxylib.BIN, "sandgate"), "discard"] + ids,
            capture_output=True, text=True, timeout=150,
            env=proxylib.clean_env({
                "SANDGATE_STATE": state,
                "SANDGATE_PROXY_CONTROL": "http://r1.slow-dns.test:9",
                "SANDGATE_PROXY_CONTROL_TOKEN_FILE": W["tokfile"]}))
        if dns.queries == 0:
            self.skipTest("the name was not asked of the test's server: "
                          + r.stderr[-300:])
        self.assertEqual(r.returncode, 125, r.stderr)
        self.assertEqual(r.stderr.count("resolve host"), 8, r.stderr)
        self.assertEqual(r.stderr.count("not sent: it did not answer in "
                                        "time earlier in this command"), 2,
                         r.stderr)
        for x in ids:
            with open(os.path.join(state, "unregister", x)) as f:
                self.assertEqual(f.read().splitlines()[1],
                                 "to http://r1.slow-dns.test:9")


class KeptSendUnread(TwoReplicas):
    """atk1921k F5: a kept unregister that cannot be read (damaged:
    here its subject is too long) was unlinked unread by a later
    `discard ID` that every replica confirmed. Now it stays, said, and
    discard exits 125."""

    SBX = "sbx_0b0b0b0b000000000000000e"
    PREFIX = "unread-"

    def test_kept_send_not_removed_unread(self):
        path = os.path.join(self.state, "unregister", self.SBX)
        os.makedirs(os.path.dirname(path), mode=0o700)
        with open(path, "w") as f:
            f.write("s" * 300 + "\nto http://127.0.0.1:9\nx\n")
        r = self.sandgate(["discard", self.SBX], self.urls)
        self.assertEqual(r.returncode, 125, r.stderr)
        self.assertIn("cannot be read", r.stderr)
        self.assertEqual([registered(s) for s in self.socks], [[], []])
        self.assertTrue(os.path.exists(path), r.stderr)


class NotTheProxysAnswer(unittest.TestCase):
    """atk1921k F7: any HTTP 200 was taken for a replica's confirmation
    of an /unregister or /execs/end. Now only the proxy's own answer
    ("ok": true, "removed", and "saved" or "closed") confirms; anything
    else keeps the send."""

    SBX = "sbx_0a0a0a0a000000000000000f"
    RUN = "run_0a0a0a0a0000000000000001"

    def test_a_bare_200_confirms_nothing(self):
        state = tempfile.mkdtemp(prefix="notours-", dir=W["dir"])
        url = answering(self, lambda m, p: (200, {"ok": True}))
        r = discard_with(self, state, self.SBX, [url])
        self.assertEqual(r.returncode, 125, r.stderr)
        self.assertIn("not the proxy's answer", r.stderr)
        with open(os.path.join(state, "unregister", self.SBX)) as f:
            self.assertEqual(f.read().splitlines()[1], "to " + url)
        os.makedirs(os.path.join(state, "execend"), mode=0o700)
        end = os.path.join(state, "execend", self.RUN)
        with open(end, "w") as f:
            f.write("%s\nto %s\nx (unreachable)\n" % (self.SBX, url))
        r = subprocess.run(
            [os.path.join(proxylib.BIN, "sandgate"), "gc"],
            capture_output=True, text=True, timeout=120,
            env=proxylib.clean_env({
                "SANDGATE_STATE": state, "SANDGATE_PROXY_CONTROL": url,
                "SANDGATE_PROXY_CONTROL_TOKEN_FILE": W["tokfile"]}))
        self.assertEqual(r.returncode, 125, r.stderr)
        self.assertIn("not the proxy's answer", r.stderr)
        self.assertTrue(os.path.exists(end), r.stderr)


class ReplicaSetEdges(TwoReplicas):
    """atk1921i F8, F10, F14: a sandbox's `replicas` file that cannot be
    read (a link, a FIFO, a folder, empty, cut before its newline) was
    taken for "none recorded": discard asked the environment alone and
    exited 0 while d2 kept the sandbox. Now it is not confirmed: said,
    kept, exit 125. More than 32 names (recorded, or piled up by the
    kept sends one command retries) made every send go to none: now a
    send goes to those that fit and keeps the rest owed."""

    PREFIX = "edges-"

    def unreg(self, sbx=None):
        return os.path.join(self.state, "unregister", sbx or self.SBX)

    def folder(self, names):
        d = os.path.join(self.state, "sandboxes", self.SBX)
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "replicas"), "w") as f:
            f.write(",".join(names) + "\n")
        return os.path.join(d, "replicas")

    def plant(self, kind):
        rp = self.folder(self.urls)
        if kind == "symlink":
            os.rename(rp, rp + ".real")
            os.symlink("replicas.real", rp)
        elif kind == "fifo":
            os.unlink(rp)
            os.mkfifo(rp)
        elif kind == "dir":
            os.unlink(rp)
            os.mkdir(rp)
        elif kind == "empty":
            open(rp, "w").close()
        else:
            with open(rp, "w") as f:
                f.write(",".join(self.urls))

    def test_unreadable_replicas_is_not_none_recorded(self):
        for kind in ("symlink", "fifo", "dir", "empty", "cut"):
            with self.subTest(kind=kind):
                self.plant(kind)
                r = self.sandgate(["discard", self.SBX], self.urls[:1])
                self.assertEqual(r.returncode, 125, r.stderr)
                if kind == "symlink":
                    # a link in a sandbox folder: the state folder is
                    # refused whole before anything is done
                    # (guarantees.md item 33)
                    self.assertIn("replicas is a link", r.stderr)
                    self.assertFalse(os.path.exists(self.unreg()))
                    rp = os.path.join(self.state, "sandboxes", self.SBX,
                                      "replicas")
                    os.unlink(rp)
                    os.rename(rp + ".real", rp)
                    continue
                self.assertIn("cannot be read", r.stderr)
                self.assertTrue(os.path.exists(self.unreg()), r.stderr)
                os.unlink(self.unreg())
                st, body = proxylib.control(self.socks[0], "POST",
                                            "/register", {
                    "address": "127.0.0.41", "sandbox": self.SBX,
                    "sets": "test"})
                self.assertEqual(st, 200, body)

    def dead(self, n):
        """n distinct URLs nothing listens on (free_port may give a port
        twice: two URLs that are one replica)."""
        ports = set()
        while len(ports) < n:
            ports.add(proxylib.free_port())
        return ["http://127.0.0.1:%d" % p for p in sorted(ports)]

    def test_more_names_than_a_send_reaches(self):
        self.folder(self.urls + self.dead(39))
        r = self.sandgate(["discard", self.SBX], self.urls[:1])
        self.assertEqual(r.returncode, 125, r.stderr)
        self.assertIn("not sent: more than 32 replicas named", r.stderr)
        self.assertEqual([registered(s) for s in self.socks], [[], []])
        # 32 names a file at most, the rest beside it (atk1921n F2)
        kept = sorted(x for x in os.listdir(os.path.dirname(self.unreg()))
                      if x.startswith(self.SBX))
        self.assertEqual(len(kept), 2, kept)
        owed = []
        for x in kept:
            with open(self.unreg(x)) as f:
                names = f.read().splitlines()[1][3:].split(",")
            self.assertLessEqual(len(names), 32)
            owed += names
        self.assertEqual(sorted(owed), sorted(set(owed)))
        self.assertEqual(len(owed), 39)
        self.assertNotIn(self.urls[0], owed)

    def test_kept_sends_do_not_starve_a_later_one(self):
        for i in range(3):
            sbx = "sbx_d15ca4d00000000000000%03x" % (0xb00 + i)
            os.makedirs(os.path.dirname(self.unreg(sbx)), exist_ok=True)
            with open(self.unreg(sbx), "w") as f:
                f.write("%s\nto %s\nx (unreachable)\n" % (
                    sbx, ",".join(self.dead(12))))
        self.folder(self.urls)
        r = self.sandgate(["discard", self.SBX], None)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("is still owed", r.stderr)
        self.assertEqual([registered(s) for s in self.socks], [[], []])
        self.assertFalse(os.path.exists(self.unreg()), r.stderr)


class FreshSweepEveryReplica(TwoReplicas):
    """atk1921i F9: gc's sweep of a dead `exec --fresh` container took
    its address for forgotten once one replica answered: with d2 away,
    the container went, nothing was kept, and d2 went on mapping the
    address (Docker's next container's) to the sandbox. Now every
    replica the sandbox is registered with must confirm: the container
    is left, said, and removed by the sweep once d2 has forgotten it.
    Docker is a fake API (no container is made)."""

    PREFIX = "sweep2-"
    FRESH = "f" * 64

    def test_left_until_every_replica_forgets(self):
        sdir = os.path.join(self.state, "sandboxes", self.SBX)
        os.makedirs(os.path.join(sdir, "runs"))
        open(os.path.join(sdir, "lock"), "w").close()
        with open(os.path.join(sdir, "meta.json"), "w") as f:
            json.dump({"source": self.dir, "image": "test",
                       "container": "c" * 64, "network": "proxy",
                       "created": "2026-12-03T00:00:00Z"}, f)
        with open(os.path.join(sdir, "replicas"), "w") as f:
            f.write(",".join(self.urls) + "\n")
        docker = FakeDocker(self.dir, self.SBX, self.state, {
            "c" * 64: {"role": "session", "ip": "127.0.0.41"},
            self.FRESH: {"role": "fresh", "ip": "127.0.0.45"}})
        self.addCleanup(docker.close)
        for sock in self.socks:
            st, body = proxylib.control(sock, "POST", "/register", {
                "address": "127.0.0.45", "sandbox": self.SBX,
                "sets": "test", "extra": True})
            self.assertEqual(st, 200, body)
        self.ps[1].stop()
        env = proxylib.clean_env({
            "SANDGATE_STATE": self.state,
            "SANDGATE_PROXY_CONTROL": ",".join(self.urls[:1]),
            "SANDGATE_PROXY_CONTROL_TOKEN_FILE": W["tokfile"],
            "DOCKER_HOST": "unix://" + docker.path,
            "SANDGATE_UID_DIR": os.path.join(self.dir, "uids")})
        gc = [os.path.join(proxylib.BIN, "sandgate"), "gc"]
        r = subprocess.run(gc, capture_output=True, text=True, env=env,
                           timeout=120)
        self.assertIn("the fresh container ffffffffffff of %s is left"
                      % self.SBX, r.stderr)
        self.assertIn(self.urls[1], r.stderr)
        self.assertIn(self.FRESH, docker.ctrs)
        self.ps[1].start()
        proxylib.wait_unix_socket(self.socks[1])
        r = subprocess.run(gc, capture_output=True, text=True, env=env,
                           timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("removed 1 fresh container of " + self.SBX, r.stdout)
        self.assertNotIn(self.FRESH, docker.ctrs)
        st, body = proxylib.control(self.socks[1], "GET", "/status")
        self.assertEqual([e.get("address") for e in body["sandboxes"]],
                         ["127.0.0.41"])


class UnregisterSendsItsClock(unittest.TestCase):
    """atk1921h F7: a replica aged a removed sandbox's entry out by its
    own clock; the unregister now carries the controller's clock
    ("issued_before"), from which the replica keeps the entry as long as
    a token the controller issued could hold (test_proxy_token's
    GoneEntryLastsTest has the replica's side)."""

    def test_discard_sends_issued_before(self):
        bodies = []

        class H(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                n = int(self.headers.get("Content-Length", 0))
                bodies.append((self.path, json.loads(self.rfile.read(n))))
                out = json.dumps({"ok": True, "removed": 0, "saved": True,
                                  "saved_apart": False,
                                  "removals_unkept": 0}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        self.addCleanup(srv.server_close)
        self.addCleanup(srv.shutdown)
        state = tempfile.mkdtemp(prefix="clock-", dir=W["dir"])
        os.makedirs(os.path.join(state, "sandboxes"))
        t0 = int(time.time())
        r = subprocess.run(
            [os.path.join(proxylib.BIN, "sandgate"), "discard", SBX],
            capture_output=True, text=True, timeout=60,
            env=proxylib.clean_env({
                "SANDGATE_STATE": state,
                "SANDGATE_PROXY_CONTROL": "http://127.0.0.1:%d" %
                srv.server_port,
                "SANDGATE_PROXY_CONTROL_TOKEN_FILE": W["tokfile"]}))
        t1 = int(time.time())
        self.assertEqual(r.returncode, 0, r.stderr)
        unreg = [b for p, b in bodies if p == "/unregister"]
        self.assertEqual([b["sandbox"] for b in unreg], [SBX])
        self.assertTrue(t0 <= unreg[0].get("issued_before", 0) <= t1,
                        unreg)


class RegistryApartFull(unittest.TestCase):
    """atk1921f F4: with the folder out of data blocks (inodes free) the
    empty registry-r1.json.removed made at start could not take the
    removal either (an append needs a block): saved:false, and a restart
    brought the removed sandbox back. The file now holds room reserved
    at start, which the removal is written over in place. Needs root for
    the small tmpfs."""

    def setUp(self):
        if os.geteuid() != 0:
            self.skipTest("needs root to mount a tmpfs")
        self.dir = tempfile.mkdtemp(prefix="regfull-", dir=W["dir"])
        self.run_dir = os.path.join(self.dir, "run")
        os.mkdir(self.run_dir)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m,mode=0755",
                        "sg-regfull", self.run_dir], check=True)
        self.addCleanup(subprocess.run, ["umount", self.run_dir])
        self.sock = os.path.join(self.run_dir, "r1.sock")
        self.p = proxylib.Proxy(self.dir, W["up"], name="p", extra_args=[
            "--instance", "r1", "--control-socket", self.sock])
        self.addCleanup(self.p.stop)
        self.p.start()
        proxylib.wait_unix_socket(self.sock)

    def test_removal_survives_a_full_folder_and_a_restart(self):
        status, body = proxylib.control(self.sock, "POST", "/register", {
            "address": "127.0.0.42", "sandbox": "sbx_full", "sets": "test"})
        self.assertEqual((status, body.get("saved")), (200, True), body)
        subprocess.run("dd if=/dev/zero of=%s bs=4k 2>/dev/null" %
                       os.path.join(self.run_dir, "fill"), shell=True)
        status, body = proxylib.control(self.sock, "POST", "/unregister",
                                        {"sandbox": "sbx_full"})
        self.assertEqual((status, body.get("saved"), body.get("saved_apart"),
                          body.get("removals_unkept")),
                         (200, True, True, 0), body)
        self.p.stop()
        self.p.start()
        proxylib.wait_unix_socket(self.sock)
        self.assertEqual(registered(self.sock), [])


class TakenRevokes(unittest.TestCase):
    """atk1921d F1: a revoke of a grant taken from the legacy grants.json
    came back after a restart when the replica's first save failed (it
    was kept apart in grants-r1.json.revoked, which the take did not
    read); and once a later save held the grants the taken file stayed,
    so losing grants-r1.json took it again with the revoked grant."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="taken-", dir=W["dir"])
        self.sock = os.path.join(self.dir, "r1.sock")
        with open(os.path.join(self.dir, "grants.json"), "wb") as f:
            f.write(old_grants("old.grant.test", "kept.grant.test"))
        p = SaveBlocked(self.dir, W["up"], name="p", extra_args=[
            "--instance", "r1", "--control-socket", self.sock])
        p.sock_dir = self.dir
        with open(os.path.join(p.policy_dir, "grants.yaml"), "w") as f:
            f.write("description: grants of the replica tests\n"
                    "grants:\n  under: [grant.test]\n")
        W["proxies"].append(p)
        self.p = p.start()
        proxylib.wait_unix_socket(self.sock)

    def grants(self):
        status, body = proxylib.control(self.sock, "GET", "/grants")
        self.assertEqual(status, 200, body)
        return sorted(g["host"] for g in body["grants"])

    def revoke_apart(self):
        self.assertEqual(self.grants(), ["kept.grant.test", "old.grant.test"])
        status, body = proxylib.control(self.sock, "POST", "/grants/revoke", {
            "sandbox": SBX, "host": "old.grant.test", "port": 443,
            "by": "test"})
        self.assertEqual((status, body.get("saved_apart"),
                          body.get("grants_saved")), (200, True, False), body)

    def restart(self):
        self.p.stop()
        for f in os.listdir(self.dir):
            if f.endswith(".tmp"):
                os.rmdir(os.path.join(self.dir, f))
        self.p.blocked = False
        self.p.start()
        proxylib.wait_unix_socket(self.sock)

    def test_revoke_kept_apart_survives_the_restart(self):
        self.revoke_apart()
        self.restart()
        self.assertEqual(self.grants(), ["kept.grant.test"])
        self.assertEqual([f for f in os.listdir(self.dir) if ".taken" in f],
                         [])

    def test_taken_file_goes_at_the_first_good_save(self):
        self.revoke_apart()
        os.rmdir(os.path.join(self.dir, "grants-r1.json.%d.tmp" % self.p.pid))
        own = os.path.join(self.dir, "grants-r1.json")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and (not os.path.exists(own) or [
                f for f in os.listdir(self.dir) if ".taken" in f]):
            time.sleep(0.2)
        self.assertTrue(os.path.exists(own), "grants-r1.json not saved")
        self.assertEqual([f for f in os.listdir(self.dir) if ".taken" in f],
                         [])
        os.unlink(own)
        self.restart()
        self.assertEqual(self.grants(), [])



class SingleBetweenTakes(unittest.TestCase):
    """atk46a L6: a replica killed between its take of grants.json and
    its save left grants.json.taken-by-r1; a proxy without --instance
    started before r1 did again (a scale-down) found no grants.json, saved
    none, and emptied grants.json.revoked; a replica taking that empty
    file (a scale-up) took the empty revokes too, and r1 then took its
    file again with a grant the single proxy had revoked in force. The
    single proxy keeps its revokes while a taken file is there, and no
    take moves them."""

    def start(self, name, instance=None):
        sock = os.path.join(self.dir, name + ".sock")
        p = proxylib.Proxy(self.dir, W["up"], name=name, extra_args=(
            ["--instance", instance] if instance else []) + [
            "--control-socket", sock])
        with open(os.path.join(p.policy_dir, "grants.yaml"), "w") as f:
            f.write("description: grants of the replica tests\n"
                    "grants:\n  under: [grant.test]\n")
        try:
            p.start()
            proxylib.wait_unix_socket(sock)
            status, body = proxylib.control(sock, "GET", "/grants")
        finally:
            p.stop()
        self.assertEqual(status, 200, body)
        return sorted(g["host"] for g in body["grants"])

    def test_single_proxy_between_keeps_the_revokes(self):
        self.dir = tempfile.mkdtemp(prefix="single-", dir=W["dir"])
        with open(os.path.join(self.dir, "grants.json.taken-by-r1"),
                  "wb") as f:
            f.write(old_grants("old-a.grant.test", "old-b.grant.test"))
        with open(os.path.join(self.dir, "grants.json.revoked"), "w") as f:
            f.write("\n" + json.dumps({"sandbox": SBX,
                                       "host": "old-a.grant.test",
                                       "port": 443,
                                       "revoked": int(time.time())}) + "\n")
        self.assertEqual(self.start("single"), [])
        self.assertEqual(self.start("second", "r2"), [])
        self.assertEqual(self.start("first", "r1"), ["old-b.grant.test"],
                         "a grant the single proxy revoked came back")


if __name__ == "__main__":
    sys.exit(proxylib.run_tests(sys.modules[__name__]))
