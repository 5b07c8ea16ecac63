#!/bin/bash
# test_workspace.sh: `sandgate diff`, `apply` and `export` on the real
# binary. The sandbox folder is laid out by this script in the documented
# format (meta.json, snapshot/, manifest.json, work/, lock), so no Docker
# is needed; `create` has its own tests.
set -u
BIN=${SANDGATE_BIN:?}/sandgate
T=$(mktemp -d /tmp/sg-ws-int-XXXXXX)
export SANDGATE_STATE=$T/state SANDGATE_LOG_DIR=$T/logs SANDGATE_RECORD_DIR=$T/records
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok: $1"; }
ko() { fail=$((fail + 1)); echo "FAIL: $1"; }
check() { if eval "$2"; then ok "$1"; else ko "$1"; fi; }
cleanup() { chmod -R u+w "$T"; rm -rf "$T"; }
trap cleanup EXIT

ID=sbx_0123456789abcdef01234567
SBX=$SANDGATE_STATE/sandboxes/$ID
SRC=$T/src
mkdir -p "$SRC/lib" "$SRC/.github/workflows" "$SANDGATE_LOG_DIR" "$SANDGATE_RECORD_DIR"
printf 'hello\n' > "$SRC/a.txt"
printf 'keep\n' > "$SRC/lib/keep.txt"
printf 'gone\n' > "$SRC/gone.txt"
printf 'host\n' > "$SRC/host.txt"
printf 'on: push\n' > "$SRC/.github/workflows/ci.yml"
printf 'x\000y' > "$SRC/blob.bin"
. "$(dirname "$0")/../lib/fixture.sh"
sg_fixture_sandbox "$ID" "$SRC"
printf '{"sandbox":"%s","run":"r1"}\n{"sandbox":"sbx_ffffffffffffffffffffffff","run":"r2"}\n' "$ID" > "$SANDGATE_RECORD_DIR/runs.jsonl"
printf '{"sandbox":"%s","event":"egress.blocked"}\n' "$ID" > "$SANDGATE_LOG_DIR/security-events.jsonl"
mkdir -p "$SBX/runs/run1"
printf 'out\n' > "$SBX/runs/run1/stdout"

# the agent's changes
W=$SBX/work
printf 'hello\nworld\n' > "$W/a.txt"
rm "$W/gone.txt"
printf 'new\n' > "$W/lib/new.txt"
printf 'agent\n' > "$W/host.txt"
printf 'on: [push]\n' > "$W/.github/workflows/ci.yml"
printf 'x\001y' > "$W/blob.bin"
ln -s /etc/passwd "$W/passwd"
mkdir -p "$W/node_modules" && printf 'x\n' > "$W/node_modules/m.js"
printf 'changed on host\n' > "$SRC/host.txt"

check "diff --help" '"$BIN" diff --help | grep -q "usage: sandgate diff"'
out=$("$BIN" diff --stat "$ID"); rc=$?
check "diff --stat exit 0" '[ $rc -eq 0 ]'
check "diff --stat lists changes" 'echo "$out" | grep -q "^M a.txt$" && echo "$out" | grep -q "^D gone.txt$" && echo "$out" | grep -q "^A lib/new.txt$"'
check "diff --stat flags risky" 'echo "$out" | grep -q "^M .github/workflows/ci.yml  \[risky"'
check "diff --stat leaves node_modules out" '! echo "$out" | grep -q node_modules'
out=$("$BIN" diff "$ID")
check "diff text has relative labels" 'echo "$out" | grep -q "^--- a/a.txt$" && echo "$out" | grep -q "^+++ b/a.txt$" && echo "$out" | grep -q "^+world$"'
check "diff shows binary sha256" 'echo "$out" | grep -q "^Binary file blob.bin changed: sha256 "'
check "diff shows the symlink" 'echo "$out" | grep -q "^Special file passwd .*symlink"'
"$BIN" diff --json "$ID" > "$T/d.json"
check "diff --json" 'python3 -c "
import json,sys
d=json.load(open(sys.argv[1]))
m={x[\"path\"]:x for x in d[\"modified\"]}
assert m[\".github/workflows/ci.yml\"][\"risky\"] is True
assert m[\"blob.bin\"][\"binary\"] is True and m[\"blob.bin\"][\"sha256_after\"]
assert \"+world\" in m[\"a.txt\"][\"diff\"]
assert [x[\"path\"] for x in d[\"deleted\"]]==[\"gone.txt\"]
assert \"lib/new.txt\" in [x[\"path\"] for x in d[\"added\"]]
" "$T/d.json"'

out=$("$BIN" apply --path ../x "$ID"); rc=$?
check "apply ../x refused 126" '[ $rc -eq 126 ] && echo "$out" | grep -q "^refused ../x"'
out=$("$BIN" apply --path /etc/passwd "$ID"); rc=$?
check "apply /etc/passwd refused 126" '[ $rc -eq 126 ]'
out=$("$BIN" apply --path passwd "$ID"); rc=$?
check "apply planted symlink refused" '[ $rc -eq 126 ] && [ ! -e "$SRC/passwd" ]'
out=$("$BIN" apply --path host.txt "$ID"); rc=$?
check "apply host-changed refused, host untouched" '[ $rc -eq 126 ] && [ "$(cat "$SRC/host.txt")" = "changed on host" ]'
out=$("$BIN" apply --dry-run --path a.txt "$ID"); rc=$?
check "apply --dry-run writes nothing" '[ $rc -eq 0 ] && [ "$(cat "$SRC/a.txt")" = hello ]'
out=$("$BIN" apply --all "$ID"); rc=$?
check "apply --all refuses risky and host-changed" '[ $rc -eq 126 ] && echo "$out" | grep -q "^refused .github/workflows/ci.yml (risky" && [ "$(cat "$SRC/.github/workflows/ci.yml")" = "on: push" ]'
check "apply --all applied the rest" 'echo "$out" | grep -q "^applied a.txt$" && echo "$out" | grep -q "^deleted gone.txt$" && [ "$(cat "$SRC/lib/new.txt")" = new ] && [ ! -e "$SRC/gone.txt" ]'
out=$("$BIN" apply --path a.txt "$ID"); rc=$?
check "second apply is unchanged" '[ $rc -eq 0 ] && echo "$out" | grep -q "^unchanged a.txt$"'
out=$("$BIN" apply --all --include-risky "$ID" 2>&1)
check "--include-risky applies risky" '[ "$(cat "$SRC/.github/workflows/ci.yml")" = "on: [push]" ]'

"$BIN" export --output "$T/e.zip" "$ID"; rc=$?
check "export exit 0" '[ $rc -eq 0 ]'
check "export content" 'python3 -c "
import zipfile,sys
z=zipfile.ZipFile(sys.argv[1]); n=set(z.namelist())
for f in [\"meta.json\",\"manifest.json\",\"diff.patch\",\"diff.json\",\"runs.jsonl\",\"security-events.jsonl\",\"runs/run1/stdout\",\"work/a.txt\",\"work/lib/new.txt\"]:
    assert f in n, f
assert \"work/passwd\" not in n
r=z.read(\"runs.jsonl\").decode()
assert \"r1\" in r and \"r2\" not in r
" "$T/e.zip"'
"$BIN" export "$ID" >/dev/null 2>&1; rc=$?
check "export without --output is a usage error" '[ $rc -eq 2 ]'
"$BIN" diff sbx_nope >/dev/null 2>&1; rc=$?
check "an id that names no sandbox exits 125" '[ $rc -eq 125 ]'

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
