#!/bin/sh
# runaway.sh MARK: a command that ignores SIGTERM and leaves children
# behind in every way a shell can: background, setsid, nohup, env -i.
mark=${1:-4242}
trap '' TERM HUP INT
sh -c "trap '' TERM; sleep ${mark}1" &
setsid sh -c "trap '' TERM HUP; sleep ${mark}2" </dev/null >/dev/null 2>&1 &
nohup sh -c "trap '' TERM; sleep ${mark}3" </dev/null >/dev/null 2>&1 &
env -i /bin/sh -c "trap '' TERM; sleep ${mark}4" &
echo "started children ${mark}1..${mark}4"
while :; do sleep 1; done
