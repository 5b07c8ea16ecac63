"""personality.py: ask for READ_IMPLIES_EXEC (every readable mapping
executable) and for a syscall number no kernel has; prints both answers."""
import ctypes
import os

libc = ctypes.CDLL(None, use_errno=True)
libc.personality.restype = ctypes.c_int
r = libc.personality(ctypes.c_ulong(0x0400000))
if r == -1:
    print("personality(READ_IMPLIES_EXEC): refused: %s" % os.strerror(ctypes.get_errno()))
else:
    libc.personality(ctypes.c_ulong(r))
    print("personality(READ_IMPLIES_EXEC): ALLOWED")
libc.syscall.restype = ctypes.c_long
r = libc.syscall(ctypes.c_long(1000))
print("syscall 1000: %s" % ("returned %d" % r if r != -1 else os.strerror(ctypes.get_errno())))
