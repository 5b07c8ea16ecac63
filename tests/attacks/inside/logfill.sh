#!/bin/sh
# logfill.sh MIB: write MIB MiB into the standard output of every other
# process of the sandbox that will take it (the container's init and idle
# process write into the container's log, which dockerd keeps on the host).
mib=${1:-20}
n=0
for p in /proc/[0-9]*; do
	pid=${p#/proc/}
	[ "$pid" = $$ ] && continue
	if yes 'sandgate log fill 0123456789abcdef' 2>/dev/null |
	    head -c $((mib * 1048576)) 2>/dev/null >"/proc/$pid/fd/1"; then
		echo "wrote $mib MiB to the stdout of pid $pid"
		n=$((n + 1))
	else
		echo "refused: the stdout of pid $pid"
	fi
done
echo "processes written: $n"
