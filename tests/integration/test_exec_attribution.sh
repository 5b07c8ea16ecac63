#!/usr/bin/env bash
# test_exec_attribution.sh: each `sandgate exec` gets its own proxy
# credential, so blocks name the run that caused them. Two execs run at
# once in one sandbox, each blocked on its own host (curl and python's
# urllib, both sending the credential from the proxy URL); each one's
# network_blocked lists only its own, and each security event names its
# run id. A request without a credential, or with a finished exec's, is
# the sandbox's alone. Real Docker and the real proxy container; its
# upstream side is an --internal network of its own, and every
# destination here is refused before any lookup.
#
# With the token key that `proxy start` makes, each exec's proxy URL
# carries a sandbox token naming its run: it names the run only while the
# exec runs (after its end, or its SIGKILL, it attributes nothing), and
# from another sandbox's address it is refused (token_other_sandbox).
# Without the key, a 128-bit hex credential, as before.
#
# The contract under test is docs/agents.md (network_blocked) and
# docs/proxy.md ("Exec credentials").
set -u
SRC=${SANDGATE_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRC/tests/lib/common.sh"

sg_require_docker
sg_setup
export SANDGATE_DATA_DIR=$SRC
sg_base_image
sg_proxy_up attr
mkdir -p "$SG_TMP/project"
echo "attribution" >"$SG_TMP/project/README"
sg_run r "$SG" create "$SG_TMP/project"
assert_eq "create" 0 "$r_rc"
SBX=$r_out
sg_on_exit "'$SG' discard $SBX"

# Two execs at once: each waits for the other to have started, so they
# overlap for the whole of their requests.
A=$SG_TMP/a.json B=$SG_TMP/b.json
"$SG" exec --json "$SBX" -- sh -c 'touch /tmp/a.started;
	while [ ! -e /tmp/b.started ]; do sleep 0.1; done
	curl -sS -m 10 https://one.blocked.test/ ; echo "$HTTPS_PROXY" >/workspace/a.proxy
	sleep 1' >"$A" 2>"$SG_TMP/a.err" &
apid=$!
"$SG" exec --json "$SBX" -- python3 -c '
import os, time, urllib.request
open("/tmp/b.started", "w").close()
while not os.path.exists("/tmp/a.started"):
    time.sleep(0.1)
try:
    urllib.request.urlopen("https://two.blocked.test/", timeout=10)
except Exception as e:
    print(e)
time.sleep(1)' >"$B" 2>"$SG_TMP/b.err" &
bpid=$!
wait $apid $bpid

field() {	# FILE EXPR: a python expression over the exec's JSON d
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2" 2>&1
}
RA=$(field "$A" 'd["run_id"]')
RB=$(field "$B" 'd["run_id"]')
assert_contains "exec A has a run id" "$RA" "run_"
assert_contains "exec B has a run id" "$RB" "run_"
assert_eq "exec A lists only its own block" "one.blocked.test:443 $RA" \
	"$(field "$A" '" ".join(b["destination"] + " " + str(b["run_id"]) for b in d["network_blocked"])')"
assert_eq "exec B lists only its own block" "two.blocked.test:443 $RB" \
	"$(field "$B" '" ".join(b["destination"] + " " + str(b["run_id"]) for b in d["network_blocked"])')"

events() {	# the sandbox's egress.blocked events: "host run_id" lines
	"$SG" audit --sandbox "$SBX" --json --log-dir "$SANDGATE_LOG_DIR" |
	    python3 -c 'import json,sys
for l in sys.stdin:
    e = json.loads(l)
    if e.get("event") == "egress.blocked":
        print(e["host"], e.get("run_id"))'
}
ev=$(events)
assert_contains "the event of A names A's run" "$ev" "one.blocked.test $RA"
assert_contains "the event of B names B's run" "$ev" "two.blocked.test $RB"

# A finished exec's credential, from A's own proxy URL: it stops working,
# and the request is the sandbox's alone. So is one without a credential.
assert_contains "A's proxy URL carried a sandbox token" \
	"$("$SG" exec "$SBX" -- cat /workspace/a.proxy)" "http://sandgate:sgt1."
sg_run c "$SG" exec --json "$SBX" -- sh -c 'curl -sS -m 10 --proxy "$(cat /workspace/a.proxy)" https://three.blocked.test/;
	curl -sS -m 10 --proxy "http://${HTTPS_PROXY##*@}" https://four.blocked.test/'
printf '%s' "$c_out" >"$SG_TMP/c.json"
RC=$(field "$SG_TMP/c.json" 'd["run_id"]')
assert_eq "exec C: both blocks listed, attributed to no run" \
	"four.blocked.test:443 None three.blocked.test:443 None" \
	"$(field "$SG_TMP/c.json" '" ".join(sorted(b["destination"] + " " + str(b["run_id"]) for b in d["network_blocked"]))')"
ev=$(events)
assert_contains "a finished exec's credential names no run" "$ev" "three.blocked.test None"
assert_contains "no credential: the sandbox's alone" "$ev" "four.blocked.test None"
assert_not_contains "C's own run is not named either" "$ev" "$RC"

# An exec whose sandgate is SIGKILLed never ends its own credential: the
# sandbox's next exec finds its marker ownerless and ends it first, so
# its proxy URL names no run once the next command runs (the same as
# gc, which ends it too).
"$SG" exec --json "$SBX" -- sh -c 'echo "$HTTPS_PROXY" >/workspace/d.proxy.tmp;
	mv /workspace/d.proxy.tmp /workspace/d.proxy; sleep 30' >/dev/null 2>&1 &
dpid=$!
WORK=$SANDGATE_STATE/sandboxes/$SBX/work
for _ in $(seq 1 150); do
	[ -s "$WORK/d.proxy" ] && break
	sleep 0.2
done
RD=$(cd "$SANDGATE_STATE/sandboxes/$SBX/runs" && ls -- *.active 2>/dev/null)
RD=${RD%.active}
assert_contains "exec D runs, its marker names its run" "$RD" "run_"
kill -KILL "$dpid"
wait "$dpid" 2>/dev/null
sg_run e "$SG" exec --json "$SBX" -- sh -c 'curl -sS -m 10 --proxy "$(cat /workspace/d.proxy)" https://five.blocked.test/'
printf '%s' "$e_out" >"$SG_TMP/e.json"
assert_eq "exec E: the SIGKILLed exec's credential attributes nothing" \
	"five.blocked.test:443 None" \
	"$(field "$SG_TMP/e.json" '" ".join(b["destination"] + " " + str(b["run_id"]) for b in d["network_blocked"])')"
ev=$(events)
assert_contains "a SIGKILLed exec's credential names no run" "$ev" "five.blocked.test None"
assert_not_contains "the SIGKILLed exec's run is named by no later event" \
	"$(echo "$ev" | grep five.blocked.test)" "$RD"

# Another exec blocked on more destinations than the proxy keeps per exec
# (64) while this one runs: this one's list keeps its own block and only
# it; the other's says it is cut (network_blocked_truncated).
G=$SG_TMP/g.json H=$SG_TMP/h.json
"$SG" exec --json "$SBX" -- sh -c 'curl -sS -m 10 https://six.blocked.test/;
	touch /tmp/g.blocked; while [ ! -e /tmp/h.done ]; do sleep 0.1; done' \
	>"$G" 2>"$SG_TMP/g.err" &
gpid=$!
"$SG" exec --json "$SBX" -- sh -c 'while [ ! -e /tmp/g.blocked ]; do sleep 0.1; done
	i=0; while [ $i -lt 70 ]; do
		curl -s -o /dev/null -m 10 http://h$i.flood.test/; i=$((i + 1))
	done; touch /tmp/h.done' >"$H" 2>"$SG_TMP/h.err" &
hpid=$!
wait $gpid $hpid
RG=$(field "$G" 'd["run_id"]')
assert_eq "exec G lists its own block alone after another's 70" \
	"six.blocked.test:443 $RG False" \
	"$(field "$G" '" ".join(b["destination"] + " " + str(b["run_id"]) for b in d["network_blocked"]) + " " + str(d["network_blocked_truncated"])')"
assert_eq "exec H lists 64 destinations and says it is cut" "64 True" \
	"$(field "$H" 'str(len(d["network_blocked"])) + " " + str(d["network_blocked_truncated"])')"
assert_eq "exec A's list is whole" "False" \
	"$(field "$A" 'd["network_blocked_truncated"]')"

# An exec --fresh registers its container beside the session one, and
# only its own address goes at its end: the session container keeps its
# identity (before, the fresh container's took its place for good, so a
# session exec's blocks were nobody's and its network_blocked empty).
sg_run f "$SG" exec --fresh "$SBX" -- sh -c 'curl -sS -m 10 https://seven.blocked.test/; true'
assert_eq "exec --fresh ran" 0 "$f_rc"
sg_run s "$SG" exec --json "$SBX" -- sh -c 'curl -sS -m 10 https://eight.blocked.test/'
printf '%s' "$s_out" >"$SG_TMP/s.json"
RS=$(field "$SG_TMP/s.json" 'd["run_id"]')
assert_eq "after an exec --fresh, the session exec's block is its own" \
	"eight.blocked.test:443 $RS" \
	"$(field "$SG_TMP/s.json" '" ".join(b["destination"] + " " + str(b["run_id"]) for b in d["network_blocked"])')"


# An exec's token is bound to its sandbox: from another sandbox's
# address the proxy refuses it (token_other_sandbox), and that block is
# the other sandbox's.
sg_run r "$SG" create "$SG_TMP/project"
assert_eq "create a second sandbox" 0 "$r_rc"
SBX2=$r_out
sg_on_exit "'$SG' discard $SBX2"
APROXY=$(cat "$SANDGATE_STATE/sandboxes/$SBX/work/a.proxy")
sg_run x "$SG" exec --json "$SBX2" -- sh -c "curl -sS -m 10 --proxy '$APROXY' https://nine.blocked.test/; true"
printf '%s' "$x_out" >"$SG_TMP/x.json"
assert_eq "another sandbox's token is refused as such" \
	"nine.blocked.test:443 token_other_sandbox None" \
	"$(field "$SG_TMP/x.json" '" ".join(b["destination"] + " " + b["reason"] + " " + str(b["run_id"]) for b in d["network_blocked"])')"
assert_contains "the refusal says why" "$x_out" "sandbox token refused"

# Without the token key the exec hands out its 128-bit credential, as
# before tokens, and its blocks still name its run.
KEY=$SANDGATE_STATE/keys/token.key
mv "$KEY" "$KEY.aside"
sg_run k "$SG" exec --json "$SBX" -- sh -c 'echo "$HTTPS_PROXY"; curl -sS -m 10 https://ten.blocked.test/ >/dev/null 2>&1; true'
mv "$KEY.aside" "$KEY"
printf '%s' "$k_out" >"$SG_TMP/k.json"
RK=$(field "$SG_TMP/k.json" 'd["run_id"]')
assert_eq "no token key: a hex credential in the proxy URL" "32 True" \
	"$(field "$SG_TMP/k.json" '(lambda p: str(len(p)) + " " + str(all(c in "0123456789abcdef" for c in p)))(d["stdout"].split("sandgate:")[1].split("@")[0])')"
assert_eq "no token key: the block names the run" \
	"ten.blocked.test:443 $RK" \
	"$(field "$SG_TMP/k.json" '" ".join(b["destination"] + " " + str(b["run_id"]) for b in d["network_blocked"])')"

sg_summary
