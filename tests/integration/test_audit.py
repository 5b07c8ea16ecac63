"""The security-event log as a security team uses it: a flood of blocked
requests leaves exactly one event each with consecutive seq, `sandgate audit
verify` finds any edited, removed, swapped or inserted line, and `audit
summary` / `audit --sandbox` count right on a log this test made.

Real proxy, real clients on loopback, the real `sandgate` binary.
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proxylib  # noqa: E402

SANDGATE = os.path.join(proxylib.BIN, "sandgate")


def blocked_request(port, host, src="127.0.0.1"):
    """One blocked GET from source address src; returns the status."""
    with socket.socket() as s:
        s.settimeout(10)
        s.bind((src, 0))
        s.connect(("127.0.0.1", port))
        s.sendall(("GET http://%s/ HTTP/1.1\r\nHost: %s\r\n"
                   "Connection: close\r\n\r\n" % (host, host)).encode())
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    return int(data.split(b" ", 2)[1])


def audit(*args):
    return subprocess.run([SANDGATE, "audit"] + list(args),
                          capture_output=True, text=True, timeout=120)


class AuditTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="sg-audit-")
        cls.up = proxylib.Upstreams(cls.tmp).start()
        cls.ctl = os.path.join(cls.tmp, "control.sock")
        # Every block its own line: the tamper cases need hundreds of
        # lines (test_3 covers the summaries a default proxy writes).
        cls.proxy = proxylib.Proxy(cls.tmp, cls.up, extra_args=[
            "--control-socket", cls.ctl, "--block-burst", "10000000",
            "--block-budget", "10000000"]).start()
        cls.log_dir = cls.proxy.log_dir

    @classmethod
    def tearDownClass(cls):
        cls.proxy.stop()
        cls.up.stop()
        if not os.environ.get("SANDGATE_KEEP"):
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def control(self, path, body):
        with socket.socket(socket.AF_UNIX) as s:
            s.connect(self.ctl)
            data = json.dumps(body).encode()
            s.sendall(b"POST %s HTTP/1.1\r\nHost: proxy\r\nContent-Length: "
                      b"%d\r\nConnection: close\r\n\r\n%s"
                      % (path.encode(), len(data), data))
            resp = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                resp += chunk
        self.assertIn(b" 200 ", resp.split(b"\r\n", 1)[0])

    def test_1_flood_then_verify_and_tamper(self):
        """10,000 blocked requests from 100 concurrent clients."""
        start = len(self.proxy.log_lines())
        errors, lock = [], threading.Lock()

        def client(i):
            for j in range(100):
                try:
                    code = blocked_request(self.proxy.port,
                                           "flood%d.invalid" % (i % 7))
                    if code != 403:
                        raise AssertionError("status %d" % code)
                except Exception as e:  # noqa: BLE001
                    with lock:
                        errors.append(repr(e))
        threads = [threading.Thread(target=client, args=(i,))
                   for i in range(100)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        lines = self.proxy.log_lines()[start:]
        events = [json.loads(line) for line in lines]
        blocked = [e for e in events if e["event"] == "egress.blocked"]
        self.assertEqual(len(blocked), 10000)
        seqs = [e["seq"] for e in events]
        self.assertEqual(seqs, list(range(seqs[0], seqs[0] + len(seqs))))
        r = audit("verify", "--log-dir", self.log_dir)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"OK: \d+ events, chain intact")

        path = os.path.join(self.log_dir, "security-events.jsonl")
        with open(path) as f:
            original = f.readlines()
        n = len(original)
        cases = {
            "edited": lambda v: v[:500] + [v[500].replace(
                "flood", "FLOOD", 1)] + v[501:],
            "deleted": lambda v: v[:500] + v[501:],
            "swapped": lambda v: v[:500] + [v[501], v[500]] + v[502:],
            "inserted": lambda v: v[:500] + [v[200]] + v[500:],
        }
        for name, change in cases.items():
            work = os.path.join(self.tmp, "tamper-" + name)
            os.makedirs(work)
            with open(os.path.join(work, "security-events.jsonl"),
                      "w") as f:
                f.writelines(change(list(original)))
            r = audit("verify", "--log-dir", work)
            self.assertEqual(r.returncode, 1, name + ": " + r.stdout)
            out = r.stdout + r.stderr
            self.assertIn("chain broken", out, name)
            # the first broken line is line 501 or 502 (1-based)
            self.assertRegex(out, r"security-events\.jsonl:50[12]:", name)
        self.assertEqual(n, len(original))

    def test_2_summary_and_sandbox_counts(self):
        """Counts on a log made here: two registered sandboxes."""
        self.control("/register", {"address": "127.0.0.2",
                                   "sandbox": "sbx_aaaaaaaaaaaaaaaaaaaaaaaa",
                                   "sets": "test"})
        self.control("/register", {"address": "127.0.0.3",
                                   "sandbox": "sbx_bbbbbbbbbbbbbbbbbbbbbbbb",
                                   "sets": "test"})
        for _ in range(7):
            self.assertEqual(blocked_request(self.proxy.port, "a.invalid",
                                             "127.0.0.2"), 403)
        for _ in range(3):
            self.assertEqual(blocked_request(self.proxy.port, "b.invalid",
                                             "127.0.0.3"), 403)
        r = audit("--sandbox", "sbx_aaaaaaaaaaaaaaaaaaaaaaaa", "--json",
                  "--log-dir", self.log_dir)
        self.assertEqual(r.returncode, 0, r.stderr)
        rows = [json.loads(line) for line in r.stdout.splitlines() if line]
        self.assertEqual(len(rows), 7)
        self.assertTrue(all(x["host"] == "a.invalid" for x in rows))
        r = audit("--sandbox", "sbx_bbbbbbbbbbbbbbbbbbbbbbbb", "--json",
                  "--log-dir", self.log_dir)
        self.assertEqual(len(r.stdout.splitlines()), 3)
        r = audit("summary", "--host", "*.invalid", "--log-dir",
                  self.log_dir)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"\b7\s+sbx_aaaaaaaaaaaaaaaaaaaaaaaa\b")
        self.assertRegex(r.stdout, r"\b3\s+sbx_bbbbbbbbbbbbbbbbbbbbbbbb\b")
        self.assertRegex(r.stdout, r"\b7\s+a\.invalid:80\b")
        self.assertRegex(r.stdout, r"\b3\s+b\.invalid:80\b")


    def test_3_summaries_count_every_attempt(self):
        """A default proxy summarizes a flood; `audit summary` counts the
        attempts its summary lines stand for."""
        p = proxylib.Proxy(self.tmp, self.up, name="summaries", extra_args=[
            "--block-window", "1"]).start()
        try:
            for _ in range(60):
                self.assertEqual(blocked_request(p.port, "sum.invalid"), 403)
            deadline = time.monotonic() + 10
            while (time.monotonic() < deadline and
                   p.blocked_attempts() < 60):
                time.sleep(0.2)
            events = p.events()
            full = [e for e in events if e["event"] == "egress.blocked"]
            summ = [e for e in events
                    if e["event"] == "egress.blocked_summary"]
            self.assertEqual(proxylib.blocked_attempts(events), 60)
            self.assertLess(len(full), 60, "nothing was summarized")
            self.assertGreater(len(summ), 0)
            for e in summ:
                self.assertEqual(e["host"], "sum.invalid")
                self.assertEqual(e["reason"], "not_allowlisted")
                self.assertGreater(e["count"], 0)
                self.assertLessEqual(e["first"], e["last"])
            r = audit("summary", "--json", "--log-dir", p.log_dir)
            self.assertEqual(r.returncode, 0, r.stderr)
            doc = json.loads(r.stdout)
            self.assertEqual(doc["total"], 60, r.stdout)
            self.assertEqual(doc["by_destination"]["sum.invalid:80"], 60)
            r = audit("verify", "--log-dir", p.log_dir)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        finally:
            p.stop()


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    failed = len(result.failures) + len(result.errors)
    print("%d passed, %d failed" % (result.testsRun - failed, failed))
    sys.exit(1 if failed else 0)
