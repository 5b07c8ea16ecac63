"""ptrace.py: PTRACE_ATTACH to every other process of the sandbox (init, the
idle probe, a process of another run). Prints one line per target."""
import ctypes
import os
import sys

libc = ctypes.CDLL(None, use_errno=True)
PTRACE_ATTACH, PTRACE_DETACH = 16, 17
attached = 0
me = os.getpid()
for d in sorted(os.listdir("/proc"), key=lambda x: (len(x), x)):
    if not d.isdigit() or int(d) in (me, os.getppid()):
        continue
    try:
        comm = open("/proc/%s/cmdline" % d, "rb").read().replace(b"\0", b" ")
    except OSError:
        continue
    ctypes.set_errno(0)
    r = libc.ptrace(PTRACE_ATTACH, int(d), 0, 0)
    err = ctypes.get_errno()
    if r == 0:
        attached += 1
        try:
            os.waitpid(int(d), 0x40000000)	# __WALL: the attach stop
        except OSError:
            pass
        libc.ptrace(PTRACE_DETACH, int(d), 0, 0)
        os.kill(int(d), 18)		# SIGCONT: leave it running
        print("ATTACHED pid %s (%s)" % (d, comm.decode(errors="replace")[:60]))
    else:
        print("refused pid %s (%s): %s" % (d, comm.decode(errors="replace")[:60],
                                          os.strerror(err)))
sys.exit(1 if attached else 0)
