#!/usr/bin/env python3
"""Replicas that keep their own evidence: sandgate-proxy --instance NAME
(docs/proxy.md, docs/audit.md "Replicas").

Two replicas share one log folder: each writes security-events.NAME.jsonl
with a proxy.started line naming it, says its name in /status and
/metrics, and keeps its own hash chain; `sandgate audit --instance A
--instance B` reads both logs together and `audit verify` checks each on
its own, a broken one failing alone.

Run: python3 tests/integration/test_proxy_instance.py [-v]
Env: SANDGATE_BIN, SANDGATE_SRC, SANDGATE_KEEP=1 as test_proxy.py.
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proxylib  # noqa: E402
from proxylib import RawConn, get_request  # noqa: E402

W = {}


def sandgate(*args):
    return subprocess.run([os.path.join(proxylib.BIN, "sandgate")] +
                          list(args), capture_output=True, text=True,
                          env=proxylib.clean_env({"SANDGATE_STATE":
                                                  W["state"]}))


def sandgate_env(env, *args):
    e = {"SANDGATE_STATE": W["state"]}
    e.update(env)
    return subprocess.run([os.path.join(proxylib.BIN, "sandgate")] +
                          list(args), capture_output=True, text=True,
                          env=proxylib.clean_env(e))


def setUpModule():
    for k in proxylib.PROXY_ENV:
        os.environ.pop(k, None)
    W["dir"] = tempfile.mkdtemp(prefix="sg-instancetest-")
    W["state"] = os.path.join(W["dir"], "state")
    W["logs"] = os.path.join(W["dir"], "logs")
    os.makedirs(W["logs"])
    W["proxies"] = []
    try:
        W["up"] = proxylib.Upstreams(W["dir"]).start()
        for name in ("r0", "r1"):
            key = os.path.join(W["dir"], name + ".key")
            subprocess.run(["openssl", "genpkey", "-algorithm", "ed25519",
                            "-out", key], check=True, capture_output=True)
            os.chmod(key, 0o600)
            subprocess.run(["openssl", "pkey", "-in", key, "-pubout",
                            "-out", key + ".pub"], check=True,
                           capture_output=True)
            sock = os.path.join(W["dir"], name + ".sock")
            p = proxylib.Proxy(W["dir"], W["up"], name=name, extra_args=[
                "--instance", name, "--checkpoint-key", key,
                "--control-socket", sock])
            p.log_dir = W["logs"]
            p.log_path = os.path.join(W["logs"],
                                      "security-events.%s.jsonl" % name)
            p.sock, p.key = sock, key
            # The shared folder, not the harness's own per-proxy one.
            p.extra_args += ["--log-dir", W["logs"]]
            W["proxies"].append(p)
            W[name] = p.start()
    except BaseException:
        tearDownModule()
        raise


def tearDownModule():
    proxylib.teardown(W, W.get("proxies", []))


def block(p, host):
    with RawConn(p.port) as c:
        c.send(get_request("http://%s/x" % host, host))
        return c.read_response().status


class InstanceTest(unittest.TestCase):
    def test_1_own_file_start_line_status_metrics(self):
        for name in ("r0", "r1"):
            p = W[name]
            self.assertTrue(os.path.exists(p.log_path), p.log_path)
            ev = p.wait_event(lambda e: e.get("event") == "proxy.started")
            self.assertIsNotNone(ev)
            self.assertEqual(ev["instance"], name)
            # No event of a run before its open (issue 20 eleventh
            # attack F1): the open checkpoint, then proxy.started.
            with open(p.log_path) as f:
                evs = [json.loads(line) for line in f if line.strip()]
            i = [e.get("event") for e in evs].index("proxy.started")
            self.assertGreater(i, 0, evs[:2])
            self.assertEqual((evs[i - 1].get("event"),
                              evs[i - 1].get("reason")),
                             ("log.checkpoint", "open"), evs[:i + 1])
            self.assertEqual(len(ev["policy_digest"]), 64)
            st, body = proxylib.control(p.sock, "GET", "/status")
            self.assertEqual((st, body["instance"]), (200, name))
            conn = proxylib.UnixHTTPConnection(p.sock)
            conn.request("GET", "/metrics")
            text = conn.getresponse().read().decode()
            conn.close()
            self.assertIn('sandgate_proxy_info{instance="%s"} 1' % name,
                          text)
        self.assertFalse(os.path.exists(os.path.join(
            W["logs"], "security-events.jsonl")))

    def test_2_audit_reads_together_verify_each(self):
        self.assertEqual(block(W["r0"], "evil-r0.test"), 403)
        self.assertEqual(block(W["r1"], "evil-r1.test"), 403)
        for name in ("r0", "r1"):
            self.assertIsNotNone(W[name].wait_event(
                lambda e: e.get("event") == "egress.blocked"))
        r = sandgate("audit", "list", "--log-dir", W["logs"], "--instance",
                     "r0", "--instance", "r1", "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        hosts = {json.loads(line).get("host")
                 for line in r.stdout.splitlines() if line.strip()}
        self.assertTrue({"evil-r0.test", "evil-r1.test"} <= hosts, hosts)
        r = sandgate("audit", "list", "--log-dir", W["logs"], "--instance",
                     "r1", "--json")
        hosts = {json.loads(line).get("host")
                 for line in r.stdout.splitlines() if line.strip()}
        self.assertNotIn("evil-r0.test", hosts)

        # Each on its own: the chains of both, then each with its key.
        verify = ["audit", "verify", "--log-dir", W["logs"], "--instance",
                  "r0", "--instance", "r1"]
        r = sandgate(*verify)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("security-events.r0.jsonl:", r.stdout)
        self.assertIn("security-events.r1.jsonl:", r.stdout)
        for name in ("r0", "r1"):
            r = sandgate("audit", "verify", "--log-dir", W["logs"],
                         "--instance", name, "--key", W[name].key + ".pub")
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        # One replica's line edited: its log fails, the other still passes.
        path = W["r1"].log_path
        with open(path) as f:
            text = f.read()
        with open(path, "w") as f:
            f.write(text.replace("evil-r1.test", "good-r1.test", 1))
        try:
            r = sandgate(*verify)
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            r0_part, _, r1_part = r.stdout.partition(
                "security-events.r1.jsonl:\n")
            self.assertIn("chain intact", r0_part)
            self.assertNotIn("chain intact", r1_part)
            r = sandgate("audit", "verify", "--log-dir", W["logs"],
                         "--instance", "r0", "--key", W["r0"].key + ".pub")
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        finally:
            with open(path, "w") as f:
                f.write(text)

    def test_4_verify_against_the_replicas_anchor(self):
        # issue 20 eleventh attack F3: a replica's log in the live log
        # folder, verified with --key: its anchor is beside its own key,
        # which the controller does not know; verify says it did not
        # check one, and with --anchor finds a log cut back to an old
        # checkpoint.
        p = W["r0"]
        env = {"SANDGATE_LOG_DIR": W["logs"]}
        verify = ["audit", "verify", "--instance", "r0", "--key",
                  p.key + ".pub"]
        r = sandgate_env(env, *verify)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("not checked against a writer's anchor", r.stdout)
        self.assertIn("--anchor", r.stdout)
        r = sandgate_env(env, *verify, "--anchor", p.key + ".anchor")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("checked against the anchor", r.stdout)
        # Cut back to before the checkpoint the anchor names.
        with open(p.log_path) as f:
            lines = f.readlines()
        cut = max(i for i, line in enumerate(lines)
                  if '"log.checkpoint"' in line)
        with open(p.log_path, "w") as f:
            f.writelines(lines[:cut])
        try:
            r = sandgate_env(env, *verify, "--anchor", p.key + ".anchor")
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        finally:
            with open(p.log_path, "w") as f:
                f.writelines(lines)

    def test_3_bad_instance_name(self):
        r = subprocess.run([proxylib.PROXY_BIN, "--instance", "A/b",
                            "--check"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--instance", r.stderr)
        r = sandgate("audit", "list", "--log-dir", W["logs"], "--instance",
                     "r0", "--file", "runs.jsonl")
        self.assertEqual(r.returncode, 2, r.stderr)


if __name__ == "__main__":
    unittest.main()
