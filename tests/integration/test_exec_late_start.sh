#!/usr/bin/env bash
# test_exec_late_start.sh: a command that runc starts after sandgate's
# kill (a SIGTERM a few ms into the exec, or --timeout running out while
# the exec still waited for a lock an apply held) is killed too, and
# nothing of it runs once sandgate has exited. The kill ran once, before
# runc had started the command, and the 5 s grace that followed killed
# nothing more: the command then ran to its end past sandgate's exit
# (atk44d X1: `--timeout 2` let a command run 10.7 s; SIGTERM at 30 ms
# did not stop it).
# Each case: the command appends a line every 0.1 s to a file in the
# workspace; after sandgate exits the file must not grow.
set -u
SRC=${SANDGATE_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRC/tests/lib/common.sh"

sg_require_docker
sg_setup
sg_base_image
mkdir -p "$SG_TMP/src"
printf 'hello\n' >"$SG_TMP/src/a.txt"
sg_run c "$SG" create "$SG_TMP/src" --network none
assert_eq "sandbox created" 0 "$c_rc"
[ "$c_rc" = 0 ] || { echo "$c_err"; sg_summary; exit 1; }
SBX=$c_out
sg_on_exit "'$SG' discard $SBX"
WORK=$SANDGATE_STATE/sandboxes/$SBX/work
LOCK=$SANDGATE_STATE/sandboxes/$SBX/lock

lines() { [ -f "$WORK/$1" ] && wc -l <"$WORK/$1" || echo 0; }
CMD='i=0; while [ $i -lt 100 ]; do echo $i >>/workspace/$M; sleep 0.1; i=$((i+1)); done'

# After sandgate exits: the file stops growing (checked 1 s and 2.5 s
# later). A command that never started left no file: fine too.
still() {	# LABEL MARKER
	sleep 1
	local a b
	a=$(lines "$2")
	sleep 1.5
	b=$(lines "$2")
	assert_eq "$1: nothing of the command runs after sandgate's exit ($a then $b lines)" "$a" "$b"
}

# not_started in the JSON object: the command never ran (its file is not
# there, nor made later). Stopped before runc started the command, an
# exec said nothing of it (atk44g X2): counted, at least one must say so.
# No JSON at all: a SIGTERM before sandgate had its handlers (its first
# milliseconds, longer under ASan) ends it as the signal's default does,
# before it started anything: then nothing of the command may be there.
NSTART=0
not_started() {	# LABEL JSONFILE MARKER
	local ns
	ns=$(python3 -c 'import json, sys
try:
    print(json.load(open(sys.argv[1])).get("not_started", False))
except ValueError:
    print("no JSON object")' "$2")
	case $ns in
	True)	NSTART=$((NSTART + 1))
		assert_eq "$1: not_started, and nothing ran" 0 "$(lines "$3")" ;;
	False)	;;
	*)	if [ -s "$2" ]; then
			fail "$1: the JSON object" "$ns: $(head -c 300 "$2")"
		else
			assert_eq "$1: ended before its handlers, nothing ran" 0 "$(lines "$3")"
		fi ;;
	esac
}

for i in 1 2 3 4 5 6; do
	delay=$(printf '0.0%d' $((i % 3 * 2 + 1)))
	M=sig$i
	"$SG" exec "$SBX" --json --timeout 30 -- env M=$M sh -c "$CMD" >"$SG_TMP/sig$i.json" 2>/dev/null &
	E=$!
	sleep "$delay"
	kill -TERM "$E"
	wait "$E"
	rc=$?
	assert_eq "SIGTERM ${delay}s into exec $i: 143" 143 "$rc"
	still "SIGTERM ${delay}s into exec $i" "$M"
	not_started "SIGTERM ${delay}s into exec $i" "$SG_TMP/sig$i.json" "$M"
done

# another exec of the sandbox that starts while one is stopped late is
# neither killed nor refused (atk44e F1: kills repeated over the whole
# container killed its runc init, 137 with no notice, or froze it, 126
# "cannot exec in a paused container"; 7 of 10 such execs failed). The
# stop's first kill can still take a start that it meets (atk44g F1,
# open: guarantees.md item 35): on a loaded host the first kill may come
# as late as this other start, so one such failure is said, not failed;
# the repeated kills' break (most of the ten) fails.
HARMED=0
for i in 1 2 3 4 5 6 7 8 9 10; do
	M=a$i
	"$SG" exec "$SBX" --timeout 30 -- env M=$M sh -c "$CMD" >/dev/null 2>&1 &
	E=$!
	sleep 0.03
	kill -TERM "$E"
	# about when the first repeated kill came (250 ms on)
	d=$(printf '0.%02d' $((18 + i % 4 * 3)))
	sleep "$d"
	sg_run b "$SG" exec "$SBX" -- echo ok
	wait "$E"
	if [ "$b_rc $b_out" != "0 ok" ]; then
		HARMED=$((HARMED + 1))
		echo "note: an exec started ${d}s after another's SIGTERM ended '$b_rc $b_out' (the first kill's race, atk44g F1)"
	fi
	still "SIGTERM into exec a$i" "$M"
