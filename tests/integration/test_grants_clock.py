#!/usr/bin/env python3
"""A grant's time limit against wall-clock steps (docs/guarantees.md,
"Grants and the clock"): the real sandgate-proxy runs with a preloaded
shim that shifts what CLOCK_REALTIME, time() and gettimeofday() say by
the number of seconds in a file the test writes, so the proxy sees its
wall clock set back or forward while this machine's clock is never
touched. The clock that ends grants (CLOCK_BOOTTIME) is not shifted.

Restarts (ClockStepsAcrossRestart, SaveNumbers): a revoke grants.json could not take
is kept in grants.json.revoked; whatever the wall clock did between the
saves, grants and revokes, a restart never brings the grant back
(atk35d F1), and a grants.json saved after such a revoke keeps what was
given since. Saves fail while a folder sits where the proxy writes its
temporary grants file. SaveNumbers: the number of each save of
grants.json outlives a save of no grants (atk36b F1), never passes what
the reader takes (F2), and a grants.json of an older proxy (a bare
array, no number) is judged by the granted time (F3).

Run: python3 tests/integration/test_grants_clock.py [-v]
Env: SANDGATE_BIN, SANDGATE_SRC; SANDGATE_KEEP=1 keeps the folder.
Everything is on loopback; the client plays sandbox sbx_g from 127.0.0.2.
"""

import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proxylib  # noqa: E402
from proxylib import get_request  # noqa: E402

W = {}

SHIM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

static long long
shift(void)
{
	const char	*p = getenv("SG_TEST_CLOCK_SHIFT");
	FILE		*f;
	long long	 s = 0;

	if (p == NULL || (f = fopen(p, "re")) == NULL)
		return 0;
	if (fscanf(f, "%lld", &s) != 1)
		s = 0;
	fclose(f);
	return s;
}

int
clock_gettime(clockid_t id, struct timespec *ts)
{
	static int	(*real)(clockid_t, struct timespec *);
	int		 rc;

	if (real == NULL)
		real = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT,
		    "clock_gettime");
	rc = real(id, ts);
	if (rc == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE))
		ts->tv_sec += shift();
	return rc;
}

time_t
time(time_t *t)
{
	struct timespec	ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	if (t != NULL)
		*t = ts.tv_sec;
	return ts.tv_sec;
}

int
gettimeofday(struct timeval *tv, void *tz)
{
	struct timespec	ts;

	(void)tz;
	clock_gettime(CLOCK_REALTIME, &ts);
	if (tv != NULL) {
		tv->tv_sec = ts.tv_sec;
		tv->tv_usec = ts.tv_nsec / 1000;
	}
	return 0;
}
"""

FLOOR = """\
description: what approvers may open
grants:
  under: [grant.test]
  allow_private: true
"""


def setUpModule():
    for k in proxylib.PROXY_ENV:
        os.environ.pop(k, None)
    W["dir"] = tempfile.mkdtemp(prefix="sg-grclock-")
    d = W["dir"]
    try:
        with open(os.path.join(d, "shim.c"), "w") as f:
            f.write(SHIM)
        shim = os.path.join(d, "clockshift.so")
        subprocess.run(["cc", "-shared", "-fPIC", "-o", shim,
                        os.path.join(d, "shim.c"), "-ldl"], check=True)
        W["shift"] = os.path.join(d, "shift")
        set_shift(0)
        W["sock"] = os.path.join(d, "run", "control.sock")
        os.makedirs(os.path.dirname(W["sock"]))
        W["up"] = proxylib.Upstreams(d).start()
        asan = os.environ.get("ASAN_OPTIONS", "")
        env = {"LD_PRELOAD": shim, "SG_TEST_CLOCK_SHIFT": W["shift"],
               # An ASan build wants its runtime first; the shim is
               # only the test's.
               "ASAN_OPTIONS": (asan + ":" if asan else "") +
               "verify_asan_link_order=0"}
        p = proxylib.Proxy(d, W["up"], sets="test", env=env,
                           extra_args=["--control-socket", W["sock"]])
        W["proxy"] = p
        with open(os.path.join(p.policy_dir, "floor.yaml"), "w") as f:
            f.write(FLOOR)
        with open(p.hosts, "a") as f:
            f.write("127.0.0.1\tg1.grant.test g2.grant.test\n")
        p.start()
    except BaseException:
        tearDownModule()
        raise


def tearDownModule():
    proxylib.teardown(W, [W["proxy"]] if W.get("proxy") is not None
                      else [])


def set_shift(secs):
    """What the proxy's wall clock says from now on: real time + secs."""
    with open(W["shift"] + ".tmp", "w") as f:
        f.write("%d\n" % secs)
    os.rename(W["shift"] + ".tmp", W["shift"])


