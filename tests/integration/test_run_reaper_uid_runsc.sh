#!/usr/bin/env bash
# test_run_reaper_uid_runsc.sh: under gVisor `sandgate run`'s end-of-
# command reaper runs as the init's uid, as exec's does, which no command
# has, so no command can signal it (atk16r8 F3: run never set it and its
# reaper ran as uid 0). The command leaves watchers that note the uid of
# every process not of their uid (but the init: the reaper) in /output
# before the reaper kills them.
# Where runsc is not registered with dockerd the test skips (77).
set -u
SRC=${SANDGATE_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRC/tests/lib/common.sh"

sg_require_runsc
sg_setup
export SANDGATE_DATA_DIR=$SRC
sg_base_image
mkdir -p "$SG_TMP/in" "$SG_TMP/out"
cat >"$SG_TMP/in/watch.py" <<'PY'
import os
def uid(pid):	# the real uid of the last Uid: line (the kernel's)
    return [l.split()[1] for l in open("/proc/%s/status" % pid) if l.startswith("Uid:")][-1]
out = os.open("/output/seen.%d" % os.getpid(), os.O_WRONLY | os.O_CREAT, 0o644)
os.write(out, ("init %s\n" % uid(1)).encode())
seen = set()
while True:
    for d in os.listdir("/proc"):
        if not d.isdigit() or d in seen:
            continue
        try:
            u = uid(d)
        except (OSError, IndexError):
            continue
        if d != "1" and int(u) != os.getuid():	# not a command's: the reaper
            seen.add(d)
            os.write(out, ("reaper %s\n" % u).encode())
            os.fsync(out)
PY
sg_run r "$SG" run --input "$SG_TMP/in" --output "$SG_TMP/out" --memory 256m --runtime runsc \
    --network none -- sh -c 'for i in 1 2 3 4; do setsid python3 /input/watch.py </dev/null >/dev/null 2>&1 & done; sleep 2'
assert_eq "run exits 0" 0 "$r_rc"
seen=$(cat "$SG_TMP"/out/seen.* 2>/dev/null | sort -u)
echo "seen: $seen"
init=$(sed -n 's/^init //p' <<<"$seen" | head -n1)
if ! grep -q '^reaper ' <<<"$seen"; then
	# a race the watchers can lose (the reaper kills them first): then
	# nothing was checked, said as a skip rather than a failure
	echo "skip: no watcher saw the reaper before it killed them"
	exit 77
fi
assert_eq "the reaper ran as the init's uid" "reaper $init" "$(grep '^reaper' <<<"$seen" | sort -u | tr '\n' ' ' | sed 's/ $//')"
sg_summary
