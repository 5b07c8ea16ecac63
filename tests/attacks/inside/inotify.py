"""inotify.py N SECONDS: make N inotify instances (a per-uid kernel limit)
and hold them SECONDS; prints how many the kernel gave."""
import ctypes
import os
import sys
import time

libc = ctypes.CDLL(None, use_errno=True)
want, hold = int(sys.argv[1]), float(sys.argv[2])
fds = []
err = ""
for _ in range(want):
    fd = libc.inotify_init()
    if fd < 0:
        err = os.strerror(ctypes.get_errno())
        break
    fds.append(fd)
print("inotify instances: %d of %d%s" % (len(fds), want, (" (" + err + ")") if err else ""))
sys.stdout.flush()
time.sleep(hold)
sys.exit(0 if len(fds) == want else 1)
