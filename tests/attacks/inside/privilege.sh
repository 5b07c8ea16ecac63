#!/bin/sh
# privilege.sh: every way to more privilege a process here could try.
# One line per attempt: NAME|rc|first line of its output.
try() {
	name=$1
	shift
	out=$("$@" 2>&1 </dev/null)
	rc=$?
	printf '%s|%s|%s\n' "$name" "$rc" "$(printf '%s' "$out" | tr '\n' ' ' | cut -c1-150)"
}
echo "setuid files: $(find / -xdev -perm -4000 -type f 2>/dev/null | tr '\n' ' ')"
try su su -c 'id -u' root
try passwd passwd -d sandbox
try sudo sh -c 'command -v sudo >/dev/null || { echo "sudo: not installed"; exit 127; }; sudo -n id -u'
try mount mount -t tmpfs none /mnt
try unshare-user unshare -Ur id -u
try unshare-mount unshare -m id -u
try nsenter nsenter -t 1 -m -u -i -n -p id -u
echo x >/workspace/.chown-me
try chown-root chown 0:0 /workspace/.chown-me
try sysrq sh -c 'echo h >/proc/sysrq-trigger'
try kmod python3 -c '
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
fd = open("/proc/self/exe", "rb").fileno()
r = libc.syscall(313, fd, b"", 0)	# finit_module
print("finit_module:", r, ctypes.get_errno() and __import__("os").strerror(ctypes.get_errno()))
sys.exit(0 if r == 0 else 1)'
try root-write sh -c 'echo x >/etc/sandgate-was-here'
rm -f /workspace/.chown-me
