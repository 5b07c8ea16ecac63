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

Then logrotate's `create` and `copytruncate`, a planted copy of the
latest line renamed in, the file followed moved aside (atk20r23 F4,
atk20r25 F1): the follower goes by each file's device, inode and offset, so it
repeats nothing it read and hides nothing it did not.
"""
import ctypes
import hashlib
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import socket
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proxylib  # noqa: E402

SANDGATE = os.path.join(proxylib.BIN, "sandgate")
NAME = "security-events.jsonl"
HISTORY = 3000		# lines: far more than a pipe holds
WAIT = 120		# seconds at most for the expected lines (not timed)


def inotify(folder):
    """An fd that reads ready when a file is made or moved into folder."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
    in_create, in_moved_to = 0x100, 0x80
    if fd < 0 or libc.inotify_add_watch(fd, folder.encode(),
                                        in_create | in_moved_to) < 0:
        raise OSError(ctypes.get_errno(), "inotify on " + folder)
    return fd


def event(seq, **more):
    return json.dumps({"ts": "2026-12-03T10:00:00Z", "seq": seq, **more,
                       "event": "egress.blocked", "port": 443,
                       "sandbox": "sbx_0123456789abcdef01234567",
                       "host": "h%d.test" % seq, "reason": "denied",
                       "pad": "x" * 120}) + "\n"


