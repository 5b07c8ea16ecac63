#!/bin/sh
# rmrf.sh: delete everything, then try to write where it would matter.
n=$(rm -rf --no-preserve-root / 2>&1 | wc -l)
echo "rm -rf / refused $n times"
for p in /etc/passwd /usr/bin/env /bin/sh; do
	[ -e "$p" ] && echo "still there: $p"
done
touch /usr/bin/sandgate-was-here 2>&1 | head -1
echo "workspace entries left: $(ls -A /workspace 2>/dev/null | wc -l)"
