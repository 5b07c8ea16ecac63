#!/usr/bin/env bash
# test_exec_reaper_runsc.sh: under gVisor the end-of-command kill runs
# inside the sandbox (`sandgate-probe reap`, a docker exec). A command
# leaves a hunter that SIGKILLs every reaper it sees: any process whose
# command line is the probe's reap, or whose uid is not its own (the
# sandbox's). The hunter carries a concurrent exec's run marker, so the
# first reaper spares it (each command leaves a sleep too, so that each
# reaper has a second round to do). The reaper runs as the init's uid, which no
# command has: every kill the hunter tries is refused, no exec's cleanup
# has to stop the whole sandbox, the concurrent exec ends normally and
# every record says the container did not stop (atk16r7 F6: the hunter
# killed the reaper, sandgate SIGKILLed the sandbox under the other
# exec, and the record of the exec whose cleanup did it said
# `container_stopped: false, cleanup: ok`). Where runsc is not
# registered with dockerd the test skips (77).
set -u
SRC=${SANDGATE_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRC/tests/lib/common.sh"

sg_require_runsc
sg_setup
export SANDGATE_DATA_DIR=$SRC
sg_base_image
mkdir -p "$SG_TMP/project"
cat >"$SG_TMP/project/hunter.py" <<'PY'
import os, signal, time
me, uid = os.getpid(), os.getuid()
seen = set()
log = open("/workspace/.hunted", "a", buffering=1)
log.write("hunting\n")
while True:
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) in (me, 1) or d in seen:
            continue
        try:
            cl = open("/proc/%s/cmdline" % d, "rb").read()
        except OSError:
            cl = b""
        try:
            st = open("/proc/%s/status" % d).read()
            owner = int(st.split("\nUid:")[1].split()[0])
        except (OSError, IndexError, ValueError):
            continue
        if not (b"reap" in cl and b"probe" in cl) and owner == uid:
            continue
        seen.add(d)
        try:
            os.kill(int(d), signal.SIGKILL)
            log.write("killed %s uid %d %r\n" % (d, owner, cl))
        except OSError as e:
            log.write("refused %s uid %d errno %d %r\n" % (d, owner, e.errno, cl))
PY
cat >"$SG_TMP/project/hunt.sh" <<'SH'
me=$SANDGATE_RUN other=
for e in /proc/[0-9]*/environ; do
	r=$(tr '\0' '\n' <"$e" 2>/dev/null | sed -n 's/^SANDGATE_RUN=//p')
	[ -n "$r" ] && [ "$r" != "$me" ] && other=$r
done
echo "other=$other"
env SANDGATE_RUN=$other setsid python3 /workspace/hunter.py </dev/null >/dev/null 2>&1 &
sleep 100 </dev/null >/dev/null 2>&1 &	# for the reaper: a second round
sleep 2
SH
sg_run c "$SG" create "$SG_TMP/project" --network none --memory 256m --runtime runsc
assert_eq "create --runtime runsc" 0 "$c_rc"
SBX=$c_out
sg_on_exit "'$SG' discard $SBX"
started() { docker inspect -f '{{.State.Status}} {{.State.StartedAt}}' "sandgate-$SBX"; }
S0=$(started)

"$SG" exec --json "$SBX" --timeout 60 -- sh -c 'sleep 100 & sleep 12; echo long-running-exec done' \
    >"$SG_TMP/b.json" 2>"$SG_TMP/b.err" &
bpid=$!
sleep 4
"$SG" exec --json "$SBX" --timeout 30 -- sh /workspace/hunt.sh \
    >"$SG_TMP/a.json" 2>"$SG_TMP/a.err"
a_rc=$?
wait "$bpid"
b_rc=$?

field() {	# FILE EXPR: a python expression over the exec's JSON o
	python3 -c 'import json,sys; o=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2" 2>&1
}
record() {	# FILE: the run record's flags and cleanup of that exec
	python3 - "$SANDGATE_RECORD_DIR/runs.jsonl" "$(field "$1" 'o["run_id"]')" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("run") == sys.argv[2]:
        print("container_stopped=%s cleanup=%s" % (r["flags"]["container_stopped"], r["cleanup"]))
PY
}
S1=$(started)
sg_run h "$SG" exec "$SBX" -- sh -c 'cat /workspace/.hunted; ps -eo args | grep -c -e "[h]unter.py" -e "[s]leep 100"'
hunted=$h_out
echo "hunter: $hunted"
echo "A: rc $a_rc $(record "$SG_TMP/a.json"); stderr: $(head -c 300 "$SG_TMP/a.err")"
echo "B: rc $b_rc $(record "$SG_TMP/b.json"); stderr: $(head -c 300 "$SG_TMP/b.err")"
assert_contains "the hunter found another exec's marker" "$(field "$SG_TMP/a.json" 'o["stdout"]')" "other=run_"
assert_contains "the hunter's kill of a live reaper was refused" "$hunted" "errno 1 "
assert_not_contains "no reaper was killed" "$hunted" "killed"
assert_eq "the hunter's exec ends normally" 0 "$a_rc"
assert_eq "the concurrent exec ends normally" 0 "$b_rc"
assert_contains "the concurrent exec ran to its end" "$(field "$SG_TMP/b.json" 'o["stdout"]')" "long-running-exec done"
assert_eq "the hunter's record" "container_stopped=False cleanup=ok" "$(record "$SG_TMP/a.json")"
assert_eq "the concurrent exec's record" "container_stopped=False cleanup=ok" "$(record "$SG_TMP/b.json")"
assert_eq "the container was never stopped" "$S0" "$S1"
assert_eq "nothing of the hunter or the sleeps is left" 0 "$(tail -n1 <<<"$hunted")"
sg_summary
