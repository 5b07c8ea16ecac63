"""The shipper configuration of docs/audit.md, run for real: Debian's
rsyslog (imfile tailing the rotating security-event log, omfwd over TCP)
forwards to a second rsyslogd playing the SIEM (imtcp, omfile).

The proxy writes 10,000 blocked-request events across two rotations
while the shipper runs, and a policy.rejected line of more than 8 KiB
(rsyslog's default limit); the shipper is restarted once and the proxy
once on the way. The sink must hold every line, in order, exactly once (its
file is byte for byte the rotated files and the current one, oldest
first), and `sandgate audit verify --key` passes on the sink's copy.

Both rsyslogd run in the foreground with their own configuration, pid
file and work folder under a temporary folder, listening on loopback
only; the system's /etc/rsyslog.conf and /dev/log are not touched. The
configuration blocks are read from docs/audit.md (marked
"shipper-config") and used as they are, only paths and the port changed
and rsyslog's work folder put before them, so the documented
configuration is the tested one.
"""
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proxylib  # noqa: E402

SANDGATE = os.path.join(proxylib.BIN, "sandgate")
RSYSLOGD = shutil.which("rsyslogd") or "/usr/sbin/rsyslogd"
DOC = os.path.join(proxylib.SRC, "docs", "audit.md")
EVENTS = 10000
LOG = "security-events.jsonl"
W = {}


def doc_block(name):
    """The code block after <!-- shipper-config: name --> in the doc."""
    with open(DOC) as f:
        text = f.read()
    m = re.search(r"<!-- shipper-config: %s -->\s*```[a-z]*\n(.*?)```"
                  % re.escape(name), text, re.S)
    if m is None:
        raise AssertionError("no shipper-config block %r in %s"
                             % (name, DOC))
    return m.group(1)


