"""`sandgate audit tail --follow` and `sandgate pending --follow` miss no
event (atk20r21 F2, F3).

No proxy: the log is written here, named and rotated as the proxy's
writer does (NAME -> NAME.1, NAME.i -> NAME.(i+1), a new NAME). The
tail's stdout is a pipe left unread until the tail has read its history
and blocks printing it: what is written and rotated then is exactly
what a follower that opened the current file again by name, at its end,
lost (F3: appended while the history was read), and more than one
rotation before its first poll (F2: the files rotated in between were
never read). No timing: every step waits on the pipe, not on a clock.
"""
import json
import os
import select
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proxylib  # noqa: E402

SANDGATE = os.path.join(proxylib.BIN, "sandgate")
NAME = "security-events.jsonl"
HISTORY = 3000		# lines: far more than a pipe holds
WAIT = 120		# seconds at most for the expected lines (not timed)


def event(seq):
    return json.dumps({"ts": "2026-12-03T10:00:00Z", "seq": seq,
                       "event": "egress.blocked", "port": 443,
                       "sandbox": "sbx_0123456789abcdef01234567",
                       "host": "h%d.test" % seq, "reason": "denied",
                       "pad": "x" * 120}) + "\n"


class Follow(unittest.TestCase):
    """`audit tail --follow --json`: events, each by its seq."""

    def command(self):
        return [SANDGATE, "audit", "tail", "--follow", "--json", "--lines",
                str(HISTORY), "--log-dir", self.dir]

    @staticmethod
    def seq_of(line):
        return json.loads(line)["seq"]

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name
        self.seq = 0
        self.append(HISTORY)
        self.err = open(os.path.join(self.dir, "stderr"), "w+")
        self.proc = subprocess.Popen(self.command(),
                                     stdout=subprocess.PIPE, stderr=self.err)
        # Its first line: the history was read (it prints after reading);
        # the pipe is not read further until the writes below are done.
        self.buf = b""
        while b"\n" not in self.buf:
            chunk = os.read(self.proc.stdout.fileno(), 4096)
            self.assertTrue(chunk, "the tail printed no history")
            self.buf += chunk

    def tearDown(self):
        self.proc.kill()
        self.proc.wait()
        self.proc.stdout.close()
        self.err.close()
        self.tmp.cleanup()

    def path(self, k=0):
        return os.path.join(self.dir, NAME + ("" if k == 0 else ".%d" % k))

    def append(self, n):
        with open(self.path(), "a") as f:
            for _ in range(n):
                self.seq += 1
                f.write(event(self.seq))
        return list(range(self.seq - n + 1, self.seq + 1))

    def rotate(self):
        k = 1
        while os.path.exists(self.path(k)):
            k += 1
        for i in range(k - 1, 0, -1):
            os.rename(self.path(i), self.path(i + 1))
        os.rename(self.path(), self.path(1))
        open(self.path(), "w").close()

    def printed(self, last):
        """The seqs printed, until seq last is (or WAIT runs out)."""
        seqs, buf, end = [], self.buf, time.monotonic() + WAIT
        fd = self.proc.stdout.fileno()
        while True:
            *lines, buf = buf.split(b"\n")
            seqs += [self.seq_of(x) for x in lines]
            if (seqs and seqs[-1] == last) or time.monotonic() > end:
                return seqs
            if not select.select([fd], [], [], 1)[0]:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                return seqs
            buf += chunk

    def test_1_appended_while_history_read(self):
        """F3: the events written while the history printed follow it."""
        new = self.append(5)
        self.assertEqual(self.printed(new[-1]), list(range(1, new[-1] + 1)))

    def test_2_rotations_between_polls(self):
        """F2: three rotations before one poll: every file read, in order."""
        self.append(2)
        for _ in range(3):
            self.rotate()
            self.append(2)
        self.assertEqual(self.printed(self.seq), list(range(1, self.seq + 1)))

    def test_3_rotated_away(self):
        """The file followed and the next one deleted (past keep) before
        they were found: the rest of the file followed is read from its
        fd, the events of the one gone are missing, and stderr says so."""
        mine = self.append(2)
        self.rotate()
        gone = self.append(2)
        self.rotate()
        os.unlink(self.path(2))
        os.unlink(self.path(1))
        new = self.append(2)
        seqs = self.printed(new[-1])
        self.assertEqual(seqs, list(range(1, mine[-1] + 1)) + new)
        self.assertFalse(set(gone) & set(seqs))
        self.err.seek(0)
        self.assertIn("rotated away", self.err.read())


class PendingFollow(Follow):
    """`pending --follow --json` (F3 by code reading in the report): each
    event blocks a new host, so each is printed once, by its host."""

    def command(self):
        return [SANDGATE, "pending", "--follow", "--json", "--log-dir",
                self.dir]

    @staticmethod
    def seq_of(line):
        return int(json.loads(line)["host"][1:-len(".test")])

    def printed(self, last):
        seqs = Follow.printed(self, last)
        # The history comes sorted by its own order: compare it as a set.
        self.assertEqual(sorted(seqs[:HISTORY]), list(range(1, HISTORY + 1)))
        return list(range(1, HISTORY + 1)) + seqs[HISTORY:]


if __name__ == "__main__":
    unittest.main(verbosity=2)
