#!/bin/bash
# test_review.sh: what a sandbox can put in its working copy to break the
# review or the host, against `sandgate diff`, `diff --json`, `apply` and
# `export` on the real binary: a 2 GiB sparse file (and one larger than
# the sandbox's --disk), a folder tree 1,100 deep run with 256 open files
# at most, a 4 KiB path, a Latin-1 file, names with a newline and
# terminal escapes, escapes in file content, a text file over the diff
# limit, world-writable modes, and a file changed after it was reviewed.
# Every command must give a bounded, correct result, write nothing to
# /tmp (each runs with a 1 MiB tmpfs there) and stay within a few MiB of
# memory (peak RSS, printed). The sandbox folder is laid out by this
# script in the documented format, so no Docker is needed; tests/attacks
# has the same attacks made from inside real sandboxes.
set -u
BIN=${SANDGATE_BIN:?}/sandgate
T=$(mktemp -d /var/tmp/sg-review-XXXXXX)
export SANDGATE_STATE=$T/state SANDGATE_LOG_DIR=$T/logs
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok: $1"; }
ko() { fail=$((fail + 1)); echo "FAIL: $1"; }
check() { if eval "$2"; then ok "$1"; else ko "$1"; return 1; fi; }
cleanup() { [ -n "${KEEP:-}" ] && return; chmod -R u+w "$T" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
if [ "$(id -u)" != 0 ]; then
	echo "skip: needs root (a private /tmp per command)"
	exit 77
fi

. "$(dirname "$0")/../lib/fixture.sh"
mksbx() { sg_fixture_sandbox "$1" "$2" $((2 << 30)); }

ID=sbx_0123456789abcdef0123abcd
SBX=$SANDGATE_STATE/sandboxes/$ID
SRC=$T/src
W=$SBX/work
mkdir -p "$SRC/src" "$SANDGATE_LOG_DIR"
printf 'print("hello")\n' >"$SRC/src/app.py"
printf 'keep\n' >"$SRC/README.md"
mksbx "$ID" "$SRC"

# --- what the sandbox wrote --------------------------------------------------
printf 'print("hello v2")\n' >"$W/src/app.py"
# 9 KiB of text, then a hole to 2 GiB; and one past --disk
python3 - "$W" <<'PY'
import os, sys
w = sys.argv[1]
with open(w + "/sparse.txt", "wb") as f:
    f.write(b"line of text\n" * 700)
    f.truncate(2 << 30)
with open(w + "/huge.bin", "wb") as f:
    f.truncate(3 << 30)
# Latin-1 content
open(w + "/latin1.txt", "wb").write(b"caf\xe9 cr\xe8me br\xfbl\xe9e\n")
# a name with a newline and escapes, forging a listing line
open(w + "/x\n\x1b[2KD README.md  (deleted: harmless)", "w").write("forged\n")
# escapes in content
open(w + "/esc.txt", "wb").write(b"ok\n\x1b[2K\x1b[1Aprint('fake')\n")
# a text file over the diff limit
with open(w + "/big.txt", "w") as f:
    for i in range(100000):
        f.write("row %d of a large text file\n" % i)
# time: 3,000 small files
os.mkdir(w + "/many")
for i in range(3000):
    open(w + "/many/%04d.txt" % i, "w").write("file %d\n" % i)
for name, mode in (("ww.txt", 0o666), ("wx.sh", 0o777)):
    open(w + "/" + name, "w").write(name + "\n")
    os.chmod(w + "/" + name, mode)
PY
# the deep tree and the long path come later, so that what they break
# does not hide what the rest breaks
mkdeep() {
	python3 - "$W" <<-'PY'
	import os, sys
	w = sys.argv[1]
	os.chdir(w)
	for i in range(1100):	# 1,100 folders deep, a file at the bottom
	    os.mkdir("d")
	    os.chdir("d")
	open("deep.txt", "w").write("at the bottom\n")
	os.chdir(w)
	parts = ["p%03d" % i + "x" * 196 for i in range(22)]
	for c in parts:		# 4.4 KiB: one level at a time, past PATH_MAX
	    os.mkdir(c)
	    os.chdir(c)
	open("long.txt", "w").write("long path\n")
	os.chdir(w)
	open(w + "/longpath.name", "w").write("/".join(parts) + "/long.txt")
	PY
	LONG=$(cat "$W/longpath.name")
}
DEEP=$(printf "d/%.0s" $(seq 1100))deep.txt

# run CMD... with a private, empty /tmp (its mtime moves when anything is
# created or removed there: "1" goes to $T/tmpuse) and 256 files open at
# most; stdout to $T/out, stderr to $T/err, peak RSS (KiB) appended to
# $T/rss; exit code as rc.
TMPLOG=$T/tmpuse
export SGPATH=$PATH
sg() {
	unshare -m sh -c 'mount -t tmpfs -o size=1m sgtmp /tmp &&
	    t0=$(stat -c %y /tmp) && sleep 0.01 && ulimit -n 256 &&
	    /usr/bin/time -f %M -a -o "$0/rss" env PATH="$SGPATH" "$@"; rc=$?;
	    [ "$(stat -c %y /tmp)" = "$t0" ]; echo $? >>"$0/tmpuse";
	    exit $rc' "$T" "$BIN" "$@" >"$T/out" 2>"$T/err"
}
: >"$TMPLOG"
rss() { tail -1 "$T/rss"; }
# the memory bound, but for a sanitizer build (its shadow and quarantine)
RSSMAX=24576
if ldd "$BIN" 2>/dev/null | grep -q libasan; then
	RSSMAX=99999999
	echo "note: a sanitizer build: peak RSS is printed, not asserted"
fi

# --- diff ----------------------------------------------------------------------
sg diff --stat "$ID"; rc=$?
check "diff --stat exit 0 (rss $(rss) KiB)" '[ $rc -eq 0 ]'
check "diff --stat quotes the forged name" 'grep -qF "A \"x\\n\\033[2KD README.md  (deleted: harmless)\"" "$T/out" && ! grep -q "^D README.md" "$T/out"'
check "diff --stat: a file past --disk is never applied" 'grep -q "^A huge.bin  (file larger than the sandbox.s --disk, never applied)" "$T/out"'

sg diff "$ID"; rc=$?
check "diff exit 0 (rss $(rss) KiB)" '[ $rc -eq 0 ]'
check "diff: Latin-1 byte shown escaped" 'grep -qF "+caf\\xe9 cr\\xe8me" "$T/out"'
check "diff: terminal escapes in content escaped" 'grep -qF "+\\x1b[2K\\x1b[1Aprint" "$T/out" && ! grep -q "$(printf "\033")" "$T/out"'
check "diff: no raw control byte reaches the terminal" '! LC_ALL=C grep -q "[[:cntrl:]]" <(tr -d "\n\t" <"$T/out")'
check "diff: sparse text file summarised with its size" 'grep -q "^Text file sparse.txt added: too large to show (0 bytes before, 2147483648 after" "$T/out"'
check "diff: big text file summarised, and the reviewer told" 'grep -q "^Text file big.txt added: too large to show" "$T/out" && grep -q "text files are too large to show" "$T/err"'
check "diff: escapes noted on stderr" 'grep -q "shown as \\\\xHH" "$T/err"'
check "diff: forged name quoted in the header" 'grep -qF "diff --git \"a/x\\n\\033[2KD README.md  (deleted: harmless)\"" "$T/out"'
check "diff: world-writable mode shown" 'grep -q "^new file mode 100666$" "$T/out"'
check "diff: ends with the review digest" '[ "$(tail -1 "$T/out" | grep -cE "^review [0-9a-f]{64}$")" = 1 ]'
REVIEW=$(tail -1 "$T/out" | cut -d" " -f2)
sg diff --raw "$ID"
check "diff --raw shows content as it is" 'grep -qF "$(printf "+\033[2K\033[1Aprint")" "$T/out"'

t0=$(date +%s%N)
SGPATH=/nonexistent sg diff "$ID"; rc=$?
check "diff of 3,000+ files runs no git ($(( ($(date +%s%N) - t0) / 1000000 )) ms, not asserted)" '[ $rc -eq 0 ] && [ "$(grep -c "^+++ b/many/" "$T/out")" = 3000 ]'
sg diff --json "$ID"; rc=$?
check "diff --json exit 0 (rss $(rss) KiB)" '[ $rc -eq 0 ]'
cp "$T/out" "$T/d.json"
check "diff --json: encodings, sizes, review" 'python3 - "$T/d.json" "$REVIEW" <<-"PY"
	import base64, json, sys
	d = json.load(open(sys.argv[1]))
	assert d["review"] == sys.argv[2], d["review"]
	a = {x["path"]: x for x in d["added"]}
	lat = a["latin1.txt"]
	assert lat["diff"] is None
	assert b"+caf\xe9 cr\xe8me" in base64.b64decode(lat["diff_base64"])
	assert "x\n\x1b[2KD README.md  (deleted: harmless)" in a
	assert a["sparse.txt"]["too_large"] is True and a["sparse.txt"]["size_after"] == 2 << 30
	assert a["big.txt"]["too_large"] is True and a["big.txt"]["diff"] is None
	assert a["huge.bin"]["special"] is True
	assert a["ww.txt"]["mode_after"] == "0666"
	assert "\x1b[2K" in a["esc.txt"]["diff"]
	assert d["modified"][0]["path"] == "src/app.py"
	PY'

# --- depth and length ----------------------------------------------------------
mkdeep
sg diff --stat "$ID"; rc=$?
check "diff --stat of a tree 1,100 deep and a 4 KiB path, 256 files open at most" '[ $rc -eq 0 ]' || cat "$T/err"
check "diff --stat lists the file 1,100 folders deep" 'grep -qx "A $DEEP" "$T/out"'
check "diff --stat lists the 4 KiB path" 'grep -qxF "A $LONG" "$T/out"'
sg diff "$ID"; rc=$?
check "diff: the 4 KiB path and the deep file have their text" '[ $rc -eq 0 ] && grep -qF "+++ b/$LONG" "$T/out" && grep -q "^+at the bottom$" "$T/out"'
REVIEW=$(tail -1 "$T/out" | cut -d" " -f2)
sg diff --json "$ID"; rc=$?
check "diff --json: the 4 KiB path and the deep file" '[ $rc -eq 0 ] && python3 - "$T/out" "$LONG" "$DEEP" <<-"PY"
	import json, sys
	a = {x["path"]: x for x in json.load(open(sys.argv[1]))["added"]}
	assert sys.argv[2] in a and sys.argv[3] in a
	PY'

# --- export --------------------------------------------------------------------
sg export --output "$T/e.zip" "$ID"; rc=$?
check "export exit 0 (rss $(rss) KiB)" '[ $rc -eq 0 ]' || cat "$T/err"
check "export content" 'python3 - "$T/e.zip" "$LONG" <<-"PY"
	import json, sys, zipfile
	z = zipfile.ZipFile(sys.argv[1])
	n = set(z.namelist())
	assert "work/" + "d/" * 1100 + "deep.txt" in n
	assert "work/" + sys.argv[2] in n
	assert z.read("work/latin1.txt") == b"caf\xe9 cr\xe8me br\xfbl\xe9e\n"
	assert z.getinfo("work/sparse.txt").file_size == 2 << 30
	assert z.getinfo("work/sparse.txt").compress_size < 8 << 20
	assert "work/huge.bin" not in n and "huge.bin" in z.read("skipped.txt").decode()
	d = json.loads(z.read("diff.json"))
	assert "latin1.txt" in [x["path"] for x in d["added"]]
	assert b"+caf\\xe9" in z.read("diff.patch")
	PY'

# --- apply ---------------------------------------------------------------------
sg apply --path sparse.txt --path ww.txt --path wx.sh --path latin1.txt \
    --path "$LONG" --path "$DEEP" --path huge.bin "$ID"; rc=$?
check "apply --path (rss $(rss) KiB): a file larger than --disk refused" '[ $rc -eq 126 ] && grep -q "^refused huge.bin (it is larger than the sandbox.s --disk" "$T/out" && [ ! -e "$SRC/huge.bin" ]'
check "apply: the 2 GiB sparse file stays sparse" '[ "$(stat -c %s "$SRC/sparse.txt")" = 2147483648 ] && [ "$(du -k "$SRC/sparse.txt" | cut -f1)" -lt 1024 ] && cmp -s "$W/sparse.txt" "$SRC/sparse.txt"'
check "apply: no group/world-writable files" '[ "$(stat -c %a "$SRC/ww.txt")" = 644 ] && [ "$(stat -c %a "$SRC/wx.sh")" = 755 ] && [ -z "$(find "$SRC" -perm /022 -type f)" ]'
# cat for paths longer than PATH_MAX: one folder at a time
catlong() { python3 -c 'import os, sys
os.chdir(sys.argv[1])
*d, f = sys.argv[2].split("/")
for c in d: os.chdir(c)
sys.stdout.write(open(f).read())' "$1" "$2"; }
check "apply: the 4 KiB path and the deep file" '[ "$(catlong "$SRC" "$LONG")" = "long path" ] && [ "$(catlong "$SRC" "$DEEP")" = "at the bottom" ]'
check "apply: the Latin-1 file byte for byte" 'cmp -s "$W/latin1.txt" "$SRC/latin1.txt"'

# changed after the review: nothing is applied
printf 'print("not what was reviewed")\n' >"$W/src/app.py"
sg apply --review "$REVIEW" --path src/app.py --path esc.txt "$ID"; rc=$?
check "apply --review refuses a file changed after the review (126)" '[ $rc -eq 126 ] && grep -q "^refused src/app.py (changed since the review)" "$T/out" && grep -q "nothing applied" "$T/err"'
check "apply --review: host untouched" '[ "$(cat "$SRC/src/app.py")" = "print(\"hello\")" ] && [ ! -e "$SRC/esc.txt" ]'
printf 'print("hello v2")\n' >"$W/src/app.py"
sg apply --review "$(printf 0%.0s $(seq 64))" --all "$ID"; rc=$?
check "apply --review of an unknown digest refused (126)" '[ $rc -eq 126 ] && grep -q "no review" "$T/err"'
sg apply --review "$REVIEW" --all "$ID"; rc=$?
check "apply --review --all (rss $(rss) KiB): the reviewed files, and the ones applied before are unchanged" '[ $rc -eq 126 ] && grep -q "^applied src/app.py$" "$T/out" && grep -q "^unchanged sparse.txt$" "$T/out" && [ "$(cat "$SRC/src/app.py")" = "print(\"hello v2\")" ] && cmp -s "$W/esc.txt" "$SRC/esc.txt"'
check "apply: the forged name is one quoted line" 'grep -qxF "applied \"x\\n\\033[2KD README.md  (deleted: harmless)\"" "$T/out" && ! grep -q "^D README.md" "$T/out"'
check "apply: the odd name arrives byte for byte" '[ "$(cat "$SRC/$(printf "x\n\033[2KD README.md  (deleted: harmless)")")" = forged ]'
sg apply --review "$REVIEW" --all "$ID"; rc=$?
check "apply again: unchanged" 'grep -q "^unchanged src/app.py$" "$T/out"'
sg diff --stat "$ID"
check "after apply the applied paths read as unchanged" '! grep -q "src/app.py\|latin1.txt" "$T/out"'

# --- memory ------------------------------------------------------------------------
# 8 text files of 17 MB changed: the diff must not hold them (or their
# text) in memory. /tmp is an on-disk folder here, so that a diff that
# needs /tmp gets as far as its memory use.
ID2=sbx_0123456789abcdef0123abce
W2=$SANDGATE_STATE/sandboxes/$ID2/work
mkdir -p "$T/src2" "$T/tmp2"
for i in 0 1 2 3 4 5 6 7; do
	yes "row $i of a text file that is too large to review in a terminal" |
	    head -c 17000000 >"$T/src2/f$i.txt"
done
mksbx "$ID2" "$T/src2"
for i in 0 1 2 3 4 5 6 7; do sed -i 's/^row/ROW/' "$W2/f$i.txt"; done
sgmem() {
	unshare -m sh -c 'mount --bind "$0/tmp2" /tmp &&
	    /usr/bin/time -f %M -a -o "$0/rss" "$@"' "$T" "$BIN" "$@" \
	    >"$T/out" 2>"$T/err"
}
sgmem diff --json "$ID2"; rc=$?
check "diff --json of 8 x 17 MB changed text files: peak RSS $(rss) KiB (24 MiB at most)" '[ $rc -eq 0 ] && [ "$(rss)" -le $RSSMAX ]'
sgmem export --output "$T/e2.zip" "$ID2"; rc=$?
check "export of the same: peak RSS $(rss) KiB (24 MiB at most)" '[ $rc -eq 0 ] && [ "$(rss)" -le $RSSMAX ]'

# --- bounds ----------------------------------------------------------------------
check "nothing written to /tmp by any of $(wc -l <"$TMPLOG") commands" '! grep -q 1 "$TMPLOG"'
maxrss=$(grep -E '^[0-9]+$' "$T/rss" | sort -n | tail -1)
check "peak RSS of every command at most 24 MiB (max $maxrss KiB)" '[ "$maxrss" -le $RSSMAX ]'

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
