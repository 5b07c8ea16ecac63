#!/bin/sh
# cpuloop.sh N: N busy loops (one per core), until killed.
n=${1:-2}
i=0
while [ "$i" -lt "$n" ]; do
	sh -c 'while :; do :; done' &
	i=$((i + 1))
done
wait
