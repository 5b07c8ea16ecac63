"""vsock.py: try an AF_VSOCK socket (family 40), plainly and with bits set
above the 32 of the int the kernel takes (seccomp sees the whole 64-bit
register). Prints one line per try: NAME: OPENED or NAME: the error.
Linux x86-64 and aarch64 only."""
import ctypes
import os
import platform

SYS_SOCKET = {"x86_64": 41, "aarch64": 198}
AF_VSOCK = 40
SOCK_STREAM = 1


def main():
    nr = SYS_SOCKET.get(platform.machine())
    if nr is None:
        print("NOARCH")
        return
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    for name, fam in (("socket(AF_VSOCK)", AF_VSOCK),
                      ("socket(1<<32 | AF_VSOCK)", (1 << 32) | AF_VSOCK),
                      ("socket(0xffffffff00000028)",
                       0xffffffff00000000 | AF_VSOCK)):
        fd = libc.syscall(ctypes.c_long(nr), ctypes.c_ulong(fam),
                          ctypes.c_long(SOCK_STREAM), ctypes.c_long(0))
        if fd >= 0:
            print("%s: OPENED" % name)
            os.close(fd)
        else:
            print("%s: %s" % (name, os.strerror(ctypes.get_errno())))
    # what must keep working: AF_UNIX (1) and AF_INET6 (10)
    for name, fam in (("socket(AF_UNIX)", 1), ("socket(AF_INET6)", 10)):
        fd = libc.syscall(ctypes.c_long(nr), ctypes.c_ulong(fam),
                          ctypes.c_long(SOCK_STREAM), ctypes.c_long(0))
        print("%s: %s" % (name, "opened" if fd >= 0 else
                          os.strerror(ctypes.get_errno())))
        if fd >= 0:
            os.close(fd)


main()
