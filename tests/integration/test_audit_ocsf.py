"""`sandgate audit export --format ocsf`: every event type the proxy
writes, made here by real clients through the real proxy, exported and
validated against tests/data/ocsf/sandgate-ocsf-1.8.0.schema.json with
Debian's python3-jsonschema (tests/lib/ocsf_check.py, run by
/usr/bin/python3).

Event types: egress.blocked (GET, CONNECT, a malformed request, an SNI
mismatch), egress.allowed (--log-allowed, plain HTTP and a TLS tunnel),
egress.would_block (a set in report mode), egress.revoked (a reload that
removes an open tunnel's destination), policy.reloaded, policy.rejected,
log.checkpoint (open, count, timer, key, close). The run records
(run.exec, run.run) need Docker: test_audit_runs.sh exports and checks
them the same way.

Hostile lines (test_7): thousands of log lines whose members have the
wrong types or values out of range still export as valid OCSF, and lines
that are not log lines are left out (and counted). Checkpoints are
exported as not checked (test_8): the export verifies no signature.
"""
import hashlib
import random
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
from proxylib import RawConn, connect_request  # noqa: E402

SANDGATE = os.path.join(proxylib.BIN, "sandgate")
SCHEMA = os.path.join(proxylib.SRC, "tests", "data", "ocsf",
                      "sandgate-ocsf-1.8.0.schema.json")
CHECK = os.path.join(proxylib.SRC, "tests", "lib", "ocsf_check.py")
DEBIAN_PYTHON = "/usr/bin/python3"
SANDBOX = "sbx_0123456789abcdef01234567"

EXTRA = """\
  - host: tunnel.test
    ports: [{HTTP}]
    allow_private: true
    rationale: reached through a CONNECT tunnel that a reload revokes
"""
STAGING = """\
description: a set being tried out
mode: report
allow:
  - host: stage.test
    ports: [{TLS}]
    allow_private: true
    rationale: report mode lets other ports through and logs them
"""
BROKEN = """\
allow:
  - host: broken.test
    rationle: the key is misspelt
"""
W = {}


def sandgate(*args):
    return proxylib.run([SANDGATE] + list(args), timeout=120)


