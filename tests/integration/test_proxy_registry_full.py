"""The proxy's registry on a full folder (atk15r17 F6): a sandbox is never
both registered and removed after a crash.

The control folder is a 64 KiB tmpfs in a mount namespace of the test's
own (the test runs itself again under `unshare -m`; it skips where that
is not allowed). 300 discards make registry.json.gone the big file; the
folder is filled to leave a few KiB; a removed sandbox is registered
again, so its removal must be cleared from the .gone file, which no
longer fits. Then the proxy is killed (a crash before its retry) and
started again. Before the fix registry.json (small) was written first:
after the restart the sandbox was registered AND removed, its own token
from its own registered address refused (token_sandbox_gone). Now the
removed list is written first and the registry not without it: the
register answers "saved": false, and after the crash the sandbox is
either not registered (the controller registers it again) or its token
passes, never both.
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proxylib  # noqa: E402
import test_proxy_token as T  # noqa: E402

W = T.W


def in_namespace():
    """Run this file again in a private mount namespace with a small tmpfs
    at SG_REGFULL_MNT; its exit status (77: cannot)."""
    try:
        if subprocess.run(["unshare", "-m", "true"]).returncode != 0:
            print("skip: no mount namespace here (unshare -m)")
            return 77
    except FileNotFoundError:
        return 77
    mnt = tempfile.mkdtemp(prefix="sg-regfull-")
    script = ('mount -t tmpfs -o size=64k,mode=0755 sgregfull "$1" || '
              'exit 77; SG_REGFULL_MNT="$1" "$2" "$3"; rc=$?; '
              'umount "$1"; exit $rc')
    try:
        r = subprocess.run(["unshare", "-m", "--propagation", "private",
                            "sh", "-c", script, "sh", mnt, sys.executable,
                            os.path.abspath(__file__)])
    finally:
        os.rmdir(mnt)
    return r.returncode


class FullFolder(unittest.TestCase):
    def setUp(self):
        if T.serialization is None:
            self.skipTest("python3-cryptography is not installed")
        for k in proxylib.PROXY_ENV:
            os.environ.pop(k, None)
        self.run_dir = os.environ["SG_REGFULL_MNT"]
        W["dir"] = tempfile.mkdtemp(prefix="sg-regfull-")
        W["proxies"] = []
        W["up"] = proxylib.Upstreams(W["dir"]).start()
        self.key, self.pub = T.make_key(W["dir"], "k")
        self.sock = os.path.join(self.run_dir, "control.sock")
        self.n = 0
        # each test has the small folder to itself
        for name in os.listdir(self.run_dir):
            path = os.path.join(self.run_dir, name)
            if os.path.isdir(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.unlink(path)

    def tearDown(self):
        proxylib.teardown(W, W.get("proxies", []))
        shutil.rmtree(W["dir"], ignore_errors=True)

    def start(self):
        self.n += 1
        p = T.start("p%d" % self.n, ["--control-socket", self.sock,
                                     "--token-key", self.pub])
        proxylib.wait_unix_socket(self.sock)
        return p

    def free(self):
        st = os.statvfs(self.run_dir)
        return st.f_bavail * st.f_frsize

    def ctl(self, path, body):
        return proxylib.control(self.sock, "POST", path, body)

    def test_registered_again_on_a_full_folder_then_crash(self):
        reg = {"address": "127.0.0.1", "sandbox": "sbx_x", "sets": "test"}
        p = self.start()
        self.assertEqual(self.ctl("/register", reg)[0], 200)
        self.assertEqual(self.ctl("/unregister", {"sandbox": "sbx_x"})[0],
                         200)
        for i in range(300):
            self.ctl("/unregister", {"sandbox": "sbx_gone_%04d" % i})
        filler = os.path.join(self.run_dir, "filler")
        with open(filler, "wb") as f:
            try:
                while self.free() > 6 * 1024:
                    f.write(b"\0" * 1024)
                    f.flush()
            except OSError:
                pass
        st, body = self.ctl("/register", reg)
        self.assertEqual(st, 200, body)
        self.assertFalse(body.get("saved", True) and
                         "sbx_x\"" not in open(os.path.join(
                             self.run_dir, "registry.json")).read(),
                         "said saved, not written: %r" % (body,))
        p.proc.send_signal(signal.SIGKILL)	# a crash before the retry
        p.proc.wait()
        W["proxies"].remove(p)
        os.unlink(filler)
        p = self.start()
        st, status = proxylib.control(self.sock, "GET", "/status")
        registered = [s["sandbox"] for s in status["sandboxes"]]
        code, text = T.get(p, T.token(self.key, "sbx_x"))
        self.assertFalse("sbx_x" in registered and code == 403,
                         "registered and removed after the crash: %s" %
                         text[:200])

    def unregister(self, sandbox):
        st, body = self.ctl("/unregister", {"sandbox": sandbox})
        self.assertEqual(st, 200, body)
        return body

    def test_a_short_write_kept_apart_then_the_retry(self):
        """atk15r20 F2: on a full folder an unregister kept apart in
        .removed past its reserved room was written short (the line cut
        at the end of the last page), answered "saved": false, and the
        fragment left in the file; the controller's retry was appended
        onto it, answered saved, and at a restart the merged line did not
        read: its removal lost (the floor rose). The short write is now
        taken back and a line never continues a torn one: after the
        restart every line reads (no floor event) and the retried
        sandbox's token is refused by its own removal."""
        p = self.start()
        filler = os.path.join(self.run_dir, "filler")
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            while os.write(fd, b"\0" * 4096) == 4096:
                pass
        except OSError:
            pass
        os.close(fd)

        def free_page():
            os.truncate(filler, os.path.getsize(filler) - 4096)

        def until_unsaved(i):
            while self.unregister("sbx_f2_%04d" % i)["saved"]:
                i += 1
            return i
        i = until_unsaved(0)          # the reserved room is full
        free_page()
        torn = until_unsaved(i + 1)   # the line across the page end
        free_page()
        body = self.unregister("sbx_f2_%04d" % torn)    # the retry
        self.assertTrue(body["saved"] and body["saved_apart"], body)
        p.proc.send_signal(signal.SIGKILL)
        p.proc.wait()
        W["proxies"].remove(p)
        os.unlink(filler)
        p = self.start()
        code, text = T.get(p, T.token(self.key, "sbx_f2_%04d" % torn))
        self.assertEqual(code, 403, text)
        self.assertIn("unregistered since", text)
        raised = [e["detail"] for e in p.events()
                  if e.get("event") == "registry.removed_floor_raised"]
        self.assertEqual(raised, [])


if __name__ == "__main__":
    if "SG_REGFULL_MNT" not in os.environ:
        sys.exit(in_namespace())
    unittest.main(verbosity=2)