class Rsyslogd:
    """One rsyslogd in the foreground, all its files in folder."""

    def __init__(self, folder, config):
        self.dir = folder
        os.makedirs(os.path.join(folder, "work"), exist_ok=True)
        self.conf = os.path.join(folder, "rsyslog.conf")
        with open(self.conf, "w") as f:
            f.write('global(workDirectory="%s")\n'
                    % os.path.join(folder, "work"))
            f.write(config)
        self.pidfile = os.path.join(folder, "rsyslogd.pid")
        self.out = os.path.join(folder, "stderr.txt")
        self.proc = None
        r = subprocess.run([RSYSLOGD, "-N1", "-f", self.conf],
                           capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            raise AssertionError("rsyslogd -N1 %s:\n%s" % (self.conf,
                                                           r.stderr))

    def start(self):
        log = open(self.out, "ab")
        self.proc = subprocess.Popen([RSYSLOGD, "-n", "-f", self.conf, "-i",
                                      self.pidfile], stdout=log,
                                     stderr=log, stdin=subprocess.DEVNULL)
        log.close()
        time.sleep(0.5)
        if self.proc.poll() is not None:
            raise AssertionError("rsyslogd exited: " + self.stderr())
        return self

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("rsyslogd did not stop on SIGTERM")

    def stderr(self):
        with open(self.out, errors="replace") as f:
            return f.read()


def flood(port, first, n):
    """n blocked requests to hosts s<first>... (all of one length)."""
    proxylib.flood(port, ["s%06d.invalid" % i for i in range(first,
                                                              first + n)])


def log_key(log_dir):
    """The key of the log in log_dir, made on first use: a key and its
    anchor belong to one log (docs/audit.md)."""
    key = log_dir + "-keys/checkpoint.key"
    if not os.path.exists(key):
        r = subprocess.run([SANDGATE, "audit", "key", "create", key],
                           capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            raise AssertionError("audit key create: %r" % (r,))
    return key


def start_proxy(name, log_dir, max_size):
    p = proxylib.Proxy(W["dir"], W["up"], name=name, extra_args=[
        "--checkpoint-key", log_key(log_dir), "--log-max-size",
        str(max_size), "--log-keep", "10"] + proxylib.full_lines_args())
    p.log_dir = log_dir
    p.log_path = os.path.join(log_dir, LOG)
    return p.start()


def stop_proxy(p):
    status = p.stop()
    if status != 0:
        raise AssertionError("proxy exit %r:\n%s" % (status, p.stderr()))
    if p.sanitizer_report():
        raise AssertionError(p.sanitizer_report()[:4000])


def long_line(p):
    """A policy.rejected event of more than 8 KiB: a reload of a policy
    with 80 errors, each naming a 200-character host. Returns its line."""
    bad = os.path.join(p.policy_dir, "bad.yaml")
    with open(bad, "w") as f:
        f.write("allow:\n" + "".join(
            "  - host: %s%d.test\n    port: 80\n    rationale: x\n"
            % ("a" * 200, i) for i in range(40)))
    mark = p.mark()
    os.kill(p.pid, signal.SIGHUP)
    ev = p.wait_event(lambda e: e.get("event") == "policy.rejected", mark)
    os.unlink(bad)
    if ev is None:
        raise AssertionError("no policy.rejected: " + p.stderr())
    for line in reversed(read_all([p.log_path]).splitlines()):
        if json.loads(line).get("seq") == ev["seq"]:
            return line
    raise AssertionError("policy.rejected not in the log")


def line_size():
    """The length of one blocked event's line (the hosts all have the
    same length), from a short run of its own."""
    d = os.path.join(W["dir"], "calibrate-logs")
    os.makedirs(d)
    p = start_proxy("calibrate", d, 0)
    flood(p.port, 0, 8)
    stop_proxy(p)
    with open(os.path.join(d, LOG), "rb") as f:
        sizes = [len(x) + 1 for x in f if b"egress.blocked" in x]
    return max(sizes)


def log_files(d):
    """The log's files oldest first: NAME.N .. NAME.1, NAME."""
    rot = sorted((int(n.rsplit(".", 1)[1]) for n in os.listdir(d)
                  if re.fullmatch(re.escape(LOG) + r"\.\d+", n)),
                 reverse=True)
    return [os.path.join(d, "%s.%d" % (LOG, n)) for n in rot] + \
        [os.path.join(d, LOG)]


def read_all(paths):
    out = b""
    for path in paths:
        with open(path, "rb") as f:
            out += f.read()
    return out


class ShipperTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.access(RSYSLOGD, os.X_OK):
            raise AssertionError("rsyslogd not installed: apt-get install "
                                 "rsyslog (scripts/setup.sh installs it)")
        for k in proxylib.PROXY_ENV:
            os.environ.pop(k, None)
        W["dir"] = tempfile.mkdtemp(prefix="sg-shipper-")
        W["up"] = proxylib.Upstreams(W["dir"]).start()

    @classmethod
    def tearDownClass(cls):
        for name in ("shipper", "sink"):
            if name in W:
                W[name].stop()
        W["up"].stop()
        if not os.environ.get("SANDGATE_KEEP"):
            shutil.rmtree(W["dir"], ignore_errors=True)

    def test_ship_10000_events_across_two_rotations(self):
        logs = os.path.join(W["dir"], "logs")
        sinkdir = os.path.join(W["dir"], "siem")
        os.makedirs(logs)
        os.makedirs(sinkdir)
        port = proxylib.free_port()
        # Two rotations: three files of about 0.4 of the total each.
        max_size = int(line_size() * EVENTS * 0.4)
        sender = doc_block("rsyslog sender")
        sender = sender.replace("/var/log/sandgate", logs)
        sender = sender.replace("siem.example.invalid", "127.0.0.1")
        sender = sender.replace('port="6514"', 'port="%d"' % port)
        receiver = doc_block("rsyslog receiver")
        receiver = receiver.replace("/var/log/siem", sinkdir)
        receiver = receiver.replace('port="6514"', 'address="127.0.0.1" '
                                    'port="%d"' % port)
        self.assertNotIn("6514", sender + receiver)
        W["sink"] = Rsyslogd(os.path.join(W["dir"], "rs-sink"),
                             receiver).start()
        W["shipper"] = Rsyslogd(os.path.join(W["dir"], "rs-ship"),
                                sender).start()
        p = start_proxy("ship1", logs, max_size)
        flood(p.port, 0, 1500)
        big = long_line(p)
        self.assertGreater(len(big), 8192)
        flood(p.port, 1500, 500)
        # The shipper restarts (far from a rotation, which it would miss
        # while down: test_rotation_while_the_shipper_is_down): it goes
        # on from its state file.
        W["shipper"].stop()
        W["shipper"].start()
        flood(p.port, 2000, 5000)
        # The proxy restarts: a close and an open checkpoint.
        stop_proxy(p)
        p = start_proxy("ship2", logs, max_size)
        flood(p.port, 7000, 3000)
        stop_proxy(p)
        files = log_files(logs)
        want = read_all(files)
        sink = os.path.join(sinkdir, "sandgate-security.jsonl")
        deadline = time.monotonic() + 120
        got = b""
        while time.monotonic() < deadline:
            got = read_all([sink]) if os.path.exists(sink) else b""
            if len(got) >= len(want):
                break
            time.sleep(0.5)
        W["shipper"].stop()
        W["sink"].stop()
        self.assertEqual([os.path.basename(f) for f in files],
                         [LOG + ".2", LOG + ".1", LOG],
                         "two rotations")
        events = [json.loads(x) for x in got.splitlines()]
        blocked_ev = [e for e in events if e["event"] == "egress.blocked"]
        self.assertEqual(len(blocked_ev), EVENTS)
        self.assertEqual(sorted(e["host"] for e in blocked_ev),
                         ["s%06d.invalid" % i for i in range(EVENTS)])
        seqs = [e["seq"] for e in events]
        self.assertEqual(seqs, list(range(1, len(events) + 1)),
                         "in order, none lost, none twice")
        self.assertIn(big, got.splitlines(), "the line of more than 8 KiB "
                      "arrived whole")
        self.assertEqual(got, want, "the sink holds the log byte for byte")
        reasons = [e["reason"] for e in events
                   if e["event"] == "log.checkpoint"]
        self.assertEqual(reasons.count("close"), 2)
        self.assertEqual(reasons.count("open"), 2)
        r = subprocess.run([SANDGATE, "audit", "verify", "--key",
                            log_key(logs) + ".pub", sink],
                           capture_output=True,
                           text=True, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("OK: %d events, chain intact" % len(events), r.stdout)
        self.assertRegex(r.stdout, r"the last at seq %d \(close," %
                         len(events))
        print("\n  %d lines shipped (%d blocked events) across %d files; "
              "sink verified:\n  %s" % (len(events), len(blocked_ev),
                                        len(files), r.stdout.strip()
                                        .replace("\n", "\n  ")))
        for rs in ("shipper", "sink"):
            self.assertNotRegex(W[rs].stderr(), r"error|fail",
                                rs + " reported a problem")

    def test_rotation_while_the_shipper_is_down(self):
        """rsyslog's documented limit, as docs/audit.md states it: lines of
        a file renamed while the shipper is down are not sent, and the
        SIEM copy shows where (a seq gap that audit verify reports)."""
        logs = os.path.join(W["dir"], "logs-down")
        sinkdir = os.path.join(W["dir"], "siem-down")
        os.makedirs(logs)
        os.makedirs(sinkdir)
        port = proxylib.free_port()
        sender = doc_block("rsyslog sender").replace(
            "/var/log/sandgate", logs).replace(
            "siem.example.invalid", "127.0.0.1").replace(
            'port="6514"', 'port="%d"' % port)
        receiver = doc_block("rsyslog receiver").replace(
            "/var/log/siem", sinkdir).replace(
            'port="6514"', 'address="127.0.0.1" port="%d"' % port)
        sink_rs = Rsyslogd(os.path.join(W["dir"], "rs-sink-down"),
                           receiver).start()
        ship_rs = Rsyslogd(os.path.join(W["dir"], "rs-ship-down"),
                           sender).start()
        try:
            p = start_proxy("down", logs, 64 * 1024)
            flood(p.port, 0, 80)
            time.sleep(1)
            ship_rs.stop()
            flood(p.port, 80, 160)      # rotates while nobody reads
            ship_rs.start()
            time.sleep(1)
            flood(p.port, 240, 40)
            stop_proxy(p)
            want = read_all(log_files(logs)).splitlines()
            sink = os.path.join(sinkdir, "sandgate-security.jsonl")
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                got = read_all([sink]).splitlines()
                if got and got[-1] == want[-1]:
                    break
                time.sleep(0.5)
        finally:
            ship_rs.stop()
            sink_rs.stop()
        self.assertGreater(len(log_files(logs)), 1, "no rotation")
        self.assertEqual(got[-1], want[-1])
        lost = [x for x in want if x not in set(got)]
        self.assertTrue(lost, "expected the unread lines of the renamed "
                        "file to be missing")
        self.assertTrue(all(x in want for x in got), "only true lines")
        r = subprocess.run([SANDGATE, "audit", "verify", sink],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 1, r.stdout)
        first = json.loads(lost[0])["seq"]
        self.assertIn("seq %d follows seq %d: %d event(s) removed"
                      % (json.loads(lost[-1])["seq"] + 1, first - 1,
                         len(lost)), r.stdout)


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=2).result
    failed = len(result.failures) + len(result.errors)
    print("%d passed, %d failed" % (result.testsRun - failed, failed))
    sys.exit(1 if failed else 0)
