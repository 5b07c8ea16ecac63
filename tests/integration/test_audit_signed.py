"""Signed checkpoints in the security-event log, end to end: the real
proxy signs, `sandgate audit key` makes and rotates keys, and
`sandgate audit verify --key` finds what the hash chain alone cannot.

- A log whose last 100 events were rewritten with recomputed hashes passes
  the plain chain check (as it must) and fails with the key, naming the
  first event that can no longer be trusted.
- A tail cut after the last checkpoint is reported.
- Key rotation: the old key introduces the new one; the old private key
  is gone, and a writer still signing with a copy of it is refused.
- A checkpoint verifies with nothing but openssl and the documented
  message (docs/audit.md).

Real proxy on loopback, real clients, the real `sandgate` binary.
"""
import base64
import hashlib
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proxylib  # noqa: E402

SANDGATE = os.path.join(proxylib.BIN, "sandgate")
EVERY = 50          # --checkpoint-every
INTERVAL = 1        # --checkpoint-interval, seconds
UNTRUSTED_RE = re.compile(r"first event that can no longer be trusted: "
                          r"seq (\d+) \((?:(\S+):(\d+)|missing from the "
                          r"log)\)")
W = {}


def flood(port, n, tag, threads=10):
    """n blocked requests to TAG<i>.invalid from concurrent clients."""
    proxylib.flood(port, ["%s%d.invalid" % (tag, i % threads)
                          for i in range(n)], threads)


def sandgate(*args):
    return proxylib.run([SANDGATE] + list(args), timeout=120)


def make_key(name):
    """A key made with `sandgate audit key create`, and a copy of its
    public half kept apart (what an operator stores elsewhere)."""
    keys = os.path.join(W["dir"], "keys-" + name)
    path = os.path.join(keys, "checkpoint.key")
    r = sandgate("audit", "key", "create", path)
    if r.returncode != 0:
        raise AssertionError("audit key create: %r" % (r,))
    trusted = os.path.join(W["dir"], name + ".pub")
    shutil.copyfile(path + ".pub", trusted)
    return path, trusted


def start_proxy(name, key, every=EVERY, log_dir=None):
    p = proxylib.Proxy(W["dir"], W["up"], name=name, extra_args=[
        "--checkpoint-key", key, "--checkpoint-every", str(every),
        "--checkpoint-interval", str(INTERVAL)] + proxylib.full_lines_args())
    if log_dir is not None:
        p.log_dir = log_dir
        p.log_path = os.path.join(log_dir, "security-events.jsonl")
    return p.start()


def stop_proxy(p):
    status = p.stop()
    if status != 0:
        raise AssertionError("proxy exit %r; stderr:\n%s" % (status,
                                                             p.stderr()))
    report = p.sanitizer_report()
    if report:
        raise AssertionError("sanitizer report:\n" + report[:4000])


def rehash(lines, start):
    """Give lines[start:] fresh prev and hash values, as whoever can write
    the file can (the hash is SHA-256 of the line without its hash member,
    docs/audit.md). lines are bytes without newlines."""
    prev = json.loads(lines[start - 1])["hash"] if start > 0 else "0" * 64
    out = list(lines[:start])
    for line in lines[start:]:
        cut = line.rfind(b',"prev":"')
        body = line[:cut] + b',"prev":"' + prev.encode() + b'"}'
        prev = hashlib.sha256(body).hexdigest()
        out.append(body[:-1] + b',"hash":"' + prev.encode() + b'"}')
    return out


def write_log(name, lines):
    d = os.path.join(W["dir"], name)
    os.makedirs(d)
    with open(os.path.join(d, "security-events.jsonl"), "wb") as f:
        f.write(b"".join(line + b"\n" for line in lines))
    return d


def is_checkpoint(line):
    return json.loads(line).get("event") == "log.checkpoint"


def setUpModule():
    for k in proxylib.PROXY_ENV:
        os.environ.pop(k, None)
    W["dir"] = tempfile.mkdtemp(prefix="sg-signed-")
    W["up"] = proxylib.Upstreams(W["dir"]).start()