def control(method, path, body=None):
    return proxylib.control(W["sock"], method, path, body)


def get_status(host):
    hp = "%s:%d" % (host, W["up"].http_port)
    with proxylib.bound_conn("127.0.0.2", W["proxy"].port) as c:
        c.send(get_request("http://%s/" % hp, hp, "Connection: close\r\n"))
        return c.read_response().status


def grant(host, seconds):
    return control("POST", "/grants", {
        "sandbox": "sbx_g", "host": host, "port": W["up"].http_port,
        "seconds": seconds, "rationale": "the task needs %s" % host,
        "by": "tester"})


class ClockSteps(unittest.TestCase):
    def setUp(self):
        set_shift(0)
        status, body = control("POST", "/register", {
            "address": "127.0.0.2", "sandbox": "sbx_g", "sets": "test"})
        self.assertEqual(status, 200, body)

    def tearDown(self):
        set_shift(0)
        for h in ("g1.grant.test", "g2.grant.test"):
            control("POST", "/grants/revoke", {
                "sandbox": "sbx_g", "host": h, "port": W["up"].http_port,
                "by": "teardown"})
        self.assertTrue(W["proxy"].alive(), W["proxy"].stderr()[-3000:])

    def test_clock_set_back_does_not_lengthen_a_grant(self):
        mark = W["proxy"].mark()
        status, body = grant("g1.grant.test", 2)
        self.assertEqual(status, 200, body)
        self.assertEqual(get_status("g1.grant.test"), 200)
        set_shift(-3600)
        time.sleep(3.5)
        # By the wall clock it has an hour to go; it ended 1.5 s ago.
        self.assertEqual(get_status("g1.grant.test"), 403)
        ev = W["proxy"].wait_event(
            lambda e: e.get("event") == "grant.expired", mark)
        self.assertIsNotNone(ev, "no grant.expired event")
        self.assertEqual(ev["host"], "g1.grant.test")
        status, body = control("GET", "/grants?sandbox=sbx_g")
        self.assertEqual(body["grants"], [])

    def test_clock_set_forward_does_not_end_a_grant_early(self):
        status, body = grant("g2.grant.test", 120)
        self.assertEqual(status, 200, body)
        set_shift(3600)
        time.sleep(1.5)     # at least one expiry tick
        # By the wall clock it ended an hour ago; 118 s remain of it.
        self.assertEqual(get_status("g2.grant.test"), 200)
        status, body = control("GET", "/grants?sandbox=sbx_g")
        self.assertEqual([g["host"] for g in body["grants"]],
                         ["g2.grant.test"])


def revoke(host):
    return control("POST", "/grants/revoke", {
        "sandbox": "sbx_g", "host": host, "port": W["up"].http_port,
        "by": "tester"})


def grants_path():
    return os.path.join(os.path.dirname(W["sock"]), "grants.json")


def saved_grants():
    """The grants grants.json holds ({"generation", "grants"}; a bare
    array is an older proxy's)."""
    with open(grants_path()) as f:
        saved = json.load(f)
    return saved["grants"] if isinstance(saved, dict) else saved


def block_saves():
    """No save of grants.json can succeed while this folder is there."""
    block = "%s.%d.tmp" % (grants_path(), W["proxy"].pid)
    os.mkdir(block)
    return block


def restart(crash=None):
    """Start the proxy again (it was killed), with SANDGATE_TEST_CRASH
    set to crash, or not."""
    p = W["proxy"]
    p.kill()
    p.stop()
    p.env.pop("SANDGATE_TEST_CRASH", None)
    if crash is not None:
        p.env["SANDGATE_TEST_CRASH"] = crash
    p.start()
    status, body = control("POST", "/register", {
        "address": "127.0.0.2", "sandbox": "sbx_g", "sets": "test"})
    assert status == 200, body


