"""sigforge.py: send SIGTERM and SIGINT to PID 1 (the container's idle
process) with a siginfo of the sender's own making that claims to come
from outside the pid namespace (si_pid 0), through rt_sigqueueinfo,
rt_tgsigqueueinfo and pidfd_send_signal, with si_code SI_QUEUE and
SI_TKILL; then try SI_USER and SI_KERNEL, which the kernel must refuse.
Prints one line per call and "still here" at the end. Linux x86-64 and
aarch64 only."""
import ctypes
import os
import platform
import signal
import sys
import time

NR = {"x86_64": {"sigq": 129, "tgsigq": 297, "pidfd_open": 434,
                 "pidfd_send": 424},
      "aarch64": {"sigq": 138, "tgsigq": 240, "pidfd_open": 434,
                  "pidfd_send": 424}}[platform.machine()]
SI_USER, SI_KERNEL, SI_QUEUE, SI_TKILL = 0, 0x80, -1, -6
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def info(sig, code):
    """A 128-byte siginfo_t: si_signo, si_errno, si_code, si_pid, si_uid."""
    buf = (ctypes.c_int * 32)()
    buf[0], buf[1], buf[2], buf[4], buf[5] = sig, 0, code, 0, 0
    return buf


def call(what, sig, code):
    si = info(sig, code)
    if what == "sigq":
        r = libc.syscall(NR["sigq"], 1, sig, si)
    elif what == "tgsigq":
        r = libc.syscall(NR["tgsigq"], 1, 1, sig, si)
    else:
        fd = libc.syscall(NR["pidfd_open"], 1, 0)
        if fd < 0:
            print(f"pidfd_open(1) failed: errno {ctypes.get_errno()}")
            return
        r = libc.syscall(NR["pidfd_send"], fd, sig, si, 0)
        os.close(fd)
    err = ctypes.get_errno() if r != 0 else 0
    print(f"{what}(1, {signal.Signals(sig).name}, si_code {code}, "
          f"si_pid 0) = {r} errno {err}", flush=True)
    time.sleep(0.2)


for what in ("sigq", "tgsigq", "pidfd"):
    for sig in (signal.SIGTERM, signal.SIGINT):
        for code in (SI_QUEUE, SI_TKILL):
            call(what, sig, code)
for code in (SI_USER, SI_KERNEL):
    call("sigq", signal.SIGTERM, code)
time.sleep(float(sys.argv[1]) if len(sys.argv) > 1 else 1)
print("still here", flush=True)