def write(name, text):
    text = text.replace("{HTTP}", str(W["up"].http_port))
    text = text.replace("{TLS}", str(W["up"].tls_port))
    path = os.path.join(W["proxy"].policy_dir, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def reload(kind):
    p = W["proxy"]
    mark = p.mark()
    os.kill(p.pid, signal.SIGHUP)
    ev = p.wait_event(lambda e: e.get("event") in ("policy.reloaded",
                                                   "policy.rejected"), mark)
    assert ev is not None and ev["event"] == kind, ev


def bound(src):
    c = RawConn.__new__(RawConn)
    c.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    c.sock.settimeout(10)
    c.sock.bind((src, 0))
    c.sock.connect(("127.0.0.1", W["proxy"].port))
    c.buf = b""
    return c


def get(host, port, src="127.0.0.1"):
    return proxylib.get_status(W["proxy"].port, "%s:%d" % (host, port), src)


def tls_through(host, sni):
    """CONNECT host:TLS, then a TLS handshake naming sni; True if it went
    through."""
    s = socket.create_connection(("127.0.0.1", W["proxy"].port), timeout=10)
    try:
        hp = "%s:%d" % (host, W["up"].tls_port)
        s.sendall(connect_request(hp))
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = s.recv(1)
            if not chunk:
                return False
            head += chunk
        if b" 200 " not in head.split(b"\r\n")[0]:
            return False
        ctx = ssl.create_default_context(cafile=W["up"].ca_file)
        ctx.check_hostname = False
        try:
            with ctx.wrap_socket(s, server_hostname=sni) as t:
                t.sendall(("GET / HTTP/1.1\r\nHost: %s\r\nConnection: "
                           "close\r\n\r\n" % sni).encode())
                return t.recv(100).startswith(b"HTTP/1.1 200")
        except (ssl.SSLError, OSError):
            return False
    finally:
        s.close()


def make_events():
    """Every egress.* and policy.* event, and each kind of checkpoint."""
    p, up = W["proxy"], W["up"]
    assert get("evil.test", up.http_port) == 403
    with RawConn(p.port) as c:
        c.send(connect_request("blocked.test:443"))
        assert c.read_response(method="CONNECT").status == 403
    with RawConn(p.port) as c:
        c.send(b"GET /no-version\r\n\r\n")
        assert c.read_response().status == 400
    assert get("allowed.test", up.http_port) == 200
    assert tls_through("allowed.test", "allowed.test")
    assert not tls_through("allowed.test", "evil.test")
    sandgate_control("/register", {"address": "127.0.0.2",
                                   "sandbox": SANDBOX, "sets": "staging"})
    assert get("stage.test", up.http_port, "127.0.0.2") == 200
    tunnel = bound("127.0.0.1")
    hp = "tunnel.test:%d" % up.http_port
    tunnel.send(connect_request(hp))
    assert tunnel.read_response(method="CONNECT").status == 200
    tunnel.send(("GET /in HTTP/1.1\r\nHost: %s\r\n\r\n" % hp).encode())
    assert tunnel.read_response().status == 200
    with open(p.policy_file, "w") as f:
        f.write(W["policy"])
    reload("policy.reloaded")
    p.wait_event(lambda e: e.get("event") == "egress.revoked")
    tunnel.close()
    broken = write("broken.yaml", BROKEN)
    reload("policy.rejected")
    os.unlink(broken)
    r = sandgate("audit", "key", "rotate", W["key"])
    assert r.returncode == 0, r
    deadline = time.monotonic() + 10
    while os.path.exists(W["key"] + ".next") and \
            time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(1.5)     # a timer checkpoint


def sandgate_control(path, body):
    status, reply = proxylib.control_post(W["sock"], path, body)
    assert status == 200, (status, reply)


def check(text):
    """ocsf_check.py over text: (exit code, summary)."""
    r = subprocess.run([DEBIAN_PYTHON, CHECK, SCHEMA], input=text,
                       capture_output=True, text=True, timeout=120)
    lines = r.stdout.strip().splitlines()
    summary = json.loads(lines[-1]) if lines else {}
    return r.returncode, summary, r.stderr


def setUpModule():
    for k in proxylib.PROXY_ENV:
        os.environ.pop(k, None)
    W["dir"] = tempfile.mkdtemp(prefix="sg-ocsf-")
    W["sock"] = os.path.join(W["dir"], "control.sock")
    W["up"] = proxylib.Upstreams(W["dir"]).start()
    W["key"] = os.path.join(W["dir"], "keys", "checkpoint.key")
    r = sandgate("audit", "key", "create", W["key"])
    if r.returncode != 0:
        raise AssertionError("audit key create: %r" % (r,))
    p = proxylib.Proxy(W["dir"], W["up"], extra_args=[
        "--log-allowed", "--control-socket", W["sock"],
        "--checkpoint-key", W["key"], "--checkpoint-every", "5",
        "--checkpoint-interval", "1"])
    W["proxy"] = p
    with open(p.policy_file) as f:
        W["policy"] = f.read()
    write("test.yaml", W["policy"] + EXTRA)
    write("staging.yaml", STAGING)
    with open(p.hosts, "a") as f:
        f.write("127.0.0.1\ttunnel.test stage.test\n")
    p.start()
    try:
        make_events()
    finally:
        status = p.stop()
    assert status == 0, p.stderr()
    assert not p.sanitizer_report(), p.sanitizer_report()
    r = sandgate("audit", "export", "--format", "ocsf", "--log-dir",
                 p.log_dir)
    assert r.returncode == 0, r
    W["export"] = r.stdout


def tearDownModule():
    W["up"].stop()
    if not os.environ.get("SANDGATE_KEEP"):
        shutil.rmtree(W["dir"], ignore_errors=True)


class OcsfTest(unittest.TestCase):
    maxDiff = None

    def events(self):
        return [json.loads(x) for x in W["export"].splitlines()]

    def of(self, name, **match):
        out = [e for e in self.events()
               if e["unmapped"]["sandgate"]["event"] == name and
               all(e["unmapped"]["sandgate"].get(k) == v
                   for k, v in match.items())]
        self.assertTrue(out, "no %s %r exported" % (name, match))
        return out

    def test_1_every_event_validates(self):
        rc, summary, err = check(W["export"])
        self.assertEqual(rc, 0, json.dumps(summary, indent=1) + err)
        classes = {k: sorted(v["class_uid"]) for k, v in
                   summary["by_event"].items()}
        self.assertEqual(classes, {
            "egress.blocked": [4001, 4002],
            "egress.allowed": [4002],
            "egress.would_block": [4002],
            "egress.revoked": [4001],
            "policy.reloaded": [3004],
            "policy.rejected": [3004],
            "log.checkpoint": [1008],
        })
        print("\n  " + json.dumps(summary["by_event"], sort_keys=True))

    def test_2_one_event_per_line_kept_whole(self):
        with open(W["proxy"].log_path) as f:
            lines = [json.loads(x) for x in f]
        events = self.events()
        self.assertEqual(len(events), len(lines))
        for ocsf, orig in zip(events, lines):
            self.assertEqual(ocsf["unmapped"]["sandgate"], orig)
            self.assertEqual(ocsf["metadata"]["sequence"], orig["seq"])
            self.assertEqual(ocsf["metadata"]["uid"], orig["hash"])
            self.assertEqual(ocsf["metadata"]["original_time"], orig["ts"])
            self.assertEqual(ocsf["metadata"]["version"], "1.8.0")
            t = time.strptime(orig["ts"][:19], "%Y-%m-%dT%H:%M:%S")
            ms = (int(time.mktime(t) - time.timezone) * 1000 +
                  int(orig["ts"][20:23]))
            self.assertEqual(ocsf["time"], ms)

    def test_3_egress_mapping(self):
        up = W["up"]
        e = self.of("egress.blocked", method="GET", host="evil.test")[0]
        self.assertEqual((e["class_uid"], e["activity_id"], e["action_id"],
                          e["disposition_id"], e["status_id"]),
                         (4002, 3, 2, 2, 2))
        self.assertEqual(e["http_request"]["url"]["url_string"],
                         "http://evil.test:%d" % up.http_port)
        self.assertEqual(e["dst_endpoint"], {"hostname": "evil.test",
                                             "port": up.http_port})
        self.assertEqual(e["src_endpoint"]["ip"], "127.0.0.1")
        self.assertEqual(e["status_code"], "not_allowlisted")
        self.assertEqual(e["metadata"]["profiles"], ["security_control"])
        e = self.of("egress.blocked", method="CONNECT")[0]
        self.assertEqual((e["activity_id"], e["activity_name"]),
                         (1, "Connect"))
        self.assertEqual(e["http_request"]["url"]["url_string"],
                         "blocked.test:443")
        e = self.of("egress.blocked", reason="malformed_request")[0]
        self.assertEqual((e["class_uid"], e["activity_id"]), (4001, 5))
        e = self.of("egress.blocked", reason="sni_mismatch")[0]
        self.assertEqual((e["severity_id"], e["is_alert"]), (4, True))
        e = self.of("egress.allowed", method="GET")[0]
        self.assertEqual((e["action_id"], e["disposition_id"],
                          e["status_id"]), (1, 1, 1))
        self.assertIn("traffic", e)
        e = self.of("egress.would_block")[0]
        self.assertEqual((e["action_id"], e["disposition_id"]), (1, 17))
        self.assertEqual(e["src_endpoint"]["uid"], SANDBOX)
        e = self.of("egress.revoked")[0]
        self.assertEqual((e["class_uid"], e["activity_id"],
                          e["disposition_id"]), (4001, 3, 24))
        self.assertGreater(e["traffic"]["bytes_in"], 0)

    def test_4_policy_and_checkpoint_mapping(self):
        e = self.of("policy.rejected")[0]
        self.assertEqual((e["class_uid"], e["activity_id"], e["status_id"]),
                         (3004, 3, 2))
        self.assertIn("rationle", e["status_detail"])
        self.assertEqual(e["entity"]["type"], "Policy")
        e = self.of("policy.reloaded")[0]
        self.assertEqual(e["status_id"], 1)
        acts = {(x["unmapped"]["sandgate"]["reason"], x["activity_id"])
                for x in self.of("log.checkpoint")}
        for want in (("open", 6), ("close", 7), ("count", 99),
                     ("timer", 99), ("key", 99)):
            self.assertIn(want, acts)

    def test_5_schema_refuses_what_is_not_ocsf(self):
        """The check can fail: each change makes one event invalid."""
        first = self.events()[0]
        changes = {
            "unknown attribute": lambda e: e.update(foo=1),
            "type_uid": lambda e: e.update(type_uid=e["type_uid"] + 1),
            "no metadata": lambda e: e.pop("metadata"),
            "bad port": lambda e: e.setdefault("dst_endpoint", {}).update(
                hostname="x", port=70000),
            "bad severity": lambda e: e.update(severity_id=7),
            "no unmapped chain": lambda e: e["unmapped"]["sandgate"].pop(
                "hash"),
        }
        for name, change in changes.items():
            e = json.loads(json.dumps(first))
            change(e)
            rc, summary, _ = check(json.dumps(e) + "\n")
            self.assertEqual((rc, summary.get("invalid")), (1, 1), name)

    def test_6_filters_and_files(self):
        r = sandgate("audit", "export", "--format", "ocsf", "--event",
                     "egress.revoked", "--log-dir", W["proxy"].log_dir)
        self.assertEqual(r.returncode, 0, r.stderr)
        got = [json.loads(x) for x in r.stdout.splitlines()]
        self.assertEqual(len(got), 1)
        r = sandgate("audit", "export", "--format", "ocsf",
                     W["proxy"].log_path)
        self.assertEqual(r.stdout, W["export"])
        r = sandgate("audit", "export", "--format", "cef")
        self.assertEqual(r.returncode, 2)
        self.assertIn("unknown --format 'cef'", r.stderr)

    def test_7_hostile_lines_validate(self):
        """L1: whatever a log line holds, its OCSF event validates."""
        rnd = random.Random(20)
        values = [None, True, 0, -1, 1, 65535, 65536, 99999, 2 ** 63 - 1,
                  -2 ** 63, 1.5, "", "x", "GET", "CONNECT", "1.2.3.4",
                  "1.2.3.4:80", "::1", "::1:80", "[::1]:80",
                  "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255",
                  "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255:80",
                  "2026-12-01T00:00:00.000000Z",
                  "1900-01-01T00:00:00.000000Z",
                  "9999-12-31T23:59:59.999999Z", [], ["a"], [1], {},
                  {"a": 1}, "\u0001\u007f"]
        events = ["egress.blocked", "egress.allowed", "egress.would_block",
                  "egress.revoked", "egress.x", "policy.reloaded",
                  "policy.rejected", "policy.x", "run.exec", "run.run",
                  "log.checkpoint", "log.resume", "log.outage", "other",
                  None, 5]
        fields = ["sandbox", "src", "method", "host", "port", "sni",
                  "resolved", "reason", "message", "policy_sets", "rule",
                  "policy_digest", "bytes_up", "bytes_down", "duration_ms",
                  "count", "errors", "run", "command", "argv", "image",
                  "image_id", "start", "end", "exit_code", "cmd_exit",
                  "flags", "key", "next_key", "anchor_seq", "found_seq",
                  "lost", "since", "cause"]
        lines, logged = [], 0
        for i in range(3000):
            e = {"ts": rnd.choice(["2026-12-01T00:00:00.000000Z", "bad",
                                   "1960-01-01T00:00:00.000000Z"]),
                 "seq": i + 1}
            ev = rnd.choice(events)
            if ev is not None:
                e["event"] = ev
            for f in rnd.sample(fields, rnd.randint(0, 14)):
                e[f] = rnd.choice(values)
            if rnd.random() < 0.3:
                e["flags"] = {k: rnd.choice([True, False, 1, None])
                              for k in ("timed_out", "oom_killed")}
            e["prev"] = hashlib.sha256(b"%d" % i).hexdigest()
            e["hash"] = hashlib.sha256(b"h%d" % i).hexdigest()
            if i % 50 == 0:     # not a log line: left out
                del e[rnd.choice(["ts", "seq", "prev", "hash"])]
            else:
                logged += 1
            lines.append(json.dumps(e, separators=(",", ":")))
        lines += ["{}", '{"event":"egress.blocked","host":"x.test"}']
        path = os.path.join(W["dir"], "hostile.jsonl")
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        r = sandgate("audit", "export", "--format", "ocsf", path)
        self.assertEqual(r.returncode, 0, r.stderr)
        rc, summary, err = check(r.stdout)
        self.assertEqual(rc, 0, "%s of %s exported events invalid%s" % (
            summary.get("invalid"), summary.get("events"), err))
        self.assertEqual(summary["events"], logged)
        self.assertIn("%d line(s) not exported: not log lines"
                      % (len(lines) - logged), r.stderr)

    def test_8_checkpoints_not_checked(self):
        """L2: the export checks no signature, so no checkpoint (not even
        one whose signature is bad) is exported as a success."""
        with open(W["proxy"].log_path, "rb") as f:
            lines = f.read().splitlines()
        last = json.loads(lines[-1])
        self.assertEqual(last["event"], "log.checkpoint")
        bad = lines[-1].replace(last["sig"].encode(),
                                last["sig"][::-1].encode())
        body = bad[:bad.rfind(b',"hash":"')] + b"}"
        bad = body[:-1] + b',"hash":"' + hashlib.sha256(
            body).hexdigest().encode() + b'"}'
        path = os.path.join(W["dir"], "badsig.jsonl")
        with open(path, "wb") as f:
            f.write(b"".join(x + b"\n" for x in lines[:-1] + [bad]))
        r = sandgate("audit", "export", "--format", "ocsf", path)
        self.assertEqual(r.returncode, 0, r.stderr)
        cps = [json.loads(x) for x in r.stdout.splitlines()
               if '"event":"log.checkpoint"' in x]
        self.assertTrue(cps)
        for e in cps:
            self.assertEqual((e["status_id"], e["status"]), (0, "Unknown"))
            self.assertIn("not checked", e["message"])
            self.assertNotIn("signed by", e["message"])
        self.assertEqual(check(r.stdout)[0], 0)

    def test_9_outage_is_event_log_activity(self):
        """A log.outage line (events the writer lost) is Event Log
        Activity, severity High, its cause the status detail, and keeps
        lost, since and cause; it validates."""
        e = {"ts": "2026-12-02T04:44:05.000000Z", "seq": 14,
             "event": "log.outage", "lost": 8,
             "since": "2026-12-02T04:43:53.077115Z",
             "cause": "cannot write: No space left on device",
             "prev": hashlib.sha256(b"p").hexdigest(),
             "hash": hashlib.sha256(b"h").hexdigest()}
        path = os.path.join(W["dir"], "outage.jsonl")
        with open(path, "w") as f:
            f.write(json.dumps(e, separators=(",", ":")) + "\n")
        r = sandgate("audit", "export", "--format", "ocsf", path)
        self.assertEqual(r.returncode, 0, r.stderr)
        o = json.loads(r.stdout)
        self.assertEqual((o["class_uid"], o["activity_id"]), (1008, 99))
        self.assertGreaterEqual(o["severity_id"], 3)
        self.assertEqual(o["status_detail"], e["cause"])
        self.assertIn("8 event(s)", o["message"])
        for k in ("lost", "since", "cause"):
            self.assertEqual(o["unmapped"]["sandgate"][k], e[k])
        self.assertEqual(check(r.stdout)[0], 0)


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    failed = len(result.failures) + len(result.errors)
    print("%d passed, %d failed" % (result.testsRun - failed, failed))
    sys.exit(1 if failed else 0)
