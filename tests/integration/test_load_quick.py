#!/usr/bin/env python3
"""A CI-sized run of tests/load: sandgate-proxy under short loads and
faults, each on a fresh proxy, asserting the invariants:

  - 500 idle tunnels held and closed: descriptors back to baseline, heap
    in use back to baseline (when gdb can measure it), normal clients
    served meanwhile;
  - 50 slowloris clients cut by --head-timeout 2 while normal clients are
    served;
  - clients vanishing mid-head, mid-body, mid-tunnel and mid-response,
    half-closed tunnels, upstreams that hang, reset or trickle: every
    outcome as expected, nothing left open;
  - a 2,000-request blocked flood: one valid, chained log line per
    blocked attempt;
  - SIGKILL during a flood and restarts on the same log folder: whole
    lines, the chain continues;
  - (root only) a log folder on a full tmpfs: the fail-closed answer and
    nothing reaches the upstream.

Runs in well under 90 seconds. Prints unittest's summary and a final
"N passed, N failed" line; exits non-zero on failure.
"""

import os
import shutil
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "load"))

import faultlib   # noqa: E402
import loadlib    # noqa: E402
import scenarios  # noqa: E402


class LoadQuick(unittest.TestCase):
    up = None
    work = None

    @classmethod
    def setUpClass(cls):
        loadlib.raise_nofile()
        cls.work = tempfile.mkdtemp(prefix="sandgate-load-quick-")
        cls.up = loadlib.Upstream().start()

    @classmethod
    def tearDownClass(cls):
        if cls.up is not None:
            cls.up.stop()
        shutil.rmtree(cls.work, ignore_errors=True)

    def assert_result(self, r):
        loadlib.print_table([r], out=sys.stderr)
        self.assertEqual(r.failures, [], "%s: %s" % (r.name,
                                                     "; ".join(r.failures)))

    def test_idle_tunnels(self):
        self.assert_result(scenarios.idle_tunnels(
            self.work, self.up, n=500, hold=2.0, normal=4, use=50))

    def test_slowloris(self):
        self.assert_result(scenarios.slowloris(
            self.work, self.up, n=50, interval=1.0, head_timeout=2,
            normal=4))

    def test_faults(self):
        self.assert_result(scenarios.faults(
            self.work, self.up, n=20, idle=2, normal=4))

    def test_blocked_flood(self):
        self.assert_result(scenarios.blocked_flood(
            self.work, self.up, n=2000, clients=20, normal=4))

    def test_sigkill_restart_chain(self):
        report = faultlib.Report()
        faultlib.kill_rounds(self.work, self.up, 2, report)
        self.assertEqual(report.failed, [])

    @unittest.skipUnless(os.geteuid() == 0 and shutil.which("mount"),
                         "needs root to mount a small tmpfs")
    def test_full_log_folder_fails_closed(self):
        report = faultlib.Report()
        faultlib.full_at_start(self.work, self.up, report)
        faultlib.full_while_running(self.work, self.up, report)
        self.assertEqual(report.failed, [])


def main():
    t0 = time.monotonic()
    suite = unittest.defaultTestLoader.loadTestsFromTestCase(LoadQuick)
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    failed = len(result.failures) + len(result.errors)
    passed = result.testsRun - failed - len(result.skipped)
    print("%d passed, %d failed (%d skipped) in %.0f s" % (
        passed, failed, len(result.skipped), time.monotonic() - t0))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