def chained(seq, prev):
    """An event as the writer writes it: prev, and its own hash last (the
    SHA-256 of the line's bytes before ,"hash":" followed by })."""
    body = json.dumps({"ts": "2026-12-03T10:00:00Z", "seq": seq,
                       "event": "egress.blocked", "port": 443,
                       "sandbox": "sbx_0123456789abcdef01234567",
                       "host": "h%d.test" % seq, "reason": "denied",
                       "pad": "x" * 120, "prev": prev},
                      separators=(",", ":"))
    digest = hashlib.sha256(body.encode()).hexdigest()
    return body[:-1] + ',"hash":"%s"}\n' % digest, digest


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
        self.prev = "0" * 64
        self.append(HISTORY)
        self.err = open(os.path.join(self.dir, "stderr"), "w+")
        self.proc = subprocess.Popen(self.command(),
                                     stdout=subprocess.PIPE, stderr=self.err)
        # Its first line: the history was read (it prints after reading);
        # the pipe is not read further until the writes below are done.
        self.buf, self.got = b"", []
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
                f.write(self.next_event())
        return list(range(self.seq - n + 1, self.seq + 1))

    def next_event(self):
        """The writer's next event, chained to the one before."""
        self.seq += 1
        line, self.prev = chained(self.seq, self.prev)
        return line

    def rotate(self):
        self.shift()
        open(self.path(), "w").close()

    def printed(self, last):
        """The seqs printed so far, until seq last is (or WAIT runs out)."""
        return self.printed_all([last], last)

    def printed_all(self, want, last=None, wait=WAIT):
        """The seqs printed so far, until every seq of want is, and last
        is the last one when given (or wait runs out)."""
        seqs, end = self.got, time.monotonic() + wait
        fd = self.proc.stdout.fileno()
        while True:
            *lines, self.buf = self.buf.split(b"\n")
            seqs += [self.seq_of(x) for x in lines]
            if ((set(want) <= set(seqs) and
                 (last is None or (seqs and seqs[-1] == last))) or
                    time.monotonic() > end):
                return list(seqs)
            if not select.select([fd], [], [], 1)[0]:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                return list(seqs)
            self.buf += chunk

    def stderr(self):
        self.err.seek(0)
        return self.err.read()

    def write(self, w, n):
        """n events through the writer's own fd w (it has not reopened)."""
        for _ in range(n):
            w.write(self.next_event())
        w.flush()
        return list(range(self.seq - n + 1, self.seq + 1))

    def shift(self):
        """NAME.i -> NAME.(i+1), NAME -> NAME.1: a rotation's renames."""
        k = 1
        while os.path.exists(self.path(k)):
            k += 1
        for i in range(k - 1, 0, -1):
            os.rename(self.path(i), self.path(i + 1))
        os.rename(self.path(), self.path(1))

    def reopen(self, w):
        """The proxy's SIGUSR1 when NAME is not its file (logrotate's
        `create`): that file moved aside, its own made with O_EXCL."""
        w.close()
        os.rename(self.path(), self.path() + ".foreign.%d.%016x" %
                  (self.seq, 0))
        return open(self.path(), "x")

    def logrotate_create(self, real):
        """logrotate's `create`: NAME renamed to NAME.1, a new empty NAME
        made; the writer is told later (postrotate), so it goes on
        writing into NAME.1 meanwhile."""
        if not real:
            self.shift()
            open(self.path(), "x").close()
            return
        conf = os.path.join(self.dir, "logrotate.conf")
        with open(conf, "w") as f:
            f.write("%s {\n    rotate 52\n    create\n    missingok\n}\n"
                    % self.path())
        subprocess.run(["logrotate", "-f", "-s",
                        os.path.join(self.dir, "logrotate.state"), conf],
                       check=True)

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
        self.assertIn("rotated away", self.stderr())

    def create_rotations(self, real):
        """logrotate `create`, twice: the follower takes logrotate's empty
        NAME, the writer goes on in NAME.1 until told, then moves that
        NAME aside and makes its own. Before, the follower met a
        file it followed gone from the listing and printed every listed
        file again (the history twice), with the "rotated away" warning;
        and the events written into NAME.1 after the rename came only
        with that repeat."""
        w = open(self.path(), "a")
        for _ in range(2):
            before = self.write(w, 3)
            self.logrotate_create(real)
            after = self.write(w, 3)	# still into NAME.1
            # Printed in the step that takes logrotate's empty NAME.
            self.printed(after[-1])
            late = self.write(w, 2)	# NAME.1 still, the follower on NAME
            w = self.reopen(w)
            new = self.write(w, 3)
            seqs = self.printed_all(before + after + late + new, new[-1])
        w.close()
        self.assertEqual(seqs, list(range(1, self.seq + 1)))
        self.assertNotIn("rotated", self.stderr())
        self.assertNotIn("left the log", self.stderr())

    def test_4_logrotate_create(self):
        """logrotate's `create`, by its file operations."""
        self.create_rotations(False)

    @unittest.skipUnless(shutil.which("logrotate"), "no logrotate")
    def test_5_logrotate_create_real(self):
        """The same with logrotate itself (`create`, no `nocreate`)."""
        self.create_rotations(True)

    def test_9_logrotate_create_not_told(self):
        """logrotate's `create` and the writer not told (postrotate
        failed, or not yet run): it goes on in NAME.1, and its events
        show as they come, the follower on logrotate's empty NAME.
        Before, they showed only at the next rotation, if any."""
        w = open(self.path(), "a")
        before = self.write(w, 3)
        self.logrotate_create(False)
        self.printed(before[-1])
        for _ in range(3):
            late = self.write(w, 2)
            # Polled 5 times a second: seconds are ample.
            seqs = self.printed_all(late, late[-1], wait=20)
            self.assertEqual(seqs[-len(late):], late)
        w.close()
        self.assertEqual(seqs, list(range(1, self.seq + 1)))

    def test_6_copytruncate(self):
        """logrotate's `copytruncate`: NAME copied to NAME.1 (a file the
        follower never read) and cut. Events written after the point
        the follower had read to are in the copy only: the copy is read
        from its start (the history again: repeated, never hidden).
        Before, the cut NAME was read again from its start and
        the copy never: those events were lost."""
        copied = self.append(4)
        shutil.copyfile(self.path(), self.path(1))
        os.truncate(self.path(), 0)
        new = self.append(2)
        seqs = self.printed_all(range(1, self.seq + 1))
        self.assertEqual(set(seqs), set(range(1, self.seq + 1)))
        self.assertTrue(set(copied + new) <= set(seqs))
        self.assertIn("was cut", self.stderr())
        # atk35e F4: the copy is read before the cut file, so nothing
        # printed is said not seen. Before: "events seq 3001 to 3004
        # ... were not seen" for the copy printed right after.
        self.assertNotIn("not seen", self.stderr())

    def test_22_copytruncate_while_followed(self):
        """atk35e F4 (t3 B): the real logrotate's `copytruncate` while
        the file is followed (the follower stopped between two polls):
        the events written after its last read are in the copy NAME.1
        only, those after the cut in NAME. Nothing printed is said not
        seen. Before, the cut NAME was read from its start before the
        copy, and the events in the copy were said not seen though
        printed right after. (test_6 cuts before the follower started:
        no line of the history to judge by then.)"""
        self.printed(self.append(1)[-1])	# following, the chain seeded
        conf = os.path.join(self.dir, "logrotate.conf")
        with open(conf, "w") as f:
            f.write("%s {\n    rotate 52\n    copytruncate\n"
                    "    missingok\n}\n" % self.path())
        self.proc.send_signal(signal.SIGSTOP)
        try:
            copied = self.append(4)
            subprocess.run(["logrotate", "-f", "-s",
                            os.path.join(self.dir, "logrotate.state"),
                            conf], check=True)
            new = self.append(2)
        finally:
            self.proc.send_signal(signal.SIGCONT)
        seqs = self.printed_all(copied + new, wait=20)
        self.assertTrue(set(copied + new) <= set(seqs), self.stderr())
        self.assertIn("was cut", self.stderr())
        self.assertNotIn("not seen", self.stderr())

    def test_7_planted_copy_and_rename(self):
        """A folder writer plants a file whose line copies the latest
        event (its seq and hash) and renames it in as NAME, the writer's
        file shifted to NAME.1, where it goes on writing: every genuine
        event is shown (the planted copy may show too). What the lines
        say decides nothing (atk20r25 F1: a follower that skipped up to
        the last seq printed hid the events after the plant)."""
        w = open(self.path(), "a")
        genuine = self.write(w, 3)
        last = {"ts": "2026-12-03T10:00:00Z", "hash": "ab" * 32}
        plant = os.path.join(self.dir, "plant")
        with open(plant, "w") as f:
            f.write(event(self.seq, **last))
        self.shift()
        os.rename(plant, self.path())
        genuine += self.write(w, 3)	# the writer's file: NAME.1 now
        w.close()
        seqs = self.printed_all(range(1, self.seq + 1))
        self.assertEqual(set(seqs), set(range(1, self.seq + 1)))
        self.assertTrue(set(genuine) <= set(seqs))

    def test_8_followed_file_moved_aside(self):
        """The file followed moved out of the log and a planted copy of
        its last line put at NAME: every event written to it before the
        follower saw the move is shown, and stderr says the file left
        the log (events written to it later are not shown): moving the
        live file aside never silences the warning (atk20r25 F2)."""
        self.rotate()
        first = self.append(2)
        self.printed(first[-1])	# now following the new NAME
        w = open(self.path(), "a")
        genuine = self.write(w, 3)
        plant = os.path.join(self.dir, "plant")
        with open(plant, "w") as f:
            f.write(event(self.seq, hash="cd" * 32))
        os.rename(self.path(), os.path.join(self.dir, "aside"))
        os.rename(plant, self.path())
        w.close()
        seqs = self.printed_all(genuine)
        self.assertTrue(set(genuine) <= set(seqs))
        self.assertRegex(self.stderr(), "left the log|rotated away")

    def plant_name(self, to):
        """A folder writer renames NAME to to and makes an empty NAME,
        then waits for the follower to see it (a few polls)."""
        os.rename(self.path(), to)
        open(self.path(), "x").close()
        time.sleep(0.6)

    def test_10_renames_age_the_writer_out(self):
        """atk20r27 F2: the writer's file renamed to NAME.100 and four
        empty NAMEs planted and renamed away: the writer's file, still
        listed, is read as it grows. Before, only the last 3
        files followed were: its later events were hidden, silently."""
        w = open(self.path(), "a")
        self.printed(self.write(w, 3)[-1])
        for k in (100, 99, 98, 97):
            self.plant_name(self.path(k))
        late = self.write(w, 5)
        w.close()
        seqs = self.printed_all(late, wait=10)
        self.assertTrue(set(late) <= set(seqs))

    def test_11_moved_aside_in_two_steps(self):
        """atk20r27 F4: the writer's file renamed to NAME.1 (an empty NAME
        planted), then moved out of the log (NAME.1 and NAME planted
        again): it is still held and read as it grows, and stderr says a
        file out of the log is written. Before, it was dropped
        silently and its later events hidden."""
        w = open(self.path(), "a")
        self.printed(self.write(w, 3)[-1])
        self.plant_name(self.path(1))
        os.rename(self.path(1), os.path.join(self.dir, "aside"))
        self.plant_name(self.path(1))
        late = self.write(w, 5)
        w.close()
        seqs = self.printed_all(late, wait=10)
        self.assertTrue(set(late) <= set(seqs))
        self.assertIn("left the log", self.stderr())

    def test_12_cut_and_grown_back(self):
        """atk20r27 F3: the file followed cut (copytruncate) and written
        past the follower's offset before its next look (the follower
        stopped): the cut is seen by the bytes before the offset, which
        are no longer those it read; the file is read again from its
        start. Before, it read on from its offset: the events
        written after the cut up to there were hidden, silently."""
        self.printed(self.append(1)[-1])	# read by the follower
        size = os.path.getsize(self.path())
        self.proc.send_signal(signal.SIGSTOP)
        try:
            os.truncate(self.path(), 0)
            new = []
            while os.path.getsize(self.path()) <= size + 1000:
                new += self.append(100)
        finally:
            self.proc.send_signal(signal.SIGCONT)
        seqs = self.printed_all(new, wait=20)
        self.assertTrue(set(new) <= set(seqs),
                        (sorted(set(new) - set(seqs))[:5], self.stderr()))
        self.assertIn("was cut", self.stderr())

    def test_13_planted_file_and_rotated_away(self):
        """atk20r29 F1: an empty NAME.500 planted (a name past the
        writer's numbers), then the file followed and its successor
        rotated away while the follower was stopped: stderr says events
        were rotated away. Before, the planted file, held and listed,
        counted as "a file read still there": stderr said instead that
        the file followed "is still read as it grows"."""
        open(self.path(500), "x").close()
        self.rotate()
        self.printed(self.append(2)[-1])	# NAME.500 listed and held
        self.proc.send_signal(signal.SIGSTOP)
        try:
            self.rotate()
            gone = self.append(2)
            self.rotate()
            for k in (1, 2, 3):
                os.unlink(self.path(k))
            new = self.append(2)
        finally:
            self.proc.send_signal(signal.SIGCONT)
        seqs = self.printed_all(new, wait=20)
        self.assertTrue(set(new) <= set(seqs))
        self.assertFalse(set(gone) & set(seqs))
        self.assertIn("rotated away", self.stderr())

    def test_14_sparse_file_planted(self):
        """atk20r29 F4: a sparse NAME.777 of 16 TiB (no disk used) planted,
        then a rotation: the events after it show within seconds, and
        stderr says NAME.777 holds no log line. Before, the follower
        read its zeros as one line, for hours, printing nothing."""
        with open(self.path(777), "x") as f:
            f.truncate((16 << 40) - 4096)
        self.rotate()
        new = self.append(3)
        seqs = self.printed_all(new, wait=20)
        self.assertTrue(set(new) <= set(seqs), self.stderr())
        self.assertIn("not a log line", self.stderr())
        more = self.append(2)
        seqs = self.printed_all(more, wait=20)
        self.assertTrue(set(more) <= set(seqs))

    def test_15_new_file_moved_out_between_polls(self):
        """atk20r29 F3: right after a rotation, the new NAME (events in
        it) moved out of the folder and the file rotated put back at
        NAME, all between two polls: no listing can see that file, but
        the writer's seqs jump, and stderr says which events were not
        seen. Before, nothing was said."""
        self.printed(self.append(1)[-1])
        self.proc.send_signal(signal.SIGSTOP)
        try:
            lost = self.lose_new_file()
        finally:
            self.proc.send_signal(signal.SIGCONT)
        time.sleep(0.6)
        new = self.append(2)
        seqs = self.printed_all(new, wait=20)
        self.assertTrue(set(new) <= set(seqs))
        self.assertRegex(self.stderr(), "events seq %d to %d .* not seen"
                         % (lost[0], lost[-1]))

    def lose_new_file(self):
        """A rotation, 3 events in the new NAME, then that NAME moved out
        of the folder and the file rotated put back at NAME (atk20r29
        F3). Returns the seqs of the 3 events, never in the folder."""
        self.rotate()
        lost = self.append(3)
        os.rename(self.path(), os.path.join(self.dir, "aside"))
        os.rename(self.path(1), self.path())
        return lost

    def bridge(self, chain):
        """A folder writer's NAME.999: lines of consecutive seq from 1 to
        past the writer's, checkpoints (not printed by the tail), with a hash chain of
        their own from zeros when chain."""
        prev = "0" * 64
        with open(self.path(999), "x") as f:
            for k in range(1, self.seq + 100):
                if not chain:
                    f.write('{"event":"log.checkpoint","seq":%d}\n' % k)
                    continue
                body = '{"ts":"2026-12-03T10:00:00Z","seq":%d,"event":' \
                    '"log.checkpoint","prev":"%s"}' % (k, prev)
                prev = hashlib.sha256(body.encode()).hexdigest()
                f.write(body[:-1] + ',"hash":"%s"}\n' % prev)

    def bridged(self, chain):
        """atk20r31 F1: test_15's move, a planted run of seq lines that
        covers the gap, then a rotation (the listing reads it before the
        writer's new file): stderr still says events were not seen (the
        line after the gap follows no line shown). Before, the seq
        tracker went along the planted lines: nothing was said."""
        self.printed(self.append(1)[-1])
        self.proc.send_signal(signal.SIGSTOP)
        try:
            lost = self.lose_new_file()
            self.bridge(chain)
            # The next rotation: the listing reads NAME.999 first.
            self.rotate()
            new = self.append(2)
        finally:
            self.proc.send_signal(signal.SIGCONT)
        seqs = self.printed_all(new, wait=20)
        self.assertTrue(set(new) <= set(seqs))
        self.assertFalse(set(lost) & set(seqs))
        self.assertRegex(self.stderr(), "events (seq %d to %d|before seq "
                         "%d) .* not seen" % (lost[0], lost[-1], new[0]))

    def test_17_planted_seq_bridge(self):
        """atk20r31 F1: planted checkpoint lines {"seq":1..N}."""
        self.bridged(False)

    def test_18_planted_chain_bridge(self):
        """atk20r31 F1: planted lines with a hash chain of their own."""
        self.bridged(True)

    def first_line_lost(self, plant):
        """atk20r31 F5: the first file the writer made after the history
        moved out before the follower looked, (plant: and a line of seq
        2^63-1 planted): the line after it is judged against the
        history's last (seeded), and said. Before, the tracker started
        empty after the history (nothing said), and a planted seq of
        2^63-1 overflowed into `events seq -9223372036854775808`."""
        self.proc.send_signal(signal.SIGSTOP)
        try:
            if plant:
                with open(self.path(999), "x") as f:
                    f.write('{"event":"log.checkpoint",'
                            '"seq":9223372036854775807}\n')
            self.rotate()
            lost = self.append(1)
            os.rename(self.path(), os.path.join(self.dir, "aside"))
            open(self.path(), "x").close()
            new = self.append(2)
        finally:
            self.proc.send_signal(signal.SIGCONT)
        seqs = self.printed_all(new, wait=20)
        self.assertTrue(set(new) <= set(seqs))
        self.assertRegex(self.stderr(), "events seq %d to %d .* not seen"
                         % (lost[0], lost[-1]))
        self.assertNotIn("-9223372036854775808", self.stderr())

    def test_19_first_line_judged(self):
        self.first_line_lost(False)

    def test_20_seq_max_planted(self):
        self.first_line_lost(True)

    def test_21_new_file_gone_after_rotation(self):
        """atk20r31 F3: NAME renamed to NAME.1 and the writer's new NAME
        moved out at once (none left): stderr says so within polls, and
        events the writer adds to NAME.1 still show. Before, nothing was
        said, for good."""
        w = open(self.path(), "a")
        self.printed(self.write(w, 1)[-1])
        self.shift()
        late = self.write(w, 2)
        w.close()
        seqs = self.printed_all(late, wait=20)
        self.assertTrue(set(late) <= set(seqs))
        end = time.monotonic() + 10
        while "is missing" not in self.stderr() and time.monotonic() < end:
            time.sleep(0.2)
        self.assertIn("is missing and the file followed was rotated",
                      self.stderr())

    def test_16_many_planted_files(self):
        """atk20r29 F2: 600 empty NAME.k planted under an open-file limit
        of 1024, then rotations: the follower lists them (one fd each,
        not two) and shows the events after the first; at the next, when
        they no longer fit, it says so and keeps running. Before, it
        asked room for the listing only, then duplicated every fd: it
        exited at the first rotation ("Too many open files")."""
        import resource
        resource.prlimit(self.proc.pid, resource.RLIMIT_NOFILE,
                         (1024, 1024))
        for k in range(1000, 1600):
            open(self.path(k), "x").close()
        self.rotate()
        first = self.append(2)
        seqs = self.printed_all(first, wait=20)
        self.assertTrue(set(first) <= set(seqs), self.stderr())
        self.rotate()
        second = self.append(2)
        seqs = self.printed_all(second, wait=3)
        self.assertIsNone(self.proc.poll(), self.stderr())
        if not set(second) <= set(seqs):
            self.assertIn("cannot be listed", self.stderr())


