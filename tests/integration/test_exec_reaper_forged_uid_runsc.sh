#!/usr/bin/env bash
# test_exec_reaper_forged_uid_runsc.sh: under gVisor the end-of-command
# reaper spares the processes of its own uid (the init's). gVisor prints
# a process's name unescaped, first, in /proc/PID/status: a command that
# names a process "\nUid:<init uid>" (15 bytes, the comm) put a forged
# Uid line before the kernel's, the reaper read the first one and spared
# the process, which outlived its exec (and --timeout, for the exec's own
# main process) while the record said `cleanup: ok` (atk16r8 F1). Here a
# command leaves such a process, and another exec's own main process
# forges its name and runs past --timeout: a later exec must find
# neither. Where runsc is not registered with dockerd the test skips (77).
set -u
SRC=${SANDGATE_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRC/tests/lib/common.sh"

sg_require_runsc
sg_setup
export SANDGATE_DATA_DIR=$SRC
sg_base_image
mkdir -p "$SG_TMP/project"
cat >"$SG_TMP/project/forge.py" <<'PY'
# forge.py leftover|main: name a process "\nUid:<init uid>"
import ctypes, os, sys, time
uid = [l.split()[1] for l in open("/proc/1/status") if l.startswith("Uid:")][-1]
def forge():
    ctypes.CDLL(None).prctl(15, ("\nUid:" + uid).encode(), 0, 0, 0)
if sys.argv[1] == "main":
    forge()
    time.sleep(200)
elif os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        forge()
        time.sleep(200)
    os._exit(0)
time.sleep(1)
print("forged", uid, os.getuid(), flush=True)
PY
cat >"$SG_TMP/project/count.py" <<'PY'
import os
n = 0
for d in os.listdir("/proc"):
    try:
        if d.isdigit() and b"forge.py" in open("/proc/%s/cmdline" % d, "rb").read():
            n += 1
    except OSError:
        pass
print(n)
PY
sg_run c "$SG" create "$SG_TMP/project" --network none --memory 256m --runtime runsc
assert_eq "create --runtime runsc" 0 "$c_rc"
SBX=$c_out
sg_on_exit "'$SG' discard $SBX"

record() {	# RUN: the run record's flags and cleanup
	python3 - "$SANDGATE_RECORD_DIR/runs.jsonl" "$1" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("run") == sys.argv[2]:
        print("container_stopped=%s cleanup=%s" % (r["flags"]["container_stopped"], r["cleanup"]))
PY
}
run_id() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run_id"])' "$1"; }

"$SG" exec --json "$SBX" --timeout 30 -- python3 /workspace/forge.py leftover \
    >"$SG_TMP/a.json" 2>"$SG_TMP/a.err"
assert_eq "the leftover's exec" 0 "$?"
assert_contains "the leftover was named" "$(cat "$SG_TMP/a.json")" "forged"
sg_run n "$SG" exec "$SBX" -- python3 /workspace/count.py
assert_eq "the forged leftover was killed at its exec's end" 0 "$n_out"

"$SG" exec --json "$SBX" --timeout 3 -- python3 /workspace/forge.py main \
    >"$SG_TMP/b.json" 2>"$SG_TMP/b.err"
assert_eq "the forged main process timed out" 124 "$?"
sg_run n "$SG" exec "$SBX" -- python3 /workspace/count.py
assert_eq "the forged main process was killed at its timeout" 0 "$n_out"
assert_eq "the records" "container_stopped=False cleanup=ok container_stopped=False cleanup=ok" \
    "$(echo $(record "$(run_id "$SG_TMP/a.json")") $(record "$(run_id "$SG_TMP/b.json")"))"
sg_summary
