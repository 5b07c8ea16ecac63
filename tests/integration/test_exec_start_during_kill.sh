#!/usr/bin/env bash
# test_exec_start_during_kill.sh: an exec that starts while another exec
# of the same sandbox is killed runs its command (atk38d F1, issue 16).
# Killer execs (`--timeout 1`, 30 background sleeps each) time out over
# and over while starter execs (`true`) loop beside them: each kill
# freezes the container's freezer cgroup and SIGKILLs what it finds.
# Before, a start that met a kill failed as if `true` had: exit 126 when
# runc read the freezer frozen ("cannot exec in a paused container",
# told to dockerd's log only) and 137 when the kill took the starting
# exec's `runc init` (no run marker yet, outside every run's cgroup).
# Now every starter ends 0, or fails saying why on stderr
# ("sandgate: the exec could not start: ..."; a start runc refused or a
# kill took is started once more, "... starting it again" on stderr);
# every killer ends 124, and
# nothing of the killers is left in the container.
set -u
SRC=${SANDGATE_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRC/tests/lib/common.sh"

sg_require_docker
sg_setup
sg_test_image || { echo "cannot build the test image"; exit 1; }
sg_test_sandbox
CID=$(docker ps -q --no-trunc -f "name=sandgate-$SBX")

NK=3		# killer loops
ROUNDS=6	# killer execs per loop
NS=2		# starter loops
OUT=$SG_TMP/out
mkdir -p "$OUT"

killer() {
	local k=$1 r
	for r in $(seq 1 "$ROUNDS"); do
		"$SG" exec "$SBX" --timeout 1 -- sh -c \
		    'for i in $(seq 1 30); do sleep 30 & done; sleep 30' \
		    >/dev/null 2>"$OUT/k$k.$r.err"
		echo "$?" >"$OUT/k$k.$r.rc"
	done
}

# Starts `true` until every killer loop is done.
starter() {
	local s=$1 n=0
	while [ ! -e "$OUT/killers.done" ]; do
		n=$((n + 1))
		"$SG" exec "$SBX" --timeout 30 -- true >/dev/null \
		    2>"$OUT/s$s.$n.err"
		echo "$?" >"$OUT/s$s.$n.rc"
	done
}

pids=""
for k in $(seq 1 "$NK"); do
	killer "$k" &
	pids="$pids $!"
done
for s in $(seq 1 "$NS"); do
	starter "$s" &
done
# shellcheck disable=SC2086
wait $pids
touch "$OUT/killers.done"
wait

# Every starter ran `true`, or said why it could not start.
starts=0 bad=0 told=0
for f in "$OUT"/s*.rc; do
	starts=$((starts + 1))
	rc=$(cat "$f")
	[ "$rc" = 0 ] && continue
	err=$(cat "${f%.rc}.err")
	case $err in
	*"sandgate: the exec could not start: "*)
		told=$((told + 1))
		;;
	*)
		bad=$((bad + 1))
		echo "starter ${f##*/}: exit $rc, stderr: $(printf %.300s "$err")"
		;;
	esac
done
again=$(cat "$OUT"/*.err | grep -c 'starting it again')
echo "$starts starts beside the kills, $again started again," \
    "$told refused with the message"
cat "$OUT"/*.err | grep 'could not start' | sed 's/[0-9a-f]\{12,\}/ID/g' |
    sort | uniq -c
[ "$starts" -gt 0 ] || fail "starters ran"
assert_eq "no starter failed silently" 0 "$bad"

kbad=0
for f in "$OUT"/k*.rc; do
	rc=$(cat "$f")
	[ "$rc" = 124 ] && continue
	err=$(cat "${f%.rc}.err")
	case $err in
	*"sandgate: the exec could not start: "*) ;;
	*)
		kbad=$((kbad + 1))
		echo "killer ${f##*/}: exit $rc, stderr: $(printf %.300s "$err")"
		;;
	esac
done
assert_eq "every killer timed out (124)" 0 "$kbad"

left=$(docker top "$CID" -o pid,args 2>/dev/null | grep -c 'sleep 30')
assert_eq "no killer's process is left in the container" 0 "$left"
assert_eq "the container is not paused" false \
    "$(docker inspect -f '{{.State.Paused}}' "$CID")"
sg_run n "$SG" exec "$SBX" --timeout 30 -- echo next
assert_eq "the exec after the kills ran" "0 next" "$n_rc $n_out"

# A command whose output begins as dockerd's refusals do, exiting 126:
# its own, run once, its output whole (the start's retry is only for a
# start whose process never ran: Pid 0).
for line in "OCI runtime exec failed: exec failed: cannot exec in a paused container" \
    "cannot exec in a paused state: unknown"; do
	sg_run r "$SG" exec "$SBX" --timeout 30 -- sh -c \
	    'echo x >>/workspace/ran.txt; printf "%s\nmore\n" "$1"; exit 126' \
	    sh "$line"
	assert_eq "a command printing a refusal ends with its own 126" 126 \
	    "$r_rc"
	assert_eq "its output whole" "$line
more" "$r_out"
done
sg_run c "$SG" exec "$SBX" -- wc -l /workspace/ran.txt
assert_eq "each such command ran once" "2 /workspace/ran.txt" "$c_out"

sg_summary
