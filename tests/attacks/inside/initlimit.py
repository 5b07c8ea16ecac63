"""initlimit.py STEP...: what a command may do to PID 1 (the container's
idle process) when it shares PID 1's uid, each STEP in turn:

  fill:SIG   fill the command's uid's pending-signal count (a child blocks
             every signal and is sent RT signals with sigqueue until
             EAGAIN), then rt_sigqueueinfo(1, SIG, SI_QUEUE): the kernel,
             out of queue space for PID 1's uid, would hand PID 1 the
             signal as SI_USER with si_pid 0, what `docker stop` shows
  pend:SIG   prlimit(1, RLIMIT_SIGPENDING, 0), then the same signal
  cpu        prlimit(1, RLIMIT_CPU, (0, 0)), then make PID 1 run (reap a
             few thousand orphans): the kernel SIGKILLs a process past
             its hard CPU limit, a namespace's init too

Prints one line per call (its errno) and "still here (PID 1 alive)" at
the end when PID 1 is. Linux x86-64 and aarch64 only."""
import ctypes
import os
import platform
import resource
import signal
import sys
import time

NR_SIGQ = {"x86_64": 129, "aarch64": 138}[platform.machine()]
SI_QUEUE = -1
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def sigqueueinfo(pid, sig):
    buf = (ctypes.c_int * 32)()
    buf[0], buf[2] = sig, SI_QUEUE
    r = libc.syscall(NR_SIGQ, pid, sig, buf)
    return r, ctypes.get_errno() if r != 0 else 0


def fill():
    """Queue RT signals to a blocked child until EAGAIN; returns its pid."""
    rfd, wfd = os.pipe()
    signal.pthread_sigmask(signal.SIG_BLOCK, range(1, signal.NSIG))
    child = os.fork()
    if child == 0:
        os.close(rfd)
        os.write(wfd, b"x")
        while True:
            time.sleep(60)
    os.close(wfd)
    os.read(rfd, 1)
    n = 0
    while n < 1 << 22:
        if libc.sigqueue(child, signal.SIGRTMIN + n % 8,
                         ctypes.c_void_p(0)) != 0:
            break
        n += 1
    print(f"queued {n} RT signals to a blocked child until errno "
          f"{ctypes.get_errno()}", flush=True)
    return child


def prlimit(res, name, value):
    try:
        resource.prlimit(1, res, value)
        print(f"prlimit(1, {name}, {value}) = 0", flush=True)
        return True
    except OSError as e:
        print(f"prlimit(1, {name}, {value}) failed: errno {e.errno}",
              flush=True)
        return False


def orphans(seconds):
    end = time.time() + seconds
    n = 0
    while time.time() < end and os.path.exists("/proc/1"):
        c = os.fork()
        if c == 0:
            for _ in range(50):
                if os.fork() == 0:
                    os._exit(0)
            os._exit(0)
        os.waitpid(c, 0)
        n += 1
    print(f"{n * 50} orphans for PID 1 to reap", flush=True)


def step(what):
    child = None
    if what == "cpu":
        prlimit(resource.RLIMIT_CPU, "RLIMIT_CPU", (0, 0))
        orphans(8)
        return
    kind, sig = what.split(":")
    if kind == "fill":
        child = fill()
    else:
        hard = resource.getrlimit(resource.RLIMIT_SIGPENDING)[1]
        prlimit(resource.RLIMIT_SIGPENDING, "RLIMIT_SIGPENDING", (0, hard))
    r, err = sigqueueinfo(1, int(sig))
    print(f"{kind}: rt_sigqueueinfo(1, {int(sig)}, SI_QUEUE) = {r} errno "
          f"{err}", flush=True)
    if child is not None:
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    time.sleep(1)


for arg in sys.argv[1:]:
    step(arg)
alive = True
try:
    os.kill(1, 0)
except PermissionError:
    pass
except ProcessLookupError:
    alive = False
print("still here (PID 1 alive)" if alive else "PID 1 gone", flush=True)
