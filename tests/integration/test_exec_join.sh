#!/usr/bin/env bash
# test_exec_join.sh: under runc each command starts as `sandgate-probe
# join`, which waits until sandgate moved it into the run's own memory
# cgroup. sandgate takes the process's pid from the runtime's own pid file
# (controller/rtpid.h) as soon as runc wrote it, instead of asking Docker's
# exec inspect over and over until dockerd learned the pid (about 10 ms
# later, all of it added to every exec: docs/benchmarks.md). So an exec
# asks Docker about its exec once, after the command's end, and the
# command still runs in its run's memory cgroup, never beside the init.
# Every Docker request goes through a tap (tests/integration/dockertap.py)
# that writes its request line down.
set -u
SRC=${SANDGATE_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRC/tests/lib/common.sh"

sg_require_docker
sg_setup
sg_test_image || { echo "cannot build the test image"; exit 1; }
sg_test_sandbox

TAP=$SG_TMP/docker.sock LOG=$SG_TMP/requests
python3 "$SRC/tests/integration/dockertap.py" "$TAP" /var/run/docker.sock \
    "$LOG" &
TAP_PID=$!
sg_on_exit "kill $TAP_PID"
for _ in $(seq 50); do [ -S "$TAP" ] && break; sleep 0.1; done

for n in 1 2 3 4 5; do
	: >"$LOG"
	sg_run r env DOCKER_HOST="unix://$TAP" "$SG" exec "$SBX" -- \
	    cat /proc/self/cgroup
	assert_eq "exec $n: exit 0" 0 "$r_rc"
	# the command's memory cgroup is its run's, below the container's
	assert_contains "exec $n: in its run's memory cgroup" "$r_out" \
	    "/sandgate-cmds/run_"
	inspects=$(grep -cE '^GET /v[0-9.]+/exec/[0-9a-f]+/json$' "$LOG")
	assert_eq "exec $n: one exec inspect (after the end)" 1 "$inspects"
	assert_not_contains "exec $n: no word of a missing cgroup" "$r_err" \
	    "memory cgroup"
done

# A run that gets no memory cgroup of its own says so: under --memory 6m
# there is no room for one (the commands' cgroup keeps 4 MiB for the init,
# each run's 4 MiB of slack), so the command runs in the container's, and
# its processes are told from the other runs' by their markers alone.
sg_run r "$SG" create "$SG_TMP/src" --image "$SG_TEST_IMAGE" \
    --network none --memory 6m
assert_eq "create --memory 6m" 0 "$r_rc"
TINY=$r_out
sg_on_exit "'$SG' discard $TINY"
sg_run r "$SG" exec "$TINY" -- cat /proc/self/cgroup
assert_eq "exec in 6 MiB: exit 0" 0 "$r_rc"
assert_not_contains "exec in 6 MiB: not in a run's cgroup" "$r_out" \
    "/sandgate-cmds/run_"
assert_contains "exec in 6 MiB: says it has no memory cgroup of its own" \
    "$r_err" "cannot make this run's memory cgroup"

sg_summary