class PendingFollow(Follow):
    """`pending --follow --json` (F3 by code reading in the report): each
    event blocks a new host, so each is printed once, by its host."""

    def command(self):
        return [SANDGATE, "pending", "--follow", "--json", "--log-dir",
                self.dir]

    @staticmethod
    def seq_of(line):
        return int(json.loads(line)["host"][1:-len(".test")])

    def printed_all(self, want, last=None, wait=WAIT):
        seqs = Follow.printed_all(self, want, last, wait)
        # The history comes sorted by its own order: compare it as a set.
        self.assertEqual(sorted(seqs[:HISTORY]), list(range(1, HISTORY + 1)))
        return list(range(1, HISTORY + 1)) + seqs[HISTORY:]


class ProxyFollow(unittest.TestCase):
    """The proxy itself writing and rotating (loopback only, every
    request blocked: an empty policy folder), a folder writer moving its
    files (atk20r31 F1, F3): what the tail does not print, its stderr
    says."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = os.path.join(self.tmp.name, "log")
        self.aside = os.path.join(self.tmp.name, "aside")
        self.policy = os.path.join(self.tmp.name, "policy")
        for d in (self.dir, self.aside, self.policy):
            os.makedirs(d)
        self.proxy = None
        self.perr = open(os.path.join(self.tmp.name, "proxy.err"), "w")
        self.out = open(os.path.join(self.tmp.name, "out"), "w+")
        self.err = open(os.path.join(self.tmp.name, "err"), "w+")
        self.tail = None

    def start(self, args):
        """The proxy, logging into self.dir, args its log options."""
        self.port = proxylib.free_port()
        self.sent = 0
        self.statuses = []
        self.proxy = subprocess.Popen(
            [proxylib.PROXY_BIN, "--listen", "127.0.0.1:%d" % self.port,
             "--policy-dir", self.policy, "--log-dir", self.dir,
             "--block-burst", "1000000", "--block-budget", "1000000"] +
            args, stdin=subprocess.DEVNULL, stdout=self.perr,
            stderr=self.perr, env=proxylib.clean_env())
        end = time.monotonic() + 15
        while time.monotonic() < end:
            try:
                socket.create_connection(("127.0.0.1", self.port)).close()
                break
            except OSError:
                time.sleep(0.05)

    def follow(self):
        self.tail = subprocess.Popen(
            [SANDGATE, "audit", "tail", "-f", "-n", "10000", "--json",
             "--log-dir", self.dir], stdout=self.out, stderr=self.err)
        time.sleep(0.5)

    def tearDown(self):
        for p in (self.tail, self.proxy):
            if p is not None:
                p.kill()
                p.wait()
        for f in (self.out, self.err, self.perr):
            f.close()
        self.tmp.cleanup()

    def events(self, n):
        """n blocked requests; the status line of each kept (a log
        unavailable refuses egress otherwise than a policy block)."""
        for _ in range(n):
            self.sent += 1
            host = "x%d.blocked.test" % self.sent
            c = socket.create_connection(("127.0.0.1", self.port))
            c.sendall(("GET http://%s/ HTTP/1.1\r\nHost: %s\r\n"
                       "Connection: close\r\n\r\n" % (host, host)).encode())
            got = b""
            while True:
                b = c.recv(65536)
                if not b:
                    break
                got += b
            c.close()
            self.statuses.append(got.split(b" ", 2)[1])

    def written(self, *dirs):
        """The events written in any file of dirs (the log's folder, and
        where a folder writer moved files to)."""
        got = set()
        for d in dirs:
            for name in os.listdir(d):
                p = os.path.join(d, name)
                if os.path.islink(p) or not os.path.isfile(p):
                    continue
                with open(p, "rb") as f:
                    for line in f:
                        try:
                            host = json.loads(line).get("host", "")
                        except ValueError:
                            continue
                        if host.startswith("x") and \
                                host.endswith(".blocked.test"):
                            got.add(int(host[1:].split(".")[0]))
        return got

    def printed(self):
        """The events printed, once the tail's output has stopped growing
        for a second (it may still be printing when its warning is out);
        a last line still being written is not one."""
        end, size = time.monotonic() + 30, -1
        while time.monotonic() < end and size != os.path.getsize(
                self.out.name):
            size = os.path.getsize(self.out.name)
            time.sleep(1)
        self.out.seek(0)
        got = set()
        for line in self.out:
            if not line.endswith("\n"):
                break
            host = json.loads(line).get("host", "")
            if host.startswith("x") and host.endswith(".blocked.test"):
                got.add(int(host[1:].split(".")[0]))
        return got

    def stderr(self):
        self.err.seek(0)
        return self.err.read()

    def said(self, pattern, wait=60):
        """stderr once it matches pattern, or as it is after wait s: the
        follower reads at its own pace (under ASan and other load, 100,000
        planted lines take it seconds)."""
        end = time.monotonic() + wait
        while time.monotonic() < end and not re.search(pattern,
                                                       self.stderr()):
            time.sleep(0.2)
        return self.stderr()

    def path(self, name=NAME):
        return os.path.join(self.dir, name)

    def test_1_moved_out_and_back_and_bridged(self):
        """atk20r31 F1 (t1, bridgeck): the file followed moved out of the
        folder right after its rotation while the tail was stopped, the
        files after it rotated away, then put back under the next writer
        name, and 100,000 planted checkpoints of seq 1.. as NAME.999: the
        events rotated away are not printed, and stderr says so. Before,
        stderr was empty."""
        self.start(["--log-max-size", "4k", "--log-keep", "3",
                    "--log-keep-min-age", "0"])
        self.follow()
        self.events(3)
        time.sleep(0.6)
        followed = os.stat(self.path()).st_ino
        self.tail.send_signal(signal.SIGSTOP)
        while os.stat(self.path()).st_ino == followed:
            self.events(1)
        for name in os.listdir(self.dir):
            if os.stat(self.path(name)).st_ino == followed:
                os.rename(self.path(name), os.path.join(self.aside, "A"))
        self.events(60)
        nums = [int(x.rsplit(".", 1)[1]) for x in os.listdir(self.dir)
                if x.startswith(NAME + ".") and x.rsplit(".", 1)[1].isdigit()]
        os.rename(os.path.join(self.aside, "A"),
                  self.path("%s.%d" % (NAME, max(nums + [0]) + 1)))
        with open(self.path(NAME + ".999"), "w") as f:
            for k in range(1, 100001):
                f.write('{"event":"log.checkpoint","seq":%d}\n' % k)
        self.tail.send_signal(signal.SIGCONT)
        said = self.said("not seen|rotated faster")
        missing = set(range(1, self.sent + 1)) - self.printed()
        self.assertTrue(missing, "nothing rotated away: no test")
        self.assertRegex(said, "not seen|rotated faster")

    def test_2_new_file_moved_out(self):
        """atk20r31 F3 (t3): the proxy's new file moved out of the folder
        right after its rotation, NAME left missing: the proxy writes on
        there, out of reach; stderr says so. Before, every later event
        went unprinted with stderr empty, for good."""
        self.start(["--log-max-size", "8k", "--log-keep", "10"])
        self.follow()
        self.events(3)
        time.sleep(0.5)
        first = os.stat(self.path()).st_ino
        done = threading.Event()
        # The tail stopped until the new file is moved out: else it may
        # open that file first and follow it wherever it is moved, and
        # then it misses nothing (CI saw it once: 63 of 63 printed).
        self.tail.send_signal(signal.SIGSTOP)

        def watch():
            while not done.is_set():
                try:
                    if os.lstat(self.path()).st_ino != first:
                        os.rename(self.path(),
                                  os.path.join(self.aside, "N0"))
                        return
                except FileNotFoundError:
                    pass
                time.sleep(0.0005)
        t = threading.Thread(target=watch)
        t.start()
        for _ in range(60):
            self.events(1)
            time.sleep(0.02)
        done.set()
        t.join()
        self.tail.send_signal(signal.SIGCONT)
        time.sleep(2)
        self.assertTrue(os.listdir(self.aside), "no rotation: no test")
        self.assertLess(len(self.printed()), self.sent)
        # The proxy's next rotation tries move the file followed on to
        # NAME.2: then the missing NAME is said at the 10th poll; or the
        # proxy's tick put a new file at NAME first, then the follower
        # names the events it did not see. Either says they were not seen.
        said = "is missing and the file followed was rotated|" \
            "no current file|were not seen"
        self.assertRegex(self.said(said), said)

    def swapper(self, done, planted_fresh):
        """A folder writer: every file at NAME it did not put there is
        moved to self.aside and an empty file renamed (planted_fresh: a
        new one each time) or hard-linked (the same one, again and again,
        as fast as it can: atk35e racer.c) onto NAME. Returns the thread;
        its count of swaps in self.swaps."""
        self.swaps = 0
        planted = os.path.join(self.dir, ".planted")
        open(planted, "w").close()
        mine = {os.stat(planted).st_ino}

        def run():
            k = 0
            while not done.is_set():
                try:
                    if planted_fresh:
                        st = os.lstat(self.path())
                        if st.st_ino in mine:
                            time.sleep(0.0005)
                            continue
                        k += 1
                        p = os.path.join(self.dir, ".p%d" % k)
                        open(p, "w").close()
                        mine.add(os.stat(p).st_ino)
                        os.rename(self.path(),
                                  os.path.join(self.aside, "N%d" % k))
                        os.rename(p, self.path())
                        self.swaps += 1
                        continue
                    try:
                        os.link(planted, self.path())
                        continue
                    except FileExistsError:
                        pass
                    if os.lstat(self.path()).st_ino not in mine:
                        k += 1
                        os.rename(self.path(),
                                  os.path.join(self.aside, "N%d" % k))
                        self.swaps += 1
                except FileNotFoundError:
                    pass
        t = threading.Thread(target=run)
        t.start()
        return t

    def proxy_stderr(self):
        self.perr.flush()
        with open(self.perr.name) as f:
            return f.read()

    def test_3_every_new_file_swapped(self):
        """atk35b F1 (t1 repeat), atk35e F3: a folder writer moves every
        file the proxy puts at NAME out of the folder and renames an
        empty one onto NAME. No event is lost (all are in the folder or
        where the files were moved), no request is refused, and the
        follower says on stderr which events it did not see, without the
        swapping having to stop. Before, the proxy wrote on in the file
        that left, and the follower's stderr was silent for good."""
        self.start(["--log-max-size", "8k", "--log-keep", "10"])
        self.follow()
        self.events(3)
        done = threading.Event()
        t = self.swapper(done, True)
        try:
            for _ in range(40):
                self.events(1)
                time.sleep(0.02)
            said = self.said("were not seen|events before seq|"
                             "rotated faster",
                             wait=WAIT)
        finally:
            done.set()
            t.join()
        self.assertTrue(self.swaps, "nothing swapped: no test")
        self.assertRegex(said, "were not seen|events before seq|"
                         "rotated faster")
        self.events(3)
        self.assertEqual(self.written(self.dir, self.aside),
                         set(range(1, self.sent + 1)))
        self.assertEqual(set(self.statuses), {b"403"})
        # NAME the proxy's file again (the swapper's last empty one
        # replaced at the proxy's next tick): it holds the last event.
        last = "x%d.blocked.test" % self.sent
        end = time.monotonic() + WAIT
        while time.monotonic() < end:
            try:
                with open(self.path(), "rb") as f:
                    if last.encode() in f.read():
                        break
            except FileNotFoundError:
                pass
            time.sleep(0.1)
        # atk35e F5: verify notes the log.moved line that breaks the
        # chain (unsigned: it is the breaking line itself).
        r = subprocess.run([SANDGATE, "audit", "verify", "--log-dir",
                            self.dir], capture_output=True, text=True)
        self.assertRegex(r.stdout, r"note: .*left the log's name")

    def test_4_racing_relink(self):
        """atk35e F1 (racer.c): a folder writer links one empty file at
        NAME as fast as it can and moves any other file found there out,
        while the proxy writes and rotates. No event is lost and no
        request refused (the new file is put at NAME in one step, the
        file the proxy holds written on until then); the proxy's stderr
        and its NAME.foreign.* files stay bounded. Before, events were
        lost and egress refused at the rotations."""
        self.start(["--log-max-size", "8k", "--log-keep", "10"])
        self.events(3)
        done = threading.Event()
        t = self.swapper(done, False)
        start = time.monotonic()
        try:
            for _ in range(150):
                self.events(1)
                time.sleep(0.02)
        finally:
            done.set()
            t.join()
        secs = time.monotonic() - start
        self.events(3)
        self.assertTrue(self.swaps, "nothing swapped: no test")
        self.assertEqual(self.written(self.dir, self.aside),
                         set(range(1, self.sent + 1)))
        self.assertEqual(set(self.statuses), {b"403"})
        foreign = [x for x in os.listdir(self.dir) if ".foreign." in x]
        self.assertLessEqual(len(foreign), 16)
        # A line a second of each of three kinds, at most.
        lines = self.proxy_stderr().count("\n")
        self.assertLessEqual(lines, 3 * (secs + 3) + 10)

    def test_5_swap_keeps_the_anchor(self):
        """atk35e F2 (t5): the oldest rotated file deleted, then NAME
        swapped with an empty file (renameat2 RENAME_EXCHANGE) and the
        files put back in order around it: verify --anchor still says
        the events of the deleted file were removed. Before, the proxy
        recounted its files at the swap and moved the anchor's first."""
        keys = os.path.join(self.tmp.name, "keys")
        key = os.path.join(keys, "checkpoint.key")
        r = subprocess.run([SANDGATE, "audit", "key", "create", key],
                           capture_output=True)
        self.assertEqual(r.returncode, 0, r)
        self.start(["--log-max-size", "8k", "--log-keep", "10",
                    "--checkpoint-key", key])
        while not os.path.exists(self.path(NAME + ".4")):
            self.events(1)
        self.events(2)

        def verify():
            return subprocess.run(
                [SANDGATE, "audit", "verify", "--key", key + ".pub",
                 "--anchor", key + ".anchor", "--log-dir", self.dir],
                capture_output=True, text=True)
        end = time.monotonic() + WAIT
        while verify().returncode != 0 and time.monotonic() < end:
            time.sleep(0.2)
        os.unlink(self.path(NAME + ".4"))
        self.assertNotEqual(verify().returncode, 0)
        p = self.path(".p")
        open(p, "w").close()
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.renameat2(-100, self.path().encode(), -100, p.encode(),
                          2) != 0:
            self.skipTest("no RENAME_EXCHANGE here")
        ino = os.stat(self.path()).st_ino
        self.events(1)
        end = time.monotonic() + WAIT	# the tick's check, if any
        while os.stat(self.path()).st_ino == ino and \
                time.monotonic() < end:
            time.sleep(0.1)
        for i in (3, 2, 1):
            os.rename(self.path("%s.%d" % (NAME, i)),
                      self.path("%s.%d" % (NAME, i + 1)))
        os.rename(p, self.path(NAME + ".1"))
        self.events(30)
        r = verify()
        self.assertNotEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stdout + r.stderr, "were removed")

    def test_6_late_usr1_moves_first(self):
        """atk36c F1 (t6 C): logrotate's `create` (rotate 2) by its file
        operations, its SIGUSR1 coming after the proxy's tick has put a new
        file at NAME in place of logrotate's empty one, and its oldest
        file deleted after that signal (logrotate deletes after its
        postrotate script). verify --key --anchor passes after each
        rotation: the proxy counts the file that left at the tick when the
        signal finds it at NAME.1, and counts again at the ticks after the
        signal, and writes a checkpoint (and so its anchor) when first
        moves. Before, the anchor's first stayed at seq 1 for good and
        verify said seq 1 to ... were removed from the third rotation on."""
        keys = os.path.join(self.tmp.name, "keys")
        key = os.path.join(keys, "checkpoint.key")
        r = subprocess.run([SANDGATE, "audit", "key", "create", key],
                           capture_output=True)
        self.assertEqual(r.returncode, 0, r)
        self.start(["--log-keep", "10", "--checkpoint-key", key])

        def verify():
            return subprocess.run(
                [SANDGATE, "audit", "verify", "--key", key + ".pub",
                 "--anchor", key + ".anchor", "--log-dir", self.dir],
                capture_output=True, text=True)
        for run in range(4):
            self.events(5)
            for i in (2, 1):
                if os.path.exists(self.path("%s.%d" % (NAME, i))):
                    os.rename(self.path("%s.%d" % (NAME, i)),
                              self.path("%s.%d" % (NAME, i + 1)))
            os.rename(self.path(), self.path(NAME + ".1"))
            open(self.path(), "w").close()
            created = os.stat(self.path()).st_ino
            self.events(2)
            end = time.monotonic() + WAIT	# the tick's new file
            while os.stat(self.path()).st_ino == created and \
                    time.monotonic() < end:
                time.sleep(0.05)
            self.assertNotEqual(os.stat(self.path()).st_ino, created)
            self.proxy.send_signal(signal.SIGUSR1)
            time.sleep(0.05)	# postrotate's kill returns, then:
            if os.path.exists(self.path(NAME + ".3")):
                os.unlink(self.path(NAME + ".3"))
            # The checkpoint the proxy writes when first moves, and its
            # anchor: a tick or two (the timer's is 60 s away).
            end = time.monotonic() + 20
            while True:
                self.events(1)
                r = verify()
                if r.returncode == 0 or time.monotonic() > end:
                    break
                time.sleep(0.5)
            self.assertEqual(r.returncode, 0, "rotation %d: %s" % (
                run, r.stdout + r.stderr))

    def test_7_delete_long_after_usr1(self):
        """atk36g F1 (t1 D): logrotate's `create` (rotate 2) whose
        postrotate goes on after its `kill -USR1` (`sharedscripts`
        reloading other services): logrotate deletes its oldest file only
        once the whole script ended, here LATE seconds after the signal.
        verify --key --anchor passes after each rotation: the proxy
        counts its rotated files again at each tick until the folder has
        changed and then held still, or 60 s after the signal. Before, it
        counted for 3 s only: the anchor's first stayed a rotation behind
        for good and verify said seq 1 to ... were removed from the third
        rotation on."""
        late = 4.5	# seconds: past the 3 s the proxy counted before
        keys = os.path.join(self.tmp.name, "keys")
        key = os.path.join(keys, "checkpoint.key")
        r = subprocess.run([SANDGATE, "audit", "key", "create", key],
                           capture_output=True)
        self.assertEqual(r.returncode, 0, r)
        self.start(["--log-keep", "10", "--checkpoint-key", key])

        def verify():
            return subprocess.run(
                [SANDGATE, "audit", "verify", "--key", key + ".pub",
                 "--anchor", key + ".anchor", "--log-dir", self.dir],
                capture_output=True, text=True)
        for run in range(4):
            self.events(5)
            for i in (2, 1):
                if os.path.exists(self.path("%s.%d" % (NAME, i))):
                    os.rename(self.path("%s.%d" % (NAME, i)),
                              self.path("%s.%d" % (NAME, i + 1)))
            os.rename(self.path(), self.path(NAME + ".1"))
            open(self.path(), "w").close()
            self.proxy.send_signal(signal.SIGUSR1)	# postrotate, then:
            signalled = time.monotonic()
            self.events(2)
            time.sleep(max(0, signalled + late - time.monotonic()))
            if os.path.exists(self.path(NAME + ".3")):
                os.unlink(self.path(NAME + ".3"))
            # The checkpoint the proxy writes when first moves, and its
            # anchor: a tick or two (the timer's is 60 s away).
            end = time.monotonic() + 20
            while True:
                self.events(1)
                r = verify()
                if r.returncode == 0 or time.monotonic() > end:
                    break
                time.sleep(0.5)
            self.assertEqual(r.returncode, 0, "rotation %d: %s" % (
                run, r.stdout + r.stderr))

    DRY = r"%s' has held no line of the writer's for \d+ s since the " \
        r"file followed left \((\d+) swap" % re.escape(NAME)

    def test_8_swap_loop_said_while_it_lasts(self):
        """atk35e F3 (t1 repeat): a folder writer moves every file the
        proxy puts at NAME out of the folder before the follower opens it
        and renames an empty one onto NAME, for as long as it likes. The
        follower says so on stderr while it goes on (NAME has held no line
        of the writer's since the file followed left, with the swaps seen),
        again while it lasts, and when it ends. Before, its stderr said
        nothing of it until the swapping stopped."""
        self.start(["--log-max-size", "8k", "--log-keep", "10"])
        self.follow()
        self.events(3)
        done = threading.Event()
        t = self.swapper(done, True)
        try:
            # Events flow meanwhile (hidden); said twice, swaps counted.
            end = time.monotonic() + WAIT
            while len(re.findall(self.DRY, self.stderr())) < 2 and \
                    time.monotonic() < end:
                self.events(1)
                time.sleep(0.1)
            during = self.stderr()
            self.assertTrue(self.swaps, "nothing swapped: no test")
        finally:
            done.set()
            t.join()
        said = re.findall(self.DRY, during)
        self.assertGreaterEqual(len(said), 2, during)
        self.assertGreaterEqual(int(said[-1]), 2, during)
        # Stopped: the proxy's next file stays at NAME, its log.moved read.
        self.events(3)
        self.assertRegex(self.said("holds a line of the writer's again"),
                         "holds a line of the writer's again")
        self.assertRegex(self.stderr(), "were not seen|events before seq")

    def inturn(self, done, body, in_turn):
        """A folder writer (atk37a inturn.c): NAME's file shifted to
        NAME.1 at once; then every file at NAME it did not put there is
        moved to self.aside and a file of its own holding body renamed
        onto NAME; in_turn: every file of its own the proxy moves aside
        is renamed to NAME.1 (NAME.<n> shifted up), as if rotated.
        Returns the thread; its count of swaps in self.swaps."""
        self.swaps = 0
        mine, k, rotated = set(), [0], re.compile(re.escape(NAME) +
                                                  r"\.(\d+)$")

        def shift_in(src):
            nums = sorted((int(m.group(1)) for m in map(
                rotated.match, os.listdir(self.dir)) if m), reverse=True)
            for n in nums:
                os.rename(self.path("%s.%d" % (NAME, n)),
                          self.path("%s.%d" % (NAME, n + 1)))
            os.rename(src, self.path(NAME + ".1"))

        def plant():
            k[0] += 1
            p = os.path.join(self.dir, ".q%d" % k[0])
            with open(p, "wb") as f:
                f.write(body)
            mine.add(os.stat(p).st_ino)
            os.rename(p, self.path())

        def run():
            shift_in(self.path())
            plant()
            watch = inotify(self.dir)
            while not done.is_set():
                # At once: a file the proxy moves is found in the folder
                # for a moment only (atk37a inturn.c waits the same way).
                if select.select([watch], [], [], 0.05)[0]:
                    os.read(watch, 65536)
                try:
                    st = os.lstat(self.path())
                    if st.st_ino not in mine:
                        os.rename(self.path(), os.path.join(
                            self.aside, "P%d" % self.swaps))
                        self.swaps += 1
                        plant()
                except FileNotFoundError:
                    plant()
                for name in os.listdir(self.dir) if in_turn else ():
                    if name == NAME or rotated.match(name) or \
                            name.startswith(".q"):
                        continue
                    try:
                        if os.lstat(self.path(name)).st_ino in mine:
                            shift_in(self.path(name))
                    except FileNotFoundError:
                        pass
            os.close(watch)
        t = threading.Thread(target=run)
        t.start()
        return t

    def swapped_while_said(self, body, in_turn):
        """The inturn() folder writer runs, events flowing, until the dry
        warning is said twice (or WAIT s); stopped, the proxy's next
        file stays at NAME. body None: a copy of the last line written
        before. Returns body."""
        self.start(["--log-max-size", "10m"])
        self.follow()
        self.events(5)
        end = time.monotonic() + WAIT
        while len(self.printed()) < 5 and time.monotonic() < end:
            time.sleep(0.2)
        if body is None:
            with open(self.path(), "rb") as f:
                body = f.read().splitlines()[-1] + b"\n"
        done = threading.Event()
        t = self.inturn(done, body, in_turn)
        try:
            # Said within 4 s; a race the writer loses (the follower
            # lists the folder while a file of its own is at no name of
            # the log) makes even a follower without the fix say it.
            end = time.monotonic() + 30
            while len(re.findall(self.DRY, self.stderr())) < 2 and \
                    time.monotonic() < end:
                self.events(1)
                time.sleep(0.05)
            during = self.stderr()
            self.assertTrue(self.swaps, "nothing swapped: no test")
        finally:
            done.set()
            t.join()
        said = re.findall(self.DRY, during)
        self.assertGreaterEqual(len(said), 2, during)
        self.events(3)
        self.assertRegex(self.said("holds a line of the writer's again"),
                         "holds a line of the writer's again")
        return body

    def test_10_planted_files_renamed_in_turn(self):
        """atk37a F1 (t2 C): the inturn() folder writer puts every file
        the proxy moves aside (its own, planted at NAME, one byte, no
        line) at NAME.1 as if rotated: NAME has held no line of the
        writer's since, said while it lasts. Before, the follower said
        nothing while it went on (the file followed left "in turn")."""
        self.swapped_while_said(b"{", True)

    def test_11_planted_copies_of_a_line(self):
        """atk37a F2 (t3): every file the proxy puts at NAME moved out
        and a file holding a copy of the last genuine line put there:
        the copies are replays, said, not shown as events again, and end
        no dry spell (said while it lasts). Before, each copy ended it
        (never said) and was shown as a new event at every swap."""
        copied = self.swapped_while_said(None, False)
        self.assertRegex(self.stderr(), r"line\(s\) read that copy a "
                         r"line already read")
        host = json.loads(copied)["host"]
        self.out.seek(0)
        shown = [x for x in self.out if x.endswith("\n") and
                 json.loads(x).get("host") == host]
        self.assertEqual(len(shown), 1, self.stderr())

    def test_9_logrotate_and_idle_quiet(self):
        """logrotate's `create` with its SIGUSR1 at once and 2 s late
        (a slow postrotate: the proxy's tick replaces logrotate's file
        first), then `copytruncate`, events flowing, then an idle proxy:
        the follower never says NAME held no line of the writer's (no
        swap: logrotate's file leaves NAME, the proxy's own file is there
        with its first line at once; an idle log is no swap)."""
        self.start(["--log-keep", "10"])
        self.follow()
        self.events(3)
        conf = os.path.join(self.tmp.name, "logrotate.conf")
        bodies = ["create\n    postrotate\n        kill -USR1 %d\n"
                  "    endscript\n" % self.proxy.pid,
                  "create\n    postrotate\n        sleep 2; kill -USR1 "
                  "%d\n    endscript\n" % self.proxy.pid,
                  "copytruncate\n"]
        stop = threading.Event()

        def flow():
            while not stop.is_set():
                self.events(1)
                time.sleep(0.02)
        t = threading.Thread(target=flow)
        t.start()
        try:
            for body in bodies:
                with open(conf, "w") as f:
                    f.write("%s {\n    rotate 5\n    missingok\n    %s}\n"
                            % (self.path(), body))
                subprocess.run(["logrotate", "-f", "-s",
                                os.path.join(self.tmp.name, "lr.state"),
                                conf], check=True)
                # Longer than the follower's 2 s before it says so.
                time.sleep(3)
        finally:
            stop.set()
            t.join()
        time.sleep(5)	# idle: no event at all
        self.assertNotRegex(self.stderr(), "held no line")
        rotated = [x for x in os.listdir(self.dir)
                   if re.fullmatch(re.escape(NAME) + r"\.\d+", x)]
        self.assertGreaterEqual(len(rotated), 3, "nothing rotated: no test")


if __name__ == "__main__":
    unittest.main(verbosity=2)
