#!/bin/sh
# writer.sh FILE: a process left alive in the sandbox, rewriting FILE
# with new content every 0.1 s, forever.
n=0
while :; do
	n=$((n + 1))
	printf 'print("replaced %d")\n' "$n" >"$1"
	sleep 0.1
done
