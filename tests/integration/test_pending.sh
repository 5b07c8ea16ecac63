#!/usr/bin/env bash
# test_pending.sh: `sandgate pending [ID] [--json] [--follow]` on the real
# binary over a security-event log written here. No Docker, no network.
#
# The contract under test is docs/policy.md ("Approving a blocked
# destination") and docs/controller.md.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
sg_setup

L=$SG_TMP/log
mkdir -p "$L"
A=sbx_aaaaaaaaaaaaaaaaaaaaaaaa
B=sbx_bbbbbbbbbbbbbbbbbbbbbbbb
line() {	# ts event sandbox host port reason [extra json members]
	printf '{"ts":"%s","seq":1,"event":"%s","sandbox":"%s","host":"%s","port":%s,"reason":"%s","message":"m"%s}\n' "$@"
}
{
	line 2026-01-31T12:00:00.000000Z egress.blocked $A one.test 443 not_allowlisted ',"run_id":"run_111111111111111111111111"'
	line 2026-01-31T12:00:05.000000Z egress.blocked $A one.test 443 not_allowlisted ''
	line 2026-01-31T12:01:00.000000Z egress.blocked_summary $A one.test 443 not_allowlisted ',"count":5,"first":"2026-01-31T11:59:00.000000Z","last":"2026-01-31T12:00:59.000000Z"'
	line 2026-01-31T12:02:00.000000Z egress.blocked $B two.test 8443 denied ''
	# Not the proxy's spelling of a host, a would-be block, an allowed one.
	line 2026-01-31T12:02:00.000000Z egress.blocked $B Evil.TEST 443 not_allowlisted ''
	line 2026-01-31T12:02:00.000000Z egress.would_block $B three.test 443 not_allowlisted ''
	line 2026-01-31T12:02:00.000000Z egress.allowed $B four.test 443 none ''
} >"$L/security-events.jsonl"
# A rotated file is read first.
line 2026-01-31T11:00:00.000000Z egress.blocked $A one.test 443 not_allowlisted '' >"$L/security-events.jsonl.1"

sg_run p "$SG" pending --log-dir "$L"
assert_eq "pending: exit 0" 0 "$p_rc"
assert_eq "pending: one line per sandbox, destination and reason" \
	"$A  one.test:443  not_allowlisted  8 attempts  2026-01-31T11:00:00.000000Z .. 2026-01-31T12:00:59.000000Z  runs run_111111111111111111111111
$B  two.test:8443  denied  1 attempt  2026-01-31T12:02:00.000000Z .. 2026-01-31T12:02:00.000000Z" "$p_out"
sg_run p "$SG" pending "$B" --json --log-dir "$L"
assert_eq "pending ID --json" \
	'{"sandbox":"sbx_bbbbbbbbbbbbbbbbbbbbbbbb","destination":"two.test:8443","host":"two.test","port":8443,"reason":"denied","attempts":1,"first":"2026-01-31T12:02:00.000000Z","last":"2026-01-31T12:02:00.000000Z","run_ids":[]}' "$p_out"
sg_run p "$SG" pending sbx_nope --log-dir "$L"
assert_eq "pending with a malformed id: exit 125" 125 "$p_rc"
sg_run p "$SG" pending --log-dir "$SG_TMP/nolog"
assert_eq "pending without a log: exit 125" 125 "$p_rc"

# --follow: the list, then each new destination once, as it comes.
"$SG" pending "$A" --json --follow --log-dir "$L" >"$SG_TMP/follow.out" 2>&1 &
fpid=$!
sleep 1
{
	line 2026-01-31T12:03:00.000000Z egress.blocked $A new.test 443 not_allowlisted ',"run_id":"run_222222222222222222222222"'
	line 2026-01-31T12:03:01.000000Z egress.blocked $A new.test 443 not_allowlisted ''
	line 2026-01-31T12:03:02.000000Z egress.blocked $B other.test 443 not_allowlisted ''
	line 2026-01-31T12:03:03.000000Z egress.blocked $A one.test 443 not_allowlisted ''
} >>"$L/security-events.jsonl"
for _ in $(seq 1 50); do
	grep -q new.test "$SG_TMP/follow.out" && break
	sleep 0.1
done
sleep 0.5
kill "$fpid"
wait "$fpid" 2>/dev/null
assert_eq "pending --follow: the list, then the new destination once" \
	"one.test new.test:443 run_222222222222222222222222" \
	"$(python3 -c 'import json,sys
out = [json.loads(l) for l in open(sys.argv[1])]
print(" ".join([out[0]["host"]] + [o["destination"] + " " + ",".join(o["run_ids"]) for o in out[1:]]))' "$SG_TMP/follow.out")"

sg_summary
