#!/bin/bash
# test_audit_runs.sh: the run records (runs.jsonl) are signed by the
# controller's key, verify with `audit verify --key`, survive a key
# rotation, show a rewritten record, and export as valid OCSF (run.exec,
# run.run, log.checkpoint) against tests/data/ocsf/ with Debian's
# python3-jsonschema. The writers' anchors: runs.jsonl cut at an older
# close, edited or replaced before an exec; the proxy, in its container,
# started again after a line was planted behind its close. A full volume
# (blocks or inodes) under keys/ and the records: the lost record is
# counted (atk20r17 F2). Real Docker,
# the real binaries, the test image.
set -u
SRC=${SANDGATE_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRC/tests/lib/common.sh"

sg_require_docker
sg_setup
sg_test_image || { echo "cannot build the test image"; exit 1; }
IMG=(--image "$SG_TEST_IMAGE" --network none)
RUNS=$SANDGATE_RECORD_DIR/runs.jsonl
KEY=$SANDGATE_STATE/keys/runs.key
TRUST=$SG_TMP/trusted
mkdir -p "$SG_TMP/src" "$TRUST"
echo hello >"$SG_TMP/src/a.txt"

# --- records and their checkpoints --------------------------------------------
sg_run r "$SG" create "$SG_TMP/src" "${IMG[@]}"
assert_eq "create exits 0" 0 "$r_rc"
ID=$r_out
sg_on_exit "'$SG' discard '$ID'"
sg_run r "$SG" exec "$ID" -- sh -c 'exit 0'
assert_eq "exec exits 0" 0 "$r_rc"
assert_eq "the key is made on first use" "600 root 700" \
    "$(stat -c '%a %U' "$KEY") $(stat -c '%a' "$(dirname "$KEY")")"
cp "$KEY.pub" "$TRUST/runs.pub"
sg_run r "$SG" exec "$ID" -- sh -c 'exit 3'
assert_eq "exec exits 3" 3 "$r_rc"
"$SG" exec "$ID" -- sh -c 'sleep 1; exit 4' >/dev/null 2>&1 &
p1=$!
"$SG" exec "$ID" -- sh -c 'sleep 1; exit 5' >/dev/null 2>&1 &
p2=$!
wait "$p1" "$p2"
sg_run r "$SG" exec "$ID" --timeout 1 -- sleep 30
assert_eq "timeout exits 124" 124 "$r_rc"
sg_run r "$SG" run "${IMG[@]}" -- sh -c 'exit 7'
assert_eq "run exits 7" 7 "$r_rc"
shape=$(python3 -c '
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
recs = [e for e in ev if e["event"].startswith("run.")]
closes = [e for e in ev if e["event"] == "log.checkpoint" and
          e["reason"] == "close" and e["every_events"] == 0 and
          e["every_secs"] == 0]
print(len(recs), len(closes), len(ev), ev[-1]["event"])' "$RUNS")
assert_eq "six records, six close checkpoints, nothing else" \
    "6 6 12 log.checkpoint" "$shape"
sg_run r "$SG" audit verify --file runs.jsonl --key "$TRUST/runs.pub"
assert_eq "runs.jsonl verifies with the key" 0 "$r_rc"
assert_contains "six checkpoints" "$r_out" "OK: 6 checkpoint(s) signed by trusted keys"
sg_run r "$SG" audit --file runs.jsonl --json
assert_eq "audit lists the records, not the checkpoints" "6 0" \
    "$(grep -c '"event":"run\.' <<<"$r_out") $(grep -c 'log.checkpoint' <<<"$r_out")"

# --- OCSF --------------------------------------------------------------------------
"$SG" audit export --format ocsf --file runs.jsonl >"$SG_TMP/runs.ocsf"
sg_run r /usr/bin/python3 "$SRC/tests/lib/ocsf_check.py" \
    "$SRC/tests/data/ocsf/sandgate-ocsf-1.8.0.schema.json" "$SG_TMP/runs.ocsf"
assert_eq "run records validate as OCSF 1.8.0" 0 "$r_rc"
assert_contains "run.exec as Process Activity" "$r_out" \
    '"run.exec": {"class_uid": [1007], "n": 5}'
assert_contains "run.run as Process Activity" "$r_out" \
    '"run.run": {"class_uid": [1007], "n": 1}'
assert_contains "checkpoints as Event Log Activity" "$r_out" \
    '"log.checkpoint": {"class_uid": [1008], "n": 6}'
fields=$(python3 -c '
import json, sys
for line in open(sys.argv[1]):
    o = json.loads(line)
    if o["unmapped"]["sandgate"]["event"] == "run.exec" and \
            o.get("exit_code") == 3:
        p = o["process"]
        print(o["activity_name"], o["status"], o["status_code"],
              p["cmd_line"], p["container"]["uid"] == sys.argv[2],
              p["uid"] == o["unmapped"]["sandgate"]["run"],
              o["duration"] >= 0, o["end_time"] >= o["start_time"])' \
    "$SG_TMP/runs.ocsf" "$ID")
assert_eq "run.exec mapped field by field" \
    "Terminate Failure 3 sh -c exit 3 True True True True" "$fields"

# --- a record rewritten with fresh hashes -----------------------------------------
cp "$RUNS" "$SG_TMP/runs.orig"
edited=$(python3 - "$RUNS" <<'EOF'
import hashlib, json, sys
path = sys.argv[1]
lines = open(path, "rb").read().splitlines()
out, prev, start = [], None, None
for i, line in enumerate(lines):
    if start is None and b'"exit_code":3,' in line:
        start = i
        line = line.replace(b'"exit_code":3,', b'"exit_code":0,')
        print(json.loads(line)["seq"])
    if start is not None:
        cut = line.rfind(b',"prev":"')
        body = line[:cut] + b',"prev":"' + prev.encode() + b'"}'
        line = body[:-1] + b',"hash":"' + hashlib.sha256(body).hexdigest().encode() + b'"}'
    prev = json.loads(line)["hash"]
    out.append(line)
open(path, "wb").write(b"".join(x + b"\n" for x in out))
EOF
)
sg_run r "$SG" audit verify --file runs.jsonl
assert_eq "the rewritten log keeps its chain" 0 "$r_rc"
sg_run r "$SG" audit verify --file runs.jsonl --key "$TRUST/runs.pub"
assert_eq "the key finds it" 1 "$r_rc"
assert_contains "and names the edited record" "$r_out" \
    "first event that can no longer be trusted: seq $edited ("
cp "$SG_TMP/runs.orig" "$RUNS"
# The last checkpoint cut: the last record is no longer signed.
head -n -1 "$SG_TMP/runs.orig" >"$RUNS"
sg_run r "$SG" audit verify --file runs.jsonl --key "$TRUST/runs.pub"
assert_eq "an unsigned last record is reported" 1 "$r_rc"
assert_contains "after the writer closed" "$r_out" "had closed the log"
cp "$SG_TMP/runs.orig" "$RUNS"

# --- key rotation -------------------------------------------------------------------
sg_run r "$SG" audit key rotate --file runs.jsonl
assert_eq "rotate exits 0" 0 "$r_rc"
assert_contains "the controller introduces the key at once" "$r_out" \
    "runs.jsonl: key "
cp "$KEY.pub" "$TRUST/runs2.pub"
[ -e "$KEY.next" ] && fail "the next key took the key's place" || \
    ok "the next key took the key's place"
assert_eq "the old public key is not the new one" 1 \
    "$(cmp -s "$TRUST/runs.pub" "$TRUST/runs2.pub"; echo $?)"
sg_run r "$SG" exec "$ID" -- true
sg_run r "$SG" audit verify --file runs.jsonl --key "$TRUST/runs.pub"
assert_eq "the old public key verifies across the rotation" 0 "$r_rc"
assert_contains "and says which key signs now" "$r_out" "now signed by key"
sg_run r "$SG" audit verify --file runs.jsonl --key "$TRUST/runs2.pub"
assert_eq "the new key verifies alone" 0 "$r_rc"

# --- an exec killed after its record, before its anchor -----------------------------
# SIGKILL (or power lost) once the record and its close are in runs.jsonl
# and before the anchor names that close (SANDGATE_TEST_CRASH stops it
# there): the anchor said first that the last close was no longer the
# end, so the next exec's log.resume is a writer that stopped, not lines
# someone else wrote.
sg_run r env SANDGATE_TEST_CRASH=anchor:close "$SG" exec "$ID" -- true
assert_eq "the exec is killed before its close is anchored" 137 "$r_rc"
assert_contains "its anchor says it went on past the last close" \
    "$(cat "$KEY.anchor")" " reopened=1 "
sg_run r "$SG" exec "$ID" -- true
assert_eq "the next exec exits 0" 0 "$r_rc"
sg_run r "$SG" audit verify --file runs.jsonl --key "$TRUST/runs2.pub"
assert_eq "a killed exec is not taken for a forgery" 0 "$r_rc"
assert_contains "verify notes the writer that stopped" "$r_out" \
    "stopped without closing"

# --- whoever writes the records folder (atk20r16 F2, F1) ----------------------------
# F2: a lock held on runs.jsonl holds up no exec (it waits on the key's
# lock, outside the folder); timeout(1) is a hang guard only.
exec 7<"$RUNS"
flock 7
sg_run r timeout -k 10 120 "$SG" exec "$ID" -- sh -c 'exit 6'
exec 7<&-
assert_eq "an exec does not wait on a lock in the records folder" 6 "$r_rc"
assert_eq "and its record is written" 1 \
    "$(grep -c '"cmd_exit":6,' "$RUNS")"
# F1: runs.jsonl made a FIFO: the exec runs and warns, and its record is
# counted lost in the anchor; with the file put back, verify --anchor
# says so and the next record follows the log.outage line.
mv "$RUNS" "$RUNS.held"
mkfifo "$RUNS"
sg_run r timeout -k 10 120 "$SG" exec "$ID" -- sh -c 'exit 8'
assert_eq "an exec whose record cannot be written still runs" 8 "$r_rc"
assert_contains "and warns" "$r_err" "run record not written"
assert_contains "its record is counted lost in the anchor" \
    "$(cat "$KEY.anchor")" " lost=1 "
rm "$RUNS"
mv "$RUNS.held" "$RUNS"
sg_run r "$SG" audit verify --file runs.jsonl --key "$TRUST/runs2.pub"
assert_contains "verify --anchor reports the lost record" "$r_out" \
    "the anchor holds an outage"
sg_run r "$SG" exec "$ID" -- true
assert_eq "the next record follows a log.outage line" 1 \
    "$(grep -c '"event":"log.outage".*"lost":1' "$RUNS")"

# --- the controller's anchor ----------------------------------------------------------
# A log cut after an older record: the anchor beside the key names the last
# close the controller signed, and `audit verify --key` reads it.
sg_run r "$SG" exec "$ID" -- true
cp "$RUNS" "$SG_TMP/runs.full"
head -n -2 "$SG_TMP/runs.full" >"$RUNS"
sg_run r "$SG" audit verify --file runs.jsonl --key "$TRUST/runs2.pub" \
    "$RUNS"
assert_eq "without the anchor (FILES) the cut is not seen" 0 "$r_rc"
sg_run r "$SG" audit verify --file runs.jsonl --key "$TRUST/runs2.pub"
assert_eq "a runs.jsonl cut at an older close fails" 1 "$r_rc"
assert_contains "against the writer's anchor" "$r_out" "its writer's anchor names seq"
cp "$SG_TMP/runs.full" "$RUNS"
# Whoever can write runs.jsonl edits it, or whoever can write its folder
# (here uid 65532, the proxy's, as when the records shared the proxy's log
# folder) replaces it; the next exec does not sign over it unseen: it
# writes log.resume, and verify --key fails.
chown 65532:65532 "$SANDGATE_RECORD_DIR"
chmod o+x "$SG_TMP"
forge_runs() {	# MODE: append (a line after the last close, as root) or
		# replace (as uid 65532)
	if [ "$1" = append ]; then
		as=()
	else
		as=(setpriv --reuid 65532 --regid 65532 --clear-groups)
	fi
	"${as[@]}" /usr/bin/python3 - "$RUNS" "$1" <<'EOF'
import hashlib, json, os, sys
path, mode = sys.argv[1], sys.argv[2]
def line(seq, prev, run, cmd):
    body = json.dumps({"ts": "2026-12-01T00:00:00.000000Z", "seq": seq,
                       "event": "run.exec", "run": run, "sandbox": "sbx_x",
                       "command": cmd, "prev": prev},
                      separators=(",", ":")).encode()
    h = hashlib.sha256(body).hexdigest()
    return body[:-1] + b',"hash":"' + h.encode() + b'"}\n', h
if mode == "append":
    last = json.loads(open(path, "rb").read().splitlines()[-1])
    data, _ = line(last["seq"] + 1, last["hash"], "run_planted", "true")
    open(path, "ab").write(data)
else:
    os.rename(path, path + ".real")
    a, h = line(1, "0" * 64, "run_forged1", "echo nothing to see")
    b, _ = line(2, h, "run_forged2", "true")
    open(path, "wb").write(a + b)
EOF
}
for mode in append replace; do
	cp "$SG_TMP/runs.full" "$RUNS"
	rm -f "$RUNS.real"
	last=$(tail -n 1 "$RUNS" | python3 -c 'import json,sys; print(json.load(sys.stdin)["seq"])')
	forge_runs "$mode" || fail "forge_runs $mode"
	sg_run r "$SG" exec "$ID" -- echo two
	assert_eq "exec after the $mode exits 0" 0 "$r_rc"
	sg_run r "$SG" audit verify --file runs.jsonl
	assert_eq "$mode: the chain alone holds" 0 "$r_rc"
	sg_run r "$SG" audit verify --file runs.jsonl --key "$TRUST/runs2.pub"
	assert_eq "$mode: verify --key fails" 1 "$r_rc"
	if [ "$mode" = append ]; then
		assert_contains "$mode: the planted line is named" "$r_out" \
		    "first event that can no longer be trusted: seq $((last + 1)) ("
		assert_contains "$mode: after the close" "$r_out" "follow the writer's close"
	else
		assert_contains "$mode: the whole file is untrusted" "$r_out" \
		    "first event that can no longer be trusted: seq 1 ("
		assert_contains "$mode: the controller's records were cut" "$r_out" \
		    "were cut, or the log was replaced"
	fi
	# runs.full holds the killed exec's log.resume (above); a replaced
	# file only the exec's own.
	want=1
	[ "$mode" = append ] && want=$((1 + $(grep -c '"event":"log.resume"' \
	    "$SG_TMP/runs.full")))
	assert_eq "$mode: recorded by the exec" "$want" \
	    "$(grep -c '"event":"log.resume"' "$RUNS")"
done
cp "$SG_TMP/runs.full" "$RUNS"
rm -f "$RUNS.real"
chown root:root "$SANDGATE_RECORD_DIR"
chmod o-x "$SG_TMP"

# --- the proxy in its container: its anchor and log.resume ----------------------------
SRC=${SANDGATE_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
export SANDGATE_DATA_DIR=$SRC
EGRESS=sgtest-egress-$$
docker network create --internal "$EGRESS" >/dev/null || fail "egress network"
sg_on_exit "'$SG' proxy stop; docker network rm $EGRESS"
POL=$SG_TMP/policy.d
mkdir -p "$POL"
cp "$SRC"/policy.d/*.yaml "$POL/"
PKEY=$SANDGATE_STATE/proxy/keys/checkpoint.key
PLOG=$SANDGATE_LOG_DIR/security-events.jsonl
proxy_cycle() {
	sg_run r "$SG" proxy start --egress-network "$EGRESS" --policy-dir "$POL" \
	    --log-dir "$SANDGATE_LOG_DIR"
	assert_eq "proxy start ($1)" 0 "$r_rc"
	sg_run r "$SG" proxy stop
	assert_eq "proxy stop ($1)" 0 "$r_rc"
}
proxy_cycle first
cp "$PKEY.pub" "$TRUST/proxy.pub"
assert_eq "the proxy's anchor is its uid's alone" "600 65532" \
    "$(stat -c '%a %u' "$PKEY.anchor")"
sg_run r "$SG" audit verify --key "$TRUST/proxy.pub"
assert_eq "the proxy's log verifies" 0 "$r_rc"
assert_contains "against the anchor beside its key" "$r_out" \
    "checked against the anchor $PKEY.anchor"
close=$(tail -n 1 "$PLOG" | python3 -c 'import json,sys; print(json.load(sys.stdin)["seq"])')
python3 - "$PLOG" <<'EOF'
import hashlib, json, sys
path = sys.argv[1]
last = json.loads(open(path, "rb").read().splitlines()[-1])
body = json.dumps({"ts": "2026-12-01T00:00:00.000000Z", "seq": last["seq"] + 1,
                   "event": "egress.allowed", "host": "planted.example.invalid",
                   "prev": last["hash"]}, separators=(",", ":")).encode()
line = body[:-1] + b',"hash":"' + hashlib.sha256(body).hexdigest().encode() + b'"}\n'
open(path, "ab").write(line)
EOF
proxy_cycle "after a planted line"
sg_run r "$SG" audit verify --key "$TRUST/proxy.pub"
assert_eq "a line planted after the proxy's close fails verify" 1 "$r_rc"
assert_contains "the proxy recorded it" "$r_out" "follow the writer's close at seq $close"
assert_contains "and it is named" "$r_out" \
    "first event that can no longer be trusted: seq $((close + 1)) ("

# --- a full volume (atk20r17 F2) ---------------------------------------------------
# keys/ and the records folder on one small volume (the default layout
# puts both under $SANDGATE_STATE); whoever writes the records folder fills
# it, with data or with empty files until no inode is left: the exec's
# record is refused and counted lost in the anchor, rewritten in place
# (before, nothing counted it, and verify --key passed once the folder was
# freed); the next record follows a log.outage line that verify reports.
KD=$SANDGATE_STATE/keys
FR=$KD/records
cp -a "$KD" "$SG_TMP/keys.saved"
if mount -t tmpfs -o size=1m,nr_inodes=64,mode=0700 sgfull "$KD"; then
	sg_on_exit "umount '$KD' 2>/dev/null"
	cp -a "$SG_TMP/keys.saved/." "$KD/"
	rm -f "$KD/runs.key.anchor"	# a records folder of its own
	mkdir "$FR"
	sg_run r env SANDGATE_RECORD_DIR="$FR" "$SG" exec "$ID" -- true
	assert_eq "a first record on the small volume" 0 "$r_rc"
	n=0
	for how in blocks inodes; do
		if [ "$how" = blocks ]; then
			dd if=/dev/zero of="$FR/fill" bs=4k 2>/dev/null
		else
			i=0
			while touch "$FR/e$i" 2>/dev/null; do i=$((i + 1)); done
		fi
		sg_run r env SANDGATE_RECORD_DIR="$FR" "$SG" exec "$ID" -- true
		assert_eq "$how full: the command still exits 0" 0 "$r_rc"
		assert_contains "$how full: the lost record is in the anchor" \
		    "$(cat "$KD/runs.key.anchor")" " lost=1 "
		rm -f "$FR/fill" "$FR"/e*
		sg_run r env SANDGATE_RECORD_DIR="$FR" "$SG" exec "$ID" -- true
		n=$((n + 1))
		assert_eq "$how freed: a log.outage line before the next record" \
		    "$n" "$(grep -c '"event":"log.outage"' "$FR/runs.jsonl")"
		sg_run r env SANDGATE_RECORD_DIR="$FR" "$SG" audit verify \
		    --file runs.jsonl --key "$TRUST/runs2.pub"
		assert_eq "$how freed: verify --key passes" 0 "$r_rc"
		assert_contains "$how freed: and reports the lost record" \
		    "$r_out" "could not write $n event(s)"
	done
	umount "$KD"
else
	fail "cannot mount a tmpfs on $KD"
fi

sg_run r "$SG" discard "$ID"
assert_eq "discard exits 0" 0 "$r_rc"
sg_summary
