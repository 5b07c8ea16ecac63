#!/usr/bin/env bash
# test_exec_lockwait.sh: an exec that starts while an apply or a discard
# holds the sandbox (its lock, exclusive; held here by the test, as apply
# holds it for its whole copy) waits within its --timeout and ends at
# SIGINT, and its command never runs after (atk42l F2: it waited for the
# whole apply, deaf to Ctrl-C, then ran the command).
# 1. --timeout 2 while the lock is held 6 s: 124 within the 2 s, the
#    command never runs, stderr says why.
# 2. the sandbox's own timeout (create --timeout 2) bounds it the same.
# 3. SIGINT while it waits: 130 at once, the command never runs.
# 4. a lock held 3 s: the command runs after it, and the wait counts
#    against --timeout 5 (a `sleep 10` ends timed out at ~5 s, not 8).
# 5. with --json the agent gets the usual object (exit_code 124,
#    timed_out, and not_started) and the run has its record.
# 6. a lock that is free: the command runs, as always.
# 7. a lock granted after the exec's deadline (the exec was stopped past
#    it) is let go unused: 124, the command never runs (atk43f F1).
set -u
SRC=${SANDGATE_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRC/tests/lib/common.sh"

sg_require_docker
sg_setup
sg_test_image || { echo "cannot build the test image"; exit 1; }
sg_test_sandbox
LOCK=$SANDGATE_STATE/sandboxes/$SBX/lock

# hold S: the sandbox's lock held exclusive for S seconds, in the background
hold() {
	flock -x "$LOCK" sleep "$1" &
	HOLDER=$!
	sg_on_exit "kill $HOLDER"
	sleep 0.3
}
ms() { echo $(( $(date +%s%N) / 1000000 )); }
# ran NAME: 0 when the marker NAME is in the working copy
ran() {
	sg_run q "$SG" exec "$SBX" -- sh -c "test -e /workspace/$1 && echo yes || echo no"
	[ "$q_out" = yes ]
}

hold 6
a=$(ms)
sg_run r "$SG" exec "$SBX" --timeout 2 -- touch /workspace/m1
b=$(ms)
assert_eq "1: exit 124 while the lock is held" 124 "$r_rc"
assert_contains "1: stderr says it timed out" "$r_err" "timed out after 2 s"
assert_contains "1: and why" "$r_err" "an apply or a discard held the sandbox all that time; nothing ran"
[ $((b - a)) -lt 3500 ] && ok "1: within the timeout ($((b - a)) ms)" ||
	fail "1: within the timeout" "$((b - a)) ms"
wait "$HOLDER"
ran m1 && fail "1: the command never ran" "m1 exists" || ok "1: the command never ran"

sg_run c "$SG" create "$SG_TMP/src" --image "$SG_TEST_IMAGE" --network none --timeout 2
assert_eq "2: a sandbox with --timeout 2" 0 "$c_rc"
if [ "$c_rc" = 0 ]; then
	SBX2=$c_out
	sg_on_exit "'$SG' discard $SBX2"
	flock -x "$SANDGATE_STATE/sandboxes/$SBX2/lock" sleep 6 &
	H2=$!
	sg_on_exit "kill $H2"
	sleep 0.3
	a=$(ms)
	sg_run r "$SG" exec "$SBX2" -- true
	b=$(ms)
	assert_eq "2: the sandbox's timeout bounds the wait (124)" 124 "$r_rc"
	[ $((b - a)) -lt 3500 ] && ok "2: within it ($((b - a)) ms)" ||
		fail "2: within it" "$((b - a)) ms"
	wait "$H2"
fi

hold 8
"$SG" exec "$SBX" --timeout 30 -- touch /workspace/m3 >"$SG_TMP/3.out" 2>"$SG_TMP/3.err" &
E=$!
sleep 1.5
a=$(ms)
kill -INT "$E"
wait "$E"
rc=$?
b=$(ms)
assert_eq "3: SIGINT while waiting: 130" 130 "$rc"
[ $((b - a)) -lt 1500 ] && ok "3: at once ($((b - a)) ms)" ||
	fail "3: at once" "$((b - a)) ms"
assert_contains "3: stderr says nothing ran" "$(cat "$SG_TMP/3.err")" "nothing ran"
wait "$HOLDER"
ran m3 && fail "3: the command never ran" "m3 exists" || ok "3: the command never ran"

hold 3
a=$(ms)
sg_run r "$SG" exec "$SBX" --timeout 5 -- sh -c 'touch /workspace/m4; sleep 10'
b=$(ms)
assert_eq "4: the command timed out (124)" 124 "$r_rc"
[ $((b - a)) -lt 7000 ] && ok "4: the wait counted against --timeout 5 ($((b - a)) ms)" ||
	fail "4: the wait counted against --timeout 5" "$((b - a)) ms"
ran m4 && ok "4: the command ran after the lock" || fail "4: the command ran after the lock"

hold 4
sg_run r "$SG" exec "$SBX" --timeout 1 --json -- touch /workspace/m6
assert_eq "5: --json: exit 124" 124 "$r_rc"
v=$(python3 -c 'import json,sys; o=json.loads(sys.argv[1]); print(o["exit_code"], o["timed_out"], o["run_id"][:4])' "$r_out" 2>&1)
assert_eq "5: --json: one object, exit_code 124, timed_out" "124 True run_" "$v"
# told apart from a command that ran and timed out (atk43f F3: the
# objects were the same): not_started, and a notice only sandgate writes
v=$(python3 -c 'import json,sys; o=json.loads(sys.argv[1]); print(o.get("not_started"), any("nothing ran" in n for n in o["notices"]))' "$r_out" 2>&1)
assert_eq "5: --json: not_started, and the notice says nothing ran" "True True" "$v"
rid=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["run_id"])' "$r_out" 2>/dev/null)
rec=$(grep -F "\"$rid\"" "$SANDGATE_RECORD_DIR/runs.jsonl" | python3 -c 'import json,sys; o=json.loads(sys.stdin.readline()); print(o.get("exit_code"), o.get("timed_out", (o.get("flags") or {}).get("timed_out")))' 2>&1)
assert_eq "5: its run record says 124, timed out" "124 True" "$rec"
rec=$(grep -F "\"$rid\"" "$SANDGATE_RECORD_DIR/runs.jsonl" | python3 -c 'import json,sys; o=json.loads(sys.stdin.readline()); print(o["flags"].get("not_started"))' 2>&1)
assert_eq "5: and not_started" "True" "$rec"
wait "$HOLDER"
ran m6 && fail "5: the command never ran" "m6 exists" || ok "5: the command never ran"

# 7. granted after its deadline (the exec stopped past it, as a process
#    not scheduled): let go unused, the command never runs (atk43f F1)
hold 1.5
"$SG" exec "$SBX" --timeout 1 -- touch /workspace/m7 >"$SG_TMP/7.out" 2>"$SG_TMP/7.err" &
E=$!
sleep 0.5
kill -STOP "$E"
sleep 2.5
kill -CONT "$E"
wait "$E"
rc=$?
assert_eq "7: a grant past the deadline: 124" 124 "$rc"
assert_contains "7: stderr says nothing ran" "$(cat "$SG_TMP/7.err")" "nothing ran"
ran m7 && fail "7: the command never ran" "m7 exists" || ok "7: the command never ran"

sg_run r "$SG" exec "$SBX" --timeout 5 -- echo free
assert_eq "6: a free lock: the command runs" "0 free" "$r_rc $r_out"
sg_summary