class Restarted(unittest.TestCase):
    """Each test on a proxy started again, the clock as it is; the
    grants it gave revoked after it."""
    def setUp(self):
        set_shift(0)
        restart()

    def tearDown(self):
        set_shift(0)
        if not W["proxy"].alive():
            restart()
        for h in ("g1.grant.test", "g2.grant.test"):
            revoke(h)
        self.assertTrue(W["proxy"].alive(), W["proxy"].stderr()[-3000:])

    def listed(self):
        status, body = control("GET", "/grants?sandbox=sbx_g")
        self.assertEqual(status, 200, body)
        return sorted(g["host"] for g in body["grants"])


class ClockStepsAcrossRestart(Restarted):
    def test_revoke_after_clock_step_back_survives_a_crash(self):
        """atk35d F1: saved, the wall clock set back 5 s, given again
        (unsaved: saves fail), revoked (kept apart), killed: the revoke's
        line named the newest grant in memory (5 s older than the one
        grants.json held), so a restart brought the grant back, and its
        save then emptied the revokes file."""
        status, body = grant("g1.grant.test", 300)
        self.assertEqual((status, body.get("saved")), (200, True), body)
        status, body = grant("g2.grant.test", 300)
        self.assertEqual((status, body.get("saved")), (200, True), body)
        set_shift(-5)
        block = block_saves()
        try:
            status, body = grant("g1.grant.test", 300)
            self.assertEqual((status, body.get("saved")), (200, False),
                             body)
            status, body = revoke("g1.grant.test")
            self.assertEqual((status, body.get("saved_apart")),
                             (200, True), body)
            W["proxy"].kill()
        finally:
            os.rmdir(block)
        self.assertEqual(sorted(g["host"] for g in saved_grants()),
                         ["g1.grant.test", "g2.grant.test"])
        set_shift(0)        # set right again, or not: the same
        restart()
        self.assertEqual(self.listed(), ["g2.grant.test"])
        self.assertEqual(get_status("g1.grant.test"), 403)
        self.assertEqual(get_status("g2.grant.test"), 200)
        with open(grants_path() + ".revoked") as f:
            self.assertEqual(f.read().strip(), "")
        # Stays so across one more restart, the revokes file emptied.
        restart()
        self.assertEqual(self.listed(), ["g2.grant.test"])

    def test_grant_saved_after_a_kept_revoke_is_restored(self):
        """A grants.json saved after a revoke kept apart holds what was
        given since; a crash before the save emptied the revokes file
        (SANDGATE_TEST_CRASH=grants:saved) leaves the line, which must not
        end the grant given again, whatever the wall clock said (here set
        back 5 s: the grant's time was before the revoke's)."""
        status, body = grant("g1.grant.test", 300)
        self.assertEqual((status, body.get("saved")), (200, True), body)
        restart(crash="grants:saved")
        set_shift(-5)
        block = block_saves()
        try:
            status, body = revoke("g1.grant.test")
            self.assertEqual((status, body.get("saved_apart")),
                             (200, True), body)
            status, body = grant("g1.grant.test", 300)
            self.assertEqual((status, body.get("saved")), (200, False),
                             body)
        finally:
            os.rmdir(block)
        # The retry (each second) saves it, and the proxy dies there.
        deadline = time.monotonic() + 10
        while W["proxy"].alive() and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertFalse(W["proxy"].alive(), "no crash at grants:saved")
        with open(grants_path() + ".revoked") as f:
            self.assertIn('"g1.grant.test"', f.read())
        restart()
        self.assertEqual(self.listed(), ["g1.grant.test"])
        self.assertEqual(get_status("g1.grant.test"), 200)
        with open(grants_path() + ".revoked") as f:
            self.assertEqual(f.read().strip(), "")


