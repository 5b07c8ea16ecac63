"""spawn.py N SECONDS: start N processes that each sleep SECONDS; print how many started."""
import os
import sys
import time

want, secs = int(sys.argv[1]), float(sys.argv[2])
kids, err = [], ""
for _ in range(want):
    try:
        pid = os.fork()
    except OSError as e:
        err = e.strerror
        break
    if pid == 0:
        time.sleep(secs)
        os._exit(0)
    kids.append(pid)
print("spawned %d of %d%s" % (len(kids), want, " (" + err + ")" if err else ""),
      flush=True)
for k in kids:
    os.waitpid(k, 0)
