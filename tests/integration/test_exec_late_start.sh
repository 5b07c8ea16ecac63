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

for i in 1 2 3 4 5 6; do
	delay=$(printf '0.0%d' $((i % 3 * 2 + 1)))
	M=sig$i
	"$SG" exec "$SBX" --timeout 30 -- env M=$M sh -c "$CMD" >/dev/null 2>&1 &
	E=$!
	sleep "$delay"
	kill -TERM "$E"
	wait "$E"
	rc=$?
	assert_eq "SIGTERM ${delay}s into exec $i: 143" 143 "$rc"
	still "SIGTERM ${delay}s into exec $i" "$M"
done

# another exec of the sandbox that starts while one is stopped late is
# neither killed nor refused (atk44e F1: kills repeated over the whole
# container killed its runc init, 137 with no notice, or froze it, 126
# "cannot exec in a paused container")
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
	assert_eq "an exec started ${d}s after another's SIGTERM: unharmed" "0 ok" "$b_rc $b_out"
	still "SIGTERM into exec a$i" "$M"
done

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
sg_summary