class SaveNumbers(Restarted):
    def revoke_apart(self, *hosts):
        """Revoked while saves fail (kept in the revokes file), killed."""
        block = block_saves()
        try:
            for host in hosts:
                status, body = revoke(host)
                self.assertEqual((status, body.get("saved_apart")),
                                 (200, True), body)
            W["proxy"].kill()
        finally:
            os.rmdir(block)

    def test_a_torn_number_does_not_lower_the_count(self):
        """atk36d F1: a grants.json torn inside its number
        ('{"generation":1' of 13) made the count resume at 1; a later
        revoke's line (after 3) was then older than a put back save
        (12) and the grant came back. A number torn short is no number,
        and saves are numbered at least by the wall clock."""
        for _ in range(12):   # a number of two digits or more
            status, body = grant("g1.grant.test", 300)
            self.assertEqual((status, body.get("saved")), (200, True), body)
        with open(grants_path()) as f:
            backup = f.read()
        status, body = grant("g1.grant.test", 300)
        self.assertEqual((status, body.get("saved")), (200, True), body)
        with open(grants_path()) as f:
            text = f.read()
        self.assertTrue(text.startswith('{"generation":'), text[:40])
        with open(grants_path(), "w") as f:
            f.write(text[:len('{"generation":') + 1])   # torn in it
        restart()
        status, body = grant("g1.grant.test", 300)
        self.assertEqual((status, body.get("saved")), (200, True), body)
        self.revoke_apart("g1.grant.test")
        with open(grants_path(), "w") as f:
            f.write(backup)         # an older save put back
        restart()
        self.assertEqual(self.listed(), [])
        self.assertEqual(get_status("g1.grant.test"), 403)
        self.assertIn("grant of g1.grant.test:%d to sbx_g stays revoked"
                      % W["up"].http_port, W["proxy"].stderr())

    def test_number_outlives_a_save_of_no_grants(self):
        """atk36b F1: a save of no grants held no number and a good save
        emptied the revokes file, so the next lifetime numbered saves from
        1 again: an older grants.json put back (a backup, number 5)
        outlived a later revoke's line (after 2) and the grant came
        back."""
        for _ in range(5):
            status, body = grant("g1.grant.test", 300)
            self.assertEqual((status, body.get("saved")), (200, True), body)
        with open(grants_path()) as f:
            backup = f.read()
        status, body = revoke("g1.grant.test")
        self.assertEqual((status, body.get("saved")), (200, True), body)
        self.assertEqual(saved_grants(), [])
        restart()
        status, body = grant("g1.grant.test", 300)
        self.assertEqual((status, body.get("saved")), (200, True), body)
        self.revoke_apart("g1.grant.test")
        with open(grants_path(), "w") as f:
            f.write(backup)         # the folder's backup put back
        restart()
        self.assertEqual(self.listed(), [])
        self.assertEqual(get_status("g1.grant.test"), 403)
        self.assertIn("grant of g1.grant.test:%d to sbx_g stays revoked"
                      % W["up"].http_port, W["proxy"].stderr())

    def test_no_save_above_what_the_reader_takes(self):
        """atk36b F2: a revoke line (another destination) with "after"
        2^53 - 1 made the next save write 2^53, which the next start
        refused with every grant in it. Now the save at the bound fails
        and says so; the grant stays, across starts."""
        status, body = grant("g1.grant.test", 300)
        self.assertEqual((status, body.get("saved")), (200, True), body)
        W["proxy"].kill()
        with open(grants_path() + ".revoked", "a") as f:
            f.write('\n{"sandbox":"sbZ","host":"z.grant.test","port":443,'
                    '"revoked":1,"granted":1,"after":9007199254740991}\n')
        try:
            for _ in range(2):
                restart()
                self.assertEqual(self.listed(), ["g1.grant.test"])
            self.assertNotIn("refused", W["proxy"].stderr())
            self.assertIn("numbered up to 2^53 - 1", W["proxy"].stderr())
        finally:
            W["proxy"].kill()
            os.unlink(grants_path())
            os.unlink(grants_path() + ".revoked")
            restart()

    def test_older_proxys_file_judged_by_time(self):
        """atk36b F3: rolled back to an older proxy and forward again: the
        older proxy gave the grant again after a line of this version and
        saved grants.json as an array (no number); its grant was ended
        "stays revoked". A file with no number is judged by the granted
        time, as the older proxy does: one granted after the line's stays,
        one granted at or before it ends."""
        status, body = grant("g1.grant.test", 300)
        self.assertEqual((status, body.get("saved")), (200, True), body)
        status, body = grant("g2.grant.test", 300)
        self.assertEqual((status, body.get("saved")), (200, True), body)
        old = {g["host"]: g for g in saved_grants()}
        self.revoke_apart("g1.grant.test", "g2.grant.test")
        time.sleep(1.1)
        now = time.time()
        # The older proxy: g1 as saved before the lines, g2 given again.
        g2 = dict(old["g2.grant.test"], granted=time.strftime(
            "%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)), expires=time.strftime(
            "%Y-%m-%dT%H:%M:%SZ", time.gmtime(now + 300)))
        with open(grants_path(), "w") as f:
            json.dump([old["g1.grant.test"], g2], f)
        restart()
        self.assertEqual(self.listed(), ["g2.grant.test"])
        self.assertIn("grant of g1.grant.test:%d to sbx_g stays revoked"
                      % W["up"].http_port, W["proxy"].stderr())

    def test_revokes_file_not_emptied_warns(self):
        """atk36b F3: a revokes file that could not be opened to be
        emptied after a good save was passed over without a word."""
        tomb = grants_path() + ".revoked"
        os.rename(tomb, tomb + ".away")
        os.mkdir(tomb)
        try:
            status, body = grant("g1.grant.test", 300)
            self.assertEqual((status, body.get("saved")), (200, True),
                             body)
            self.assertIn("%s: cannot empty it" % tomb, W["proxy"].stderr())
        finally:
            os.rmdir(tomb)
            os.rename(tomb + ".away", tomb)


