#!/usr/bin/env bash
# test_policy_cli.sh: `sandgate policy check|explain|list|diff|suggest` on
# the real binary ($SANDGATE_BIN/sandgate). No Docker and no network: only
# policy folders and a security-event log written here.
#
# The contract under test is docs/policy.md ("Validation", "Reviewing a
# change", "Drafting a set from what was blocked").

set -u
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
sg_setup

SRC=${SANDGATE_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
SHIPPED="$SRC/policy.d"
DATA="$SRC/tests/data/policy"
export SANDGATE_POLICY_DIR="$SHIPPED"

# Line of the first "- host: NAME" in FILE, and the rationale after it.
entry_line() {
	grep -n -m1 -- "- host: $2\$" "$1" | cut -d: -f1
}
entry_rationale() {
	awk -v h="- host: $2" '
	    $0 ~ "^ *" h "$" { found = 1; next }
	    found && /^ *rationale: / { sub(/^ *rationale: /, ""); print; exit }
	    found && /^ *- / { exit }' "$1"
}

# ------------------------------------------------------------------ check

nsets=$(ls "$SHIPPED"/*.yaml | wc -l)
sg_run c "$SG" policy check
assert_eq "check shipped: exit 0" 0 "$c_rc"
if printf '%s\n' "$c_out" | grep -Eqx "policy OK: $nsets sets, [0-9]+ entries, digest [0-9a-f]{64}"; then
	ok "check shipped: one-line summary"
else
	fail "check shipped: one-line summary" "got '$c_out'"
fi
assert_eq "check shipped: one line" 1 "$(printf '%s\n' "$c_out" | wc -l)"
assert_eq "check shipped: no diagnostics" "" "$c_err"
shipped_entries=$(printf '%s\n' "$c_out" | sed -n 's/.* sets, \([0-9]*\) entries.*/\1/p')

# The same folder given as an operand gives the same digest.
sg_run c2 "$SG" policy check "$SHIPPED"
assert_eq "check DIR: same summary as the default folder" "$c_out" "$c2_out"

# A folder with one of each kind of mistake: every one reported, at its
# exact position, and nothing else.
M="$SG_TMP/mistakes"
cp -r "$DATA/cli-mistakes" "$M"
sg_run m "$SG" policy check "$M"
assert_eq "check mistakes: exit 1" 1 "$m_rc"
assert_eq "check mistakes: nothing on stdout" "" "$m_out"
want_errors=(
	"dupkey.yaml:6:5: duplicate key \"rationale\" (first at line 4)"
	"latin1.yaml:4:19: invalid UTF-8 at byte 0xe9"
	"rationale.yaml:5:5: entry for \"a.example.org\" has no rationale"
	"rationale.yaml:8:16: entry for \"b.example.org\" has an empty rationale"
	"rationale.yaml:10:5: unknown key \"rationle\" in an allow entry; did you mean \"rationale\"?"
	"values.yaml:4:18: port \"70000\" is not a number from 1 to 65535"
	"values.yaml:7:14: expires \"2027-02-30\" is not a date"
	"wildcards.yaml:3:11: wildcard \"*.com\" covers the whole public suffix \"com\""
	"wildcards.yaml:5:11: wildcard \"*.co.uk\" covers the whole public suffix \"co.uk\""
	"wildcards.yaml:7:11: wildcard \"*.github.io\" covers the whole public suffix \"github.io\""
	"wildcards.yaml:9:11: wildcard \"*\" matches every host"
	"wildcards.yaml:12:20: allow_private is not allowed on wildcard \"*.corp.example.org\""
)
for w in "${want_errors[@]}"; do
	if printf '%s\n' "$m_err" | grep -qF -- "$M/$w"; then
		ok "check mistakes: ${w%%: *}"
	else
		fail "check mistakes: ${w%%: *}" "no line starting '$M/$w' in:
$m_err"
	fi
done
got_errors=$(printf '%s\n' "$m_err" | grep -Ec "^$M/[a-z0-9]+\.yaml:[0-9]+:[0-9]+: ")
assert_eq "check mistakes: one error per mistake" "${#want_errors[@]}" "$got_errors"
assert_contains "check mistakes: error count" "$m_err" \
    "policy in $M has ${#want_errors[@]} errors"

# ---------------------------------------------------------------- explain

line=$(entry_line "$SHIPPED/pypi.yaml" pypi.org)
why=$(entry_rationale "$SHIPPED/pypi.yaml" pypi.org)
sg_run e "$SG" policy explain pypi.org:443 --sets pypi
assert_eq "explain pypi.org: exit 0" 0 "$e_rc"
assert_eq "explain pypi.org: entry and rationale" \
    "ALLOW via set pypi ($SHIPPED/pypi.yaml:$line): $why" "$e_out"

sg_run e "$SG" policy explain evil.test:443
assert_eq "explain evil.test: exit 1" 1 "$e_rc"
assert_contains "explain evil.test: the client's words" "$e_out" \
    "network blocked by policy: destination evil.test:443 not allowlisted"
assert_contains "explain evil.test: reason code" "$e_out" "BLOCK not_allowlisted"

sg_run e "$SG" policy explain pypi.org:80 --sets pypi
assert_eq "explain pypi.org:80: exit 1" 1 "$e_rc"
assert_contains "explain pypi.org:80: port_not_allowed" "$e_out" "BLOCK port_not_allowed"
assert_contains "explain pypi.org:80: nearest entry" "$e_out" \
    "nearest entry: \"pypi.org\" in set pypi ($SHIPPED/pypi.yaml:$line)"

sg_run e "$SG" policy explain pypi.org --sets nosuchset
assert_eq "explain unknown set: exit 2" 2 "$e_rc"

sg_run e "$SG" policy explain pypi.org --policy-dir "$M"
assert_eq "explain on an invalid policy: exit 125" 125 "$e_rc"

# ------------------------------------------------------------------- list

sg_run l "$SG" policy list --json
assert_eq "list --json: exit 0" 0 "$l_rc"
summary=$(printf '%s' "$l_out" | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(len(d["sets"]), sum(len(s["entries"]) for s in d["sets"]),
      all(e["rationale"] for s in d["sets"] for e in s["entries"]))' 2>&1)
assert_eq "list --json: parses, every set and entry" \
    "$nsets $shipped_entries True" "$summary"

# ------------------------------------------------------------------- diff

OLD="$SG_TMP/old"
NEW="$SG_TMP/new"
cp -r "$SHIPPED" "$OLD"
cp -r "$SHIPPED" "$NEW"
sg_run d "$SG" policy diff "$OLD" "$NEW"
assert_eq "diff same: exit 0" 0 "$d_rc"
assert_eq "diff same: no output" "" "$d_out"

# NEW: pypi.org removed, a new set with one entry.
awk 'BEGIN { skip = 0 }
    /^  - host: pypi.org$/ { skip = 1; next }
    skip && /^  - / { skip = 0 }
    !skip { print }' "$OLD/pypi.yaml" >"$NEW/pypi.yaml"
cat >"$NEW/tools.yaml" <<'EOF'
description: build tools
owner: tests@example.org
allow:
  - host: tools.example.org
    ports: [443]
    rationale: the build downloads its compiler from here
EOF
sg_run d "$SG" policy diff "$OLD" "$NEW"
assert_eq "diff: exit 1 when they differ" 1 "$d_rc"
assert_contains "diff: - line with its rationale" "$d_out" \
    "- pypi pypi.org:443  ($OLD/pypi.yaml:$line, tls required) $why"
assert_contains "diff: + line with its rationale" "$d_out" \
    "+ tools tools.example.org:443  ($NEW/tools.yaml:4, tls required) the build downloads its compiler from here"
assert_contains "diff: + set" "$d_out" "+ set tools ($NEW/tools.yaml)"
assert_eq "diff: nothing else changed" 3 "$(printf '%s\n' "$d_out" | wc -l)"

# ---------------------------------------------------------------- suggest

L="$SG_TMP/suggest-logs"
mkdir -p "$L"
now=$(date -u +%Y-%m-%dT%H:%M:%S.000000Z)
ev() {	# ts sandbox event host port method reason
	printf '{"ts":"%s","seq":1,"event":"%s","sandbox":"%s","src":"10.213.0.5:40000","method":"%s","host":"%s","port":%s,"reason":"%s","message":"network blocked by policy: destination %s:%s not allowlisted","policy_sets":["pypi"],"rule":null,"prev":"0","hash":"0"}\n' \
	    "$1" "$3" "$2" "$6" "$4" "$5" "$7" "$4" "$5"
}
{
	ev "$now" sbx_a egress.blocked evil.test 8443 CONNECT not_allowlisted
} >"$L/security-events.jsonl.1"
{
	ev 2020-01-01T00:00:00.000000Z sbx_a egress.blocked old.test 443 CONNECT not_allowlisted
	ev "$now" sbx_a egress.blocked evil.test 443 CONNECT not_allowlisted
	ev "$now" sbx_a egress.blocked evil.test 443 CONNECT not_allowlisted
	ev "$now" sbx_a egress.would_block mirror.test 80 GET not_allowlisted
	ev "$now" sbx_a egress.blocked pypi.org 8443 CONNECT port_not_allowed
	ev "$now" sbx_a egress.blocked pypi.org 443 CONNECT not_allowlisted
	ev "$now" sbx_a egress.blocked 192.0.2.7 443 CONNECT ip_literal
	ev "$now" sbx_a egress.blocked sni.test 443 CONNECT sni_mismatch
	ev "$now" sbx_b egress.blocked other.test 443 CONNECT not_allowlisted
	printf '{"ts":"%s","event":"policy.reloaded","policy_digest":"x"}\n' "$now"
	printf 'not json at all\n'
} >"$L/security-events.jsonl"

sg_run s "$SG" policy suggest --log-dir "$L" --sandbox sbx_a --since 2h --set drafted
assert_eq "suggest: exit 0" 0 "$s_rc"
printf '%s\n' "$s_out" >"$SG_TMP/drafted.yaml"
entries=$(grep -c '^  - host: ' "$SG_TMP/drafted.yaml")
assert_eq "suggest: one entry per destination" 4 "$entries"
assert_eq "suggest: ports seen, also in the rotated file" 1 \
    "$(grep -A1 -x '  - host: "evil.test"' "$SG_TMP/drafted.yaml" | grep -cx '    ports: \[443, 8443\]')"
assert_contains "suggest: attempts and sandbox in a comment" "$s_out" \
    "# 3 attempts (not_allowlisted) by sbx_a"
assert_contains "suggest: report-mode events count" "$s_out" '- host: "mirror.test"'
assert_contains "suggest: IP literal" "$s_out" '- host: "192.0.2.7"'
assert_eq "suggest: pypi.org:443 is already allowed, only 8443 drafted" 1 \
    "$(grep -A1 -x '  - host: "pypi.org"' "$SG_TMP/drafted.yaml" | grep -cx '    ports: \[8443\]')"
assert_contains "suggest: names the set that allows it" "$s_out" \
    "already allowed: port 443 by set pypi"
assert_not_contains "suggest: --sandbox leaves other sandboxes out" "$s_out" "other.test"
assert_not_contains "suggest: --since leaves old events out" "$s_out" "old.test"
assert_not_contains "suggest: SNI blocks are not allowlist gaps" "$s_out" '"sni.test"'
assert_eq "suggest: every rationale is the placeholder" "$entries" \
    "$(grep -cx '    rationale: TODO' "$SG_TMP/drafted.yaml")"
assert_contains "suggest: owner placeholder" "$s_out" "owner: TODO"

# check refuses the draft, one error per placeholder rationale...
P="$SG_TMP/with-draft"
cp -r "$SHIPPED" "$P"
cp "$SG_TMP/drafted.yaml" "$P/drafted.yaml"
sg_run k "$SG" policy check "$P"
assert_eq "check draft: refused" 1 "$k_rc"
assert_eq "check draft: one error per entry" "$entries" \
    "$(printf '%s\n' "$k_err" | grep -c 'still has the drafted rationale "TODO"')"
# ...and accepts it once a person has written them.
sed -i 's/rationale: TODO$/rationale: the task downloads its test fixtures here/; s/^owner: TODO$/owner: tests@example.org/' \
    "$P/drafted.yaml"
sg_run k "$SG" policy check "$P"
assert_eq "check reviewed draft: accepted" 0 "$k_rc"
assert_contains "check reviewed draft: summary" "$k_out" "policy OK: $((nsets + 1)) sets"

sg_run s "$SG" policy suggest --log-dir "$L" --sandbox sbx_nobody
assert_eq "suggest with nothing blocked: exit 1" 1 "$s_rc"
assert_eq "suggest with nothing blocked: no draft" "" "$s_out"
sg_run s "$SG" policy suggest --log-dir "$SG_TMP/no-such-dir"
assert_eq "suggest without a log: exit 125" 125 "$s_rc"
sg_run s "$SG" policy suggest --log-dir "$L" --since yesterday
assert_eq "suggest with a bad --since: exit 2" 2 "$s_rc"
# --since reads times as audit does: one reader (logread.h), offsets too.
O="$SG_TMP/suggest-offsets"
mkdir -p "$O"
{
	ev 2026-01-31T11:59:59.000000Z sbx_a egress.blocked before.test 443 CONNECT not_allowlisted
	ev 2026-01-31T07:00:01.000000-05:00 sbx_a egress.blocked after.test 443 CONNECT not_allowlisted
} >"$O/security-events.jsonl"
sg_run s "$SG" policy suggest --log-dir "$O" --since 2026-01-31T14:00:00+02:00
assert_eq "suggest --since with an offset: exit 0" 0 "$s_rc"
assert_contains "suggest --since: an event logged with an offset, after it" "$s_out" '- host: "after.test"'
assert_not_contains "suggest --since: 11:59:59Z is before 14:00+02:00" "$s_out" "before.test"
sg_run s "$SG" audit --log-dir "$O" --since 2026-01-31T14:00:00+02:00 --json
assert_eq "audit --since reads the same times" 1 "$(printf '%s\n' "$s_out" | grep -c after.test)"
for bad in 2026-01-31T12:00:00+2:000 2026-01-31T12:00:00+-1:00 2026-02-30 2026-01-31T12:00:00.Z; do
	sg_run s "$SG" audit --log-dir "$O" --since "$bad"
	assert_eq "audit --since $bad: a usage error" 2 "$s_rc"
	sg_run s "$SG" policy suggest --log-dir "$O" --since "$bad"
	assert_eq "suggest --since $bad: a usage error" 2 "$s_rc"
done

# ----------------------------------------------------------------- floors

F="$SG_TMP/floors"
mkdir -p "$F"
cp "$SHIPPED/pypi.yaml" "$F/"
cat >"$F/floor.yaml" <<'YAML'
description: floors under every set
deny:
  - host: files.pythonhosted.org
    rationale: wheels come from the internal mirror only
grants:
  under: [corp.test]
YAML
sg_run f "$SG" policy check "$F"
assert_eq "check floors: exit 0" 0 "$f_rc"
assert_contains "check floors: counts deny entries" "$f_out" "2 entries, 1 deny entries, digest"
sg_run f "$SG" policy explain --policy-dir "$F" files.pythonhosted.org
assert_eq "explain denied: exit 1" 1 "$f_rc"
assert_contains "explain denied: reason" "$f_out" "BLOCK denied: network blocked by policy: destination files.pythonhosted.org:443 is denied"
assert_contains "explain denied: names the deny entry" "$f_out" \
	"  deny entry: \"files.pythonhosted.org\" in set floor ($F/floor.yaml:3): wheels come from the internal mirror only"
assert_contains "explain denied: no grant either" "$f_out" "  no grant may open it: files.pythonhosted.org:443 is denied by the deny entry"
sg_run f "$SG" policy explain --policy-dir "$F" mirror.corp.test
assert_contains "explain grantable" "$f_out" "  a grant may open it"
sg_run f "$SG" policy explain --policy-dir "$F" evil.test
assert_contains "explain outside grants.under: names the rule" "$f_out" \
	"  no grant may open it: evil.test is not under a domain grants may cover (rule: grants: under: corp.test ($F/floor.yaml:6))"
sg_run f "$SG" policy list --policy-dir "$F" --json
assert_eq "list --json: deny and grants_under" "files.pythonhosted.org all corp.test" \
	"$(printf '%s' "$f_out" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["deny"][0]["host"], d["deny"][0]["ports"], d["grants_under"][0]["domain"])')"
sg_run f "$SG" policy diff "$SHIPPED" "$F"
assert_contains "diff: a deny entry added" "$f_out" \
	"+ DENY floor files.pythonhosted.org:*  ($F/floor.yaml:3, deny) wheels come from the internal mirror only"
printf 'deny:\n  - host: a.test\n    tls: optional\n    rationale: r\n' >"$F/bad.yaml"
sg_run f "$SG" policy check "$F"
assert_eq "check a bad deny entry: exit 1" 1 "$f_rc"
assert_contains "check a bad deny entry: file:line:col" "$f_err" \
	"$F/bad.yaml:3:5: unknown key \"tls\" in a deny entry; known keys are host, ports, rationale"

sg_summary