def tearDownModule():
    W["up"].stop()
    if not os.environ.get("SANDGATE_KEEP"):
        shutil.rmtree(W["dir"], ignore_errors=True)


class T1Tamper(unittest.TestCase):
    """One proxy run of 1,000 blocked requests, then tampered copies."""

    @classmethod
    def setUpClass(cls):
        cls.key, cls.pub = make_key("t1")
        p = start_proxy("t1", cls.key)
        flood(p.port, 1000, "flood")
        stop_proxy(p)
        with open(p.log_path, "rb") as f:
            cls.lines = f.read().splitlines()
        cls.log_dir = p.log_dir

    def verify(self, log_dir, *keys):
        args = ["audit", "verify", "--log-dir", log_dir]
        for k in keys:
            args += ["--key", k]
        return sandgate(*args)

    def untrusted(self, r):
        m = UNTRUSTED_RE.search(r.stdout)
        self.assertIsNotNone(m, r.stdout + r.stderr)
        return int(m.group(1)), m.group(3) and int(m.group(3))

    def last_checkpoint_before(self, index):
        """The seq of the last checkpoint among lines[:index]."""
        for line in reversed(self.lines[:index]):
            if is_checkpoint(line):
                return json.loads(line)["seq"]
        return 0

    def test_1_intact(self):
        events = [json.loads(x) for x in self.lines]
        kinds = [e.get("reason") for e in events
                 if e["event"] == "log.checkpoint"]
        self.assertEqual(kinds[0], "open")
        self.assertEqual(kinds[-1], "close")
        self.assertGreaterEqual(kinds.count("count"), 1000 // EVERY - 1)
        blocked = [e for e in events if e["event"] == "egress.blocked"]
        self.assertEqual(len(blocked), 1000)
        # No run of more than EVERY events without a checkpoint.
        run = 0
        for e in events:
            run = 0 if e["event"] == "log.checkpoint" else run + 1
            self.assertLessEqual(run, EVERY)
        r = self.verify(self.log_dir, self.pub)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"OK: %d events, chain intact"
                         % len(self.lines))
        self.assertRegex(r.stdout, r"OK: %d checkpoint\(s\) signed by "
                         r"trusted keys; the last at seq %d \(close, "
                         % (len(kinds), len(self.lines)))
        r = self.verify(self.log_dir)
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("%d checkpoint(s) not checked" % len(kinds), r.stdout)

    def test_2_last_100_rewritten(self):
        """The issue's case: the last 100 events rewritten, hashes
        recomputed from there on."""
        n = len(self.lines)
        start = n - 100
        lines = [x.replace(b"flood", b"FLOOD") if not is_checkpoint(x)
                 else x for x in self.lines]
        lines = self.lines[:start] + rehash(lines, start)[start:]
        self.assertNotEqual(lines[start:], self.lines[start:])
        d = write_log("rewritten", lines)
        r = self.verify(d)
        self.assertEqual(r.returncode, 0, "the plain chain check passes: "
                         + r.stdout)
        r = self.verify(d, self.pub)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("does not verify", r.stdout)
        seq, line = self.untrusted(r)
        want = self.last_checkpoint_before(start + 1) + 1
        self.assertEqual(seq, want, r.stdout)
        self.assertEqual(line, want)    # one line per seq in one file
        self.assertLessEqual(seq, start + 1)
        print("\n  rewritten tail: " + r.stdout.strip().replace(
            "\n", "\n  "))

    def test_3_rewritten_without_checkpoints(self):
        """The same, the checkpoints the forger cannot sign left out and
        seq renumbered: the chain holds, the tail is unsigned."""
        start = len(self.lines) - 100
        kept = self.lines[:start] + [x.replace(b"flood", b"FLOOD") for x
                                     in self.lines[start:]
                                     if not is_checkpoint(x)]
        renum = []
        for i, x in enumerate(kept):
            renum.append(re.sub(rb'"seq":\d+', b'"seq":%d' % (i + 1), x, 1)
                         if i >= start else x)
        d = write_log("unsigned-tail", rehash(renum, start))
        self.assertEqual(self.verify(d).returncode, 0)
        r = self.verify(d, self.pub)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("no checkpoint of a trusted key signs them", r.stdout)
        seq, _ = self.untrusted(r)
        self.assertEqual(seq, self.last_checkpoint_before(start + 1) + 1)

    def test_4_forged_with_another_key(self):
        """Checkpoints signed with the forger's own key do not count."""
        other, other_pub = make_key("forger")
        p = start_proxy("forged", other)
        stop_proxy(p)
        r = self.verify(p.log_dir, other_pub)
        self.assertEqual(r.returncode, 0, r.stdout)
        r = self.verify(p.log_dir, self.pub)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("no checkpoint in the log is signed by a trusted key",
                      r.stdout)

    def test_5_tail_cut(self):
        """Lines cut after the last checkpoint: the close and the events
        after the last count checkpoint."""
        n = len(self.lines)
        last = max(i for i in range(n - 4) if is_checkpoint(self.lines[i])
                   and not any(map(is_checkpoint,
                                   self.lines[i + 1:i + 4])))
        cut = self.lines[:last + 4]
        d = write_log("cut", cut)
        # The proxy signs every INTERVAL s; its last checkpoint is older
        # than twice that by now.
        time.sleep(2 * INTERVAL + 0.5)
        self.assertEqual(self.verify(d).returncode, 0)
        r = self.verify(d, self.pub)
        self.assertEqual(r.returncode, 1, r.stdout)
        seq, line = self.untrusted(r)
        self.assertEqual(seq, json.loads(self.lines[last])["seq"] + 1)
        self.assertEqual(line, last + 2)
        # Cut right after that checkpoint: the lines after it are missing.
        d = write_log("cut-at-checkpoint", self.lines[:last + 1])
        r = self.verify(d, self.pub)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("not with a close", r.stdout)
        self.assertRegex(r.stdout, r"seq %d \(missing from the log\)"
                         % (json.loads(self.lines[last])["seq"] + 1))
        # A whole file lost after rotation looks the same: tested by the
        # shipper test's rotated logs; here the complete log passes.
        self.assertEqual(self.verify(self.log_dir, self.pub).returncode, 0)

    def test_6_openssl_checks_a_checkpoint(self):
        """The documented message, checked with the openssl CLI alone."""
        e = json.loads(next(x for x in reversed(self.lines)
                            if is_checkpoint(x)))
        msg = ("sandgate-checkpoint-v1\nseq=%d\nts=%s\nprev=%s\nreason=%s\n"
               "key=%s\nnext_key=%s\nevery_events=%d\nevery_secs=%d\n" % (
                   e["seq"], e["ts"], e["prev"], e["reason"], e["key"],
                   e["next_key"] or "", e["every_events"], e["every_secs"]))
        work = os.path.join(W["dir"], "openssl")
        os.makedirs(work)
        with open(os.path.join(work, "msg"), "w") as f:
            f.write(msg)
        with open(os.path.join(work, "sig"), "wb") as f:
            f.write(base64.b64decode(e["sig"]))
        r = subprocess.run(["openssl", "pkeyutl", "-verify", "-pubin",
                            "-inkey", self.pub, "-rawin", "-in",
                            os.path.join(work, "msg"), "-sigfile",
                            os.path.join(work, "sig")],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        with open(os.path.join(work, "msg"), "w") as f:
            f.write(msg.replace("seq=%d" % e["seq"], "seq=%d" % (e["seq"]
                                                                + 1)))
        r = subprocess.run(["openssl", "pkeyutl", "-verify", "-pubin",
                            "-inkey", self.pub, "-rawin", "-in",
                            os.path.join(work, "msg"), "-sigfile",
                            os.path.join(work, "sig")],
                           capture_output=True, text=True, timeout=30)
        self.assertNotEqual(r.returncode, 0)


class T2Rotation(unittest.TestCase):
    def test_rotation(self):
        key, old_pub = make_key("rot")
        stolen = os.path.join(W["dir"], "stolen.key")
        shutil.copy2(key, stolen)      # what a thief of the old key holds
        p = start_proxy("rot", key, every=1000)
        flood(p.port, 100, "before")
        r = sandgate("audit", "key", "rotate", key)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        new_pub = os.path.join(W["dir"], "rot-new.pub")
        shutil.copyfile(key + ".next.pub", new_pub)
        deadline = time.monotonic() + 10
        while os.path.exists(key + ".next") and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertFalse(os.path.exists(key + ".next"),
                         "the proxy did not take the next key")
        flood(p.port, 100, "after")
        stop_proxy(p)
        events = p.events()
        handover = [e for e in events if e.get("reason") == "key"]
        self.assertEqual(len(handover), 1, handover)
        new_id = handover[0]["next_key"]
        self.assertNotEqual(new_id, handover[0]["key"])
        # The new key took the old one's file: the old private key is gone.
        r = sandgate("audit", "key", "show", key)
        self.assertIn("id  %s" % new_id, r.stdout)
        after = [e for e in events if e["seq"] > handover[0]["seq"] and
                 e["event"] == "log.checkpoint"]
        self.assertTrue(after and all(e["key"] == new_id for e in after))
        # The old public key alone verifies all: it introduced the new one.
        r = sandgate("audit", "verify", "--log-dir", p.log_dir, "--key",
                     old_pub)
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("now signed by key %s" % new_id, r.stdout)
        r = sandgate("audit", "verify", "--log-dir", p.log_dir, "--key",
                     new_pub)
        self.assertEqual(r.returncode, 0, r.stdout)
        # A proxy run with the stolen old key on the same log is refused.
        os.chmod(stolen, 0o600)
        thief = start_proxy("thief", stolen, log_dir=p.log_dir)
        flood(thief.port, 10, "thief")
        stop_proxy(thief)
        r = sandgate("audit", "verify", "--log-dir", p.log_dir, "--key",
                     old_pub)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("which handed over to key %s" % new_id, r.stdout)
        m = UNTRUSTED_RE.search(r.stdout)
        self.assertIsNotNone(m, r.stdout)
        self.assertEqual(int(m.group(1)), events[-1]["seq"] + 1)


class T3KeyPlaces(unittest.TestCase):
    def refused(self, key, words):
        p = proxylib.Proxy(W["dir"], W["up"], name="refused",
                           extra_args=["--checkpoint-key", key])
        with self.assertRaises(proxylib.ProxyError) as cm:
            p.start(timeout=10)
        self.assertIn(words, str(cm.exception))

    def test_key_in_log_folder_or_readable(self):
        key, _ = make_key("places")
        st = os.stat(key)
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o600)
        self.assertEqual(stat.S_IMODE(os.stat(os.path.dirname(key))
                                      .st_mode), 0o700)
        os.chmod(key, 0o640)
        self.refused(key, "readable by it alone")
        os.chmod(key, 0o600)
        # A key in the log folder: whoever writes the log could read it.
        p = proxylib.Proxy(W["dir"], W["up"], name="inlog")
        inlog = os.path.join(p.log_dir, "checkpoint.key")
        shutil.copy2(key, inlog)
        p.extra_args = ["--checkpoint-key", inlog]
        with self.assertRaises(proxylib.ProxyError) as cm:
            p.start(timeout=10)
        self.assertIn("is in the log folder", str(cm.exception))
        r = sandgate("audit", "key", "create", key)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("a key exists at %s already" % key, r.stderr)


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    failed = len(result.failures) + len(result.errors)
    print("%d passed, %d failed" % (result.testsRun - failed, failed))
    sys.exit(1 if failed else 0)
