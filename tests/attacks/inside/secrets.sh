#!/bin/sh
# secrets.sh: look for anything of the host from inside the sandbox.
# Prints what it could read; the host decides whether any of it is the host's.
pat="sgsec""ret-"		# the prefix of the host's secret, never written whole
echo "== env"; env | grep -c "$pat" || true
echo "== /proc/*/environ"
for f in /proc/[0-9]*/environ; do
	tr '\0' '\n' <"$f" 2>/dev/null | grep "$pat" && echo "hit in $f"
done
echo "== /proc/1/environ"; tr '\0' '\n' </proc/1/environ 2>&1 | head -40
echo "== /etc/shadow"; cat /etc/shadow 2>&1 | head -5
echo "== /root"; ls -la /root 2>&1 | head -5
echo "== docker socket"
for s in /var/run/docker.sock /run/docker.sock /run/containerd/containerd.sock; do
	if [ -e "$s" ]; then echo "PRESENT $s"; else echo "absent $s"; fi
done
echo "== filesystem"
grep -rIl --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev "$pat" / \
    2>/dev/null | grep -v '^/workspace/.attacks/' | head -20
echo "== end"
