#!/bin/sh
# forge.sh MARK: a child that claims to belong to another run by setting
# SANDGATE_RUN itself (the controller spares other runs' processes).
mark=${1:-4343}
env SANDGATE_RUN=run_000000000000000000000000 sh -c "trap '' TERM; sleep ${mark}1" &
echo "started forged child ${mark}1"
while :; do sleep 1; done
