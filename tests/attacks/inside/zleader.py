"""zleader.py: leave a process whose main thread has exited while a second
thread lives on (the thread-group leader calls the raw exit system call,
which ends only the calling thread; /proc/PID/stat then says Z and
/proc/PID/environ can no longer be read). The live thread appends the time
to /workspace/.zbeat twice a second, so the host sees whether it outlived
the command. Prints LEFT when the process is set up. Linux x86-64 and
aarch64 only."""
import ctypes
import os
import platform
import signal
import sys
import threading
import time

SYS_EXIT = {"x86_64": 60, "aarch64": 93}


def beat():
    while True:
        with open("/workspace/.zbeat", "a") as f:
            f.write("%d %d\n" % (os.getpid(), int(time.time())))
        time.sleep(0.5)


def main():
    nr = SYS_EXIT.get(platform.machine())
    if nr is None:
        print("NOARCH")
        return 0
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    print("LEFT", flush=True)
    if os.fork() != 0:
        os._exit(0)
    os.setsid()
    fd = os.open("/dev/null", os.O_RDWR)
    for i in range(3):
        os.dup2(fd, i)
    threading.Thread(target=beat).start()
    time.sleep(0.2)
    ctypes.CDLL(None).syscall(nr, 0)   # the leader thread only
    return 0


if __name__ == "__main__":
    sys.exit(main())