class DamagedFile(Restarted):
    """A grants.json a start cannot use whole is kept beside it
    (grants.json.unused-SECONDS) before a save writes over it: a torn
    file, a number past what the reader takes, a grant refused were
    overwritten by the next save, what they held lost."""
    def kept(self):
        d = os.path.dirname(grants_path())
        return sorted(os.path.join(d, n) for n in os.listdir(d)
                      if n.startswith("grants.json.unused-"))

    def tearDown(self):
        for k in self.kept():
            os.unlink(k)
        super().tearDown()

    def g2_refused(self):
        """g1 and g2 granted; what grants.json holds, with g2's grant
        made one a start refuses (granted in the future)."""
        for host in ("g1.grant.test", "g2.grant.test"):
            status, body = grant(host, 300)
            self.assertEqual(status, 200, body)
        with open(grants_path()) as f:
            top = json.load(f)
        for g in top["grants"]:
            if g["host"] == "g2.grant.test":
                g["granted"] = "2099-01-01T00:00:00Z"
        return top

    def check_kept(self, data, why):
        kept = self.kept()
        self.assertEqual(len(kept), 1, kept)
        with open(kept[0], "rb") as f:
            self.assertEqual(f.read(), data)
        self.assertIn("grants.json: a copy kept as %s (%s)" % (kept[0], why),
                      W["proxy"].stderr())

    def test_torn_file_kept(self):
        status, body = grant("g1.grant.test", 300)
        self.assertEqual(status, 200, body)
        with open(grants_path(), "rb") as f:
            data = f.read()[:-7]
        with open(grants_path(), "wb") as f:
            f.write(data)
        restart()
        self.assertEqual(self.listed(), [])
        self.check_kept(data, "none of its grants in force")
        status, body = grant("g2.grant.test", 300)
        self.assertEqual((status, body.get("saved")), (200, True), body)
        self.check_kept(data, "none of its grants in force")
        self.assertEqual([g["host"] for g in saved_grants()],
                         ["g2.grant.test"])

    def test_number_past_the_reader_kept(self):
        """atk41g2: a port past 2^63 refuses the whole file (the JSON
        reader takes no such number)."""
        status, body = grant("g1.grant.test", 300)
        self.assertEqual(status, 200, body)
        with open(grants_path(), "rb") as f:
            data = f.read().replace(
                b'"port":%d' % W["up"].http_port,
                b'"port":99999999999999999999')
        self.assertIn(b"99999999999999999999", data)
        with open(grants_path(), "wb") as f:
            f.write(data)
        restart()
        self.assertEqual(self.listed(), [])
        self.check_kept(data, "none of its grants in force")

    def test_refused_grant_kept(self):
        """One grant refused (granted in the future), one restored: the
        file kept whole, grants.json saved again with the one in force."""
        top = self.g2_refused()
        data = json.dumps(top).encode()
        with open(grants_path(), "wb") as f:
            f.write(data)
        restart()
        self.assertEqual(self.listed(), ["g1.grant.test"])
        self.check_kept(data, "some of its grants refused")
        self.assertEqual([g["host"] for g in saved_grants()],
                         ["g1.grant.test"])

    def test_grant_in_force_kept_when_saves_fail(self):
        """atk44b F1: the file was renamed away before the save that
        replaces it; with saves failing (here: the file's number at
        2^53 - 1, past which no save is made), the grant in force was
        then in memory only, and the next start had none."""
        top = self.g2_refused()
        top["generation"] = 2 ** 53 - 1
        data = json.dumps(top).encode()
        with open(grants_path(), "wb") as f:
            f.write(data)
        try:
            restart()
            self.assertEqual(self.listed(), ["g1.grant.test"])
            self.check_kept(data, "some of its grants refused")
            with open(grants_path(), "rb") as f:
                self.assertEqual(f.read(), data,
                                 "grants.json left as it was")
            restart()
            self.assertEqual(self.listed(), ["g1.grant.test"])
        finally:    # no number left at the bound: saves work again
            W["proxy"].kill()
            os.unlink(grants_path())
            if os.path.exists(grants_path() + ".revoked"):
                os.unlink(grants_path() + ".revoked")
            restart()

    def test_one_copy_while_the_revokes_stay_unreadable(self):
        """A revokes file that cannot be read makes a start use no grant
        and save nothing (a save would empty it), so grants.json stays as
        it was and each start kept another copy of it: one copy now,
        whatever the number of starts."""
        status, body = grant("g1.grant.test", 300)
        self.assertEqual(status, 200, body)
        with open(grants_path(), "rb") as f:
            data = f.read()
        tomb = grants_path() + ".revoked"
        os.rename(tomb, tomb + ".away")
        os.mkdir(tomb)
        try:
            for _ in range(3):
                restart()
                self.assertEqual(self.listed(), [])
            kept = self.kept()
            self.assertEqual(len(kept), 1, kept)
            with open(kept[0], "rb") as f:
                self.assertEqual(f.read(), data)
            self.assertIn("grants.json: its copy is kept already as %s "
                          "(none of its grants in force)" % kept[0],
                          W["proxy"].stderr())
            # A copy of other bytes is no copy of this file.
            with open(kept[0], "wb") as f:
                f.write(data + b" ")
            restart()
            self.assertEqual(len(self.kept()), 2, self.kept())
        finally:
            os.rmdir(tomb)
            os.rename(tomb + ".away", tomb)
            restart()   # g1 in force again: tearDown revokes it

    def test_kept_copy_never_replaces_another(self):
        """atk44b F2: a second copy kept in the same second replaced the
        first (rename over it). Names that are taken (an earlier copy of
        this second, or an admin's file) are left alone."""
        d = os.path.dirname(grants_path())
        now = int(time.time())
        taken = [os.path.join(d, "grants.json.unused-%d" % t)
                 for t in range(now - 1, now + 30)]
        for t in taken:
            with open(t, "wb") as f:
                f.write(b"older")
        try:
            data = b'{"generation": 1, "grants": [{"host": '
            with open(grants_path(), "wb") as f:
                f.write(data)
            restart()
            for t in taken:
                with open(t, "rb") as f:
                    self.assertEqual(f.read(), b"older", t)
            kept = [k for k in self.kept() if k not in taken]
            self.assertEqual(len(kept), 1, kept)
            self.assertRegex(kept[0], r"\.unused-\d+-1$")
            with open(kept[0], "rb") as f:
                self.assertEqual(f.read(), data)
        finally:
            for t in taken:
                os.unlink(t)


if __name__ == "__main__":
    sys.exit(proxylib.run_tests(sys.modules[__name__]))