done
[ "$HARMED" -le 2 ] && ok "execs started 0.18-0.27 s after another's SIGTERM: unharmed ($HARMED of 10 met the first kill)" ||
	fail "execs started 0.18-0.27 s after another's SIGTERM: unharmed" "$HARMED of 10 were killed or refused"

for i in 1 2 3 4; do
	hold=$(printf '2.%02d' $((i * 3)))
	M=lock$i
	flock -x "$LOCK" sleep "$hold" &
	H=$!
	sleep 0.1
	sg_run r "$SG" exec "$SBX" --timeout 2 -- env M=$M sh -c "$CMD"
	wait "$H"
	assert_eq "lock let go at ${hold}s, --timeout 2, exec $i: 124" 124 "$r_rc"
	still "lock let go at ${hold}s, exec $i" "$M"
done

# the lock let go with tens of milliseconds of --timeout left: the exec
# starts and is stopped before runc has started its command
for i in 1 2 3 4; do
	hold=$(printf '1.%02d' $((93 + i * 1)))
	M=late$i
	flock -x "$LOCK" sleep "$hold" &
	H=$!
	sleep 0.1
	"$SG" exec "$SBX" --json --timeout 2 -- env M=$M sh -c "$CMD" >"$SG_TMP/late$i.json" 2>/dev/null
	rc=$?
	wait "$H"
	assert_eq "lock let go at ${hold}s, --timeout 2, exec $i: 124" 124 "$rc"
	still "lock let go at ${hold}s, exec $i" "$M"
	not_started "lock let go at ${hold}s, exec $i" "$SG_TMP/late$i.json" "$M"
done
# runc (gVisor's commands start without a join: it cannot tell)
RUNC=1
[ "$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get("runtime") or "runc")' "$SANDGATE_STATE/sandboxes/$SBX/meta.json")" = runsc ] && RUNC=0
if [ "$RUNC" = 1 ]; then
	[ "$NSTART" -ge 1 ] && ok "an exec stopped before its command started says not_started ($NSTART of 10)" ||
		fail "an exec stopped before its command started says not_started" "0 of 10 said so"
fi

# A stop's first kill spares the runtime's start of another exec of the
# sandbox (atk44g F1: it took that exec's `runc init`, which failed with
# 137; 5 of 10 at the attacker's timing). Its stand-in here, made at a
# known moment: a process `docker exec` starts without sandgate, so in
# no run's memory cgroup, unmarked, its parent the runtime's, outside
# the container, while another run of the sandbox is in progress. Older
# than 2 s it is taken like any unmarked process.
alive() { pgrep -f "^sleep $1\$" >/dev/null; }
if [ "$RUNC" = 1 ]; then
	CID=$(docker ps -q --filter "label=sandgate.sandbox=$SBX" | head -n1)
	"$SG" exec "$SBX" --timeout 60 -- sleep 40 >/dev/null 2>&1 &
	B=$!
	"$SG" exec "$SBX" --timeout 60 -- sleep 41 >/dev/null 2>&1 &
	A=$!
	sleep 1.5
	docker exec -d "$CID" sleep 71
	kill -TERM "$A"
	wait "$A"
	a_rc=$?
	assert_eq "an exec stopped while another's start runs: 143" 143 "$a_rc"
	alive 71 && ok "the stop's kill spared another exec's start (under 2 s old)" ||
		fail "the stop's kill spared another exec's start" "sleep 71, started by docker exec just before, was killed"
	alive 40 && ok "the other run's command runs on" || fail "the other run's command runs on" "sleep 40 was killed"
	"$SG" exec "$SBX" --timeout 60 -- sleep 42 >/dev/null 2>&1 &
	A=$!
	sleep 3
	kill -TERM "$A"
	wait "$A"
	alive 71 && fail "an unmarked process older than 2 s is taken by a stop's kill" "sleep 71 still runs" ||
		ok "an unmarked process older than 2 s is taken by a stop's kill"
	kill -TERM "$B"
	wait "$B"
	docker exec "$CID" pkill -x sleep >/dev/null 2>&1
fi
sg_summary
