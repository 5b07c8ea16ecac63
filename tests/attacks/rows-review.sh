# rows-review.sh: attack rows on the review and on what is brought out of
# a sandbox (sourced by tests/attacks/run; needs its helpers and $SG, $T,
# $HERE, RT). One sandbox, REV (--disk 1g, no network), gets a working
# copy made, stage by stage (inside/review.sh, inside/memfill.sh), to
# break `sandgate diff`, its output, `apply`, `export`, `run --output`
# and the host's disk and memory; after each stage the rows check from the
# host what the commands did with it. Each stage is removed again before
# the next, so that a row fails for its own reason.

# sgrev NAME ARGS...: sandgate ARGS with 1024 open files at most (or
# SGREV_NOFILE) and a
# private /tmp: a 1 MiB tmpfs whose mtime moves if anything is created or
# removed there ($T/NAME.tmp says 1; the suite's own folder $T, which
# holds the state root, is bound back into it), or with SGREV_TMP=disk an
# on-disk folder (so that a build that needs /tmp gets as far as its
# memory use). $T/NAME.out, .err, .rss (peak KiB), ${NAME}_rc.
sgrev() {
	local n=$1
	shift
	mkdir -p "$T/tmpdisk"
	unshare -m sh -c 'n=$1 sg=$2; shift 2
	    mount --rbind /tmp /mnt || exit 1
	    if [ "$SGREV_TMP" = disk ]; then
		mount --bind "/mnt/${0#/tmp/}/tmpdisk" /tmp || exit 1
	    else
		mount -t tmpfs -o size=1m sgtmp /tmp || exit 1
	    fi
	    mkdir -p "$0" && mount --rbind "/mnt/${0#/tmp/}" "$0" || exit 1
	    t0=$(stat -c %y /tmp); sleep 0.01; ulimit -n "$SGREV_NOFILE"
	    /usr/bin/time -f %M -o "$0/$n.rss" env PATH="$SGREV_PATH" "$sg" "$@"
	    rc=$?; [ "$(stat -c %y /tmp)" = "$t0" ]; echo $? >"$0/$n.tmp"
	    exit $rc' "$T" "$n" "$SG" "$@" >"$T/$n.out" 2>"$T/$n.err"
	printf -v "${n}_rc" '%s' "$?"
}
SGREV_PATH=$PATH
SGREV_TMP=tmpfs
SGREV_NOFILE=1024
export SGREV_PATH SGREV_TMP SGREV_NOFILE

# paused_start / paused_stop: sample the session container's Paused state
# every 50 ms; stop prints how many samples were paused.
paused_start() {
	( while :; do docker inspect -f '{{.State.Paused}}' "sandgate-$REV"
	    sleep 0.05; done ) >"$T/paused" 2>/dev/null &
	PAUSED_POLL=$!
}
paused_stop() {
	kill "$PAUSED_POLL" 2>/dev/null
	wait "$PAUSED_POLL" 2>/dev/null
	grep -c true "$T/paused"
}

revfile() {	# revfile PATH: REV's work file as the host sees it
	cat "$SANDGATE_STATE/sandboxes/$REV/work/$1" 2>/dev/null
}
tmpsays() {	# tmpsays NAME: what command NAME did to /tmp
	[ "$(cat "$T/$1.tmp" 2>/dev/null)" = 0 ] && echo untouched ||
	    echo WRITTEN
}
peak() { tail -1 "$T/$1.rss" 2>/dev/null | grep -E '^[0-9]+$' || echo 99999999; }

# R1: a writer left alive in the sandbox changes a file after the reviewer
# saw it. apply --review must refuse; the host must never hold content
# that was not shown. (4a8ec1a has no --review: a harness can only
# `apply --path`, which writes whatever is there.)
atk_review_writer() {
	local cid user digest shown host0 host1 i
	cid=sandgate-$REV
	x rw "$REV" --timeout 30 -- sh -c 'printf "print(\"hello v2\")\n" >/workspace/src/app.py'
	host0=$(cat "$T/project/src/app.py")
	"$SG" diff "$REV" >"$T/rw.diff" 2>"$T/rw.derr"
	digest=$(sed -n 's/^review \([0-9a-f]\{64\}\)$/\1/p' "$T/rw.diff")
	shown=$(grep -c '^+print("hello v2")$' "$T/rw.diff")
	# a writer left alive (started here from the host: whatever way a
	# process of the sandbox outlives its command, it ends the same)
	user=$(sbx_uid "$REV")
	user=$user:$user
	docker exec -d -u "$user" "$cid" sh /workspace/.attacks/writer.sh \
	    /workspace/src/app.py
	for i in $(seq 1 50); do
		revfile src/app.py | grep -q replaced && break
		sleep 0.1
	done
	if [ -n "$digest" ]; then
		"$SG" apply --review "$digest" --path src/app.py "$REV" \
		    >"$T/rw.apply" 2>&1
	else
		"$SG" apply --path src/app.py "$REV" >"$T/rw.apply" 2>&1
	fi
	rw_apply_rc=$?
	host1=$(cat "$T/project/src/app.py")
	docker exec "$cid" sh -c 'for p in /proc/[0-9]*; do
	    grep -q writer.sh "$p/cmdline" 2>/dev/null && kill "${p#/proc/}"; done' \
	    >/dev/null 2>&1
	verdict "R1 review: a writer left alive changes a file after diff" \
	    '[ "$rw_apply_rc" = 126 ] && [ "$host1" = "$host0" ] && [ "$shown" = 1 ]' \
	    "apply exit $rw_apply_rc: $(grep -m1 -e refused -e applied "$T/rw.apply")" \
	    "$(rec rw)" \
	    "diff showed print(\"hello v2\") with review ${digest:0:12}...; the writer then wrote $(revfile src/app.py | head -c 30); host src/app.py: $( [ "$host1" = "$host0" ] && echo unchanged || echo "CHANGED to $host1")"
	# the later rows apply --all: put the file back as it was
	printf '%s\n' "$host0" >"$T/project/src/app.py"
	"$SG" exec "$REV" -- sh -c "printf '%s\\n' '$host0' >/workspace/src/app.py" \
	    >/dev/null 2>&1
}

# R9 and R8: 40 text files of 17 MB: memory, no git, no silent cut.
atk_review_memory() {
	local t0 ms
	x mf "$REV" --timeout 120 -- sh /workspace/.attacks/memfill.sh
	SGREV_TMP=disk sgrev rvj diff --json "$REV"
	SGREV_TMP=disk sgrev rve export --output "$T/rev-mem.zip" "$REV"
	t0=$(date +%s%N)
	SGREV_TMP=disk SGREV_PATH=/nonexistent sgrev rvt diff "$REV"
	ms=$((($(date +%s%N) - t0) / 1000000))
	verdict "R9 host memory: diff --json and export of 40 x 17 MB, no git" \
	    '[ "$rvj_rc" = 0 ] && [ "$rve_rc" = 0 ] && [ "$rvt_rc" = 0 ] && [ "$(peak rvj)" -le 24576 ] && [ "$(peak rve)" -le 24576 ] && [ "$(peak rvt)" -le 24576 ]' \
	    "diff --json exit $rvj_rc, export exit $rve_rc, diff without git on PATH exit $rvt_rc" \
	    "$(rec mf)" \
	    "peak RSS: diff --json $(peak rvj) KiB, export $(peak rve) KiB, diff $(peak rvt) KiB (24 MiB asserted); diff $ms ms (not asserted)"
	SGREV_TMP=disk sgrev rvc diff "$REV"
	verdict "R8 review: a diff too large to show says so" \
	    '[ "$rvc_rc" = 0 ] && grep -q "^Text file mem/f1.txt added: too large to show" "$T/rvc.out" && grep -q "too large to show" "$T/rvc.err"' \
	    "$(grep -m1 -e 'mem/f1.txt' "$T/rvc.out" | cut -c1-100)" "$(rec mf)" \
	    "diff exit $rvc_rc, $(wc -c <"$T/rvc.out") bytes for 40 x 17 MB; 4a8ec1a cut each file's diff at 16 MiB with no marker and exit 0"
	"$SG" exec "$REV" -- rm -rf /workspace/mem >/dev/null 2>&1
	rm -f "$T/rev-mem.zip"
}

# R6, R7, R10: encodings, forged names and escapes, modes.
atk_review_names() {
	local esc
	esc=$(printf '\033')
	x rn "$REV" --timeout 60 -- sh /workspace/.attacks/review.sh names
	sgrev rns diff --stat "$REV"
	sgrev rnt diff "$REV"
	sgrev rnj diff --json "$REV"
	sgrev rne export --output "$T/rev-names.zip" "$REV"
	verdict "R6 review: Latin-1 content in diff, diff --json and export" \
	    '[ "$rnt_rc" = 0 ] && [ "$rnj_rc" = 0 ] && [ "$rne_rc" = 0 ] && grep -qF "+caf\\xe9 cr\\xe8me" "$T/rnt.out" && python3 -c "
import base64, json, sys, zipfile
d = json.load(open(\"$T/rnj.out\"))
a = {x[\"path\"]: x for x in d[\"added\"]}
assert b\"caf\\xe9\" in base64.b64decode(a[\"latin1.txt\"][\"diff_base64\"])
assert zipfile.ZipFile(\"$T/rev-names.zip\").read(\"work/latin1.txt\")[:4] == b\"caf\\xe9\""' \
	    "diff exit $rnt_rc, --json exit $rnj_rc, export exit $rne_rc: $(head -c 90 "$T/rnj.err")" \
	    "$(rec rn)" \
	    "\\xe9 in the text; the bytes in base64 (diff_base64) in --json; the file as it is in the zip"
	sgrev rna apply --path "$(printf 'x\n\033[2KD README.md  (deleted: harmless)')" \
	    --path esc.txt --path ww.txt --path wx.sh "$REV"
	verdict "R7 review: forged names and terminal escapes" \
	    '[ "$rns_rc" = 0 ] && [ "$rnt_rc" = 0 ] && ! grep -q "^D README.md" "$T/rns.out" "$T/rnt.out" "$T/rna.out" && ! grep -q "$esc" "$T/rns.out" "$T/rnt.out" "$T/rna.out" && grep -qF "+\\x1b[2K\\x1b[1A+print" "$T/rnt.out"' \
	    "$(grep -m1 -F 'README.md' "$T/rns.out" | cut -c1-80)" "$(rec rn)" \
	    "no line of diff --stat, diff or apply starts with D README.md or holds ESC; esc.txt's ESC shown as \\x1b; apply: $(grep -m1 README "$T/rna.out" | cut -c1-60)"
	verdict "R10 apply: world-writable modes" \
	    '[ "$(stat -c %a "$T/project/ww.txt" 2>/dev/null)" = 644 ] && [ "$(stat -c %a "$T/project/wx.sh" 2>/dev/null)" = 755 ]' \
	    "$(grep -e ww.txt -e wx.sh "$T/rna.out" | tr '\n' ';')" "$(rec rn)" \
	    "0666 and 0777 in the sandbox arrive as $(stat -c %a "$T/project/ww.txt" 2>/dev/null) and $(stat -c %a "$T/project/wx.sh" 2>/dev/null)"
	"$SG" exec "$REV" -- sh -c 'cd /workspace && rm -rf many latin1.txt esc.txt ww.txt wx.sh x*' >/dev/null 2>&1
	rm -f "$T/rev-names.zip"
}

# R7b: names that read like a host path (NFKC, case, slash look-alikes,
# another script's letter): flagged, quoted, left out of apply --all.
ra_lines() {
	grep -e '^A "src\\3' -e '^A SRC/app.py' -e '^A .GitHub/' \
	    -e '^A s.*tup.py' -e '^A "setup\\3' "$T/ras.out"
}
ra_ok() {
	[ "$ras_rc" = 0 ] && [ "$(ra_lines | wc -l)" = 10 ] &&
	    [ "$(ra_lines | grep -c risky)" = 10 ] &&
	    ! grep -e SRC/ -e GitHub -e 'app.py"' -e 'tup.py' -e 'setup\\3' \
	    "$T/raa.out" |
	    grep -vq '^refused'
}
atk_review_alike() {
	x ra "$REV" --timeout 60 -- sh /workspace/.attacks/review.sh alike
	sgrev ras diff --stat "$REV"
	sgrev raa apply --all --dry-run "$REV"
	verdict "R7b review: look-alike names (U+2215, U+FF0F, SRC/, .GitHub/, Cyrillic e; U+27CB, U+31D3, U+4E3F, U+0660, U+06F0)" \
	    ra_ok "$(ra_lines | grep -c risky) of $(ra_lines | wc -l) flagged; $(grep -m1 -F 'SRC/app.py' "$T/ras.out" | cut -c1-60)" \
	    "$(rec ra)" \
	    "apply --all --dry-run: $(grep -c '^refused' "$T/raa.out") refused; $(ra_lines | head -1 | cut -c1-70)"
	"$SG" exec "$REV" -- sh -c 'cd /workspace && rm -rf SRC .GitHub && find . -maxdepth 1 \( -name "src*app.py" -o -name "s*tup.py" -o -name "setup*py" \) -delete' \
	    >/dev/null 2>&1
}

# R3 and R2: sparse files read (diff) and brought out (apply, run
# --output); the container frozen meanwhile.
atk_review_sparse() {
	local out=$T/run-out du_half pd pa
	x rs "$REV" --timeout 60 -- sh /workspace/.attacks/review.sh sparse
	paused_start
	sgrev rsd diff --stat "$REV"
	pd=$(paused_stop)
	paused_start
	sgrev rsh apply --path half.txt "$REV"
	pa=$(paused_stop)
	# SIGINT while frozen: the diff stops, thaws, exits 130
	local ipid irc i ipaused=0
	"$SG" diff --stat "$REV" >/dev/null 2>&1 &
	ipid=$!
	for i in $(seq 1 100); do
		[ "$(docker inspect -f '{{.State.Paused}}' "sandgate-$REV")" = true ] &&
		    { ipaused=1; break; }
		sleep 0.02
	done
	kill -INT "$ipid" 2>/dev/null
	wait "$ipid"
	irc=$?
	sgrev rso apply --path over.bin "$REV"
	sgrev rst diff "$REV"
	du_half=$(du -k "$T/project/half.txt" 2>/dev/null | cut -f1)
	"$SG" run --disk 16m --network none --output "$out" "${RT[@]}" -- \
	    sh -c 'truncate -s 1G /output/x.bin; echo small >/output/y.txt' \
	    >"$T/rsr.out" 2>"$T/rsr.err"
	verdict "R3 sparse files: diff, apply and run --output never expand them" \
	    '[ "$rsd_rc" = 0 ] && [ "$rst_rc" = 0 ] && [ "$(tmpsays rst)" = untouched ] && [ "$rsh_rc" = 0 ] && [ "${du_half:-999999}" -lt 4096 ] && [ "$rso_rc" = 126 ] && [ ! -e "$T/project/over.bin" ] && [ ! -e "$out/x.bin" ] && [ "$(cat "$out/y.txt" 2>/dev/null)" = small ]' \
	    "$(grep -m1 over.bin "$T/rso.out" | cut -c1-70); $(grep -m1 -o 'not copying.*' "$T/rsr.err" | cut -c1-40)" \
	    "$(rec rs)" \
	    "diff exit $rst_rc, /tmp $(tmpsays rst); half.txt (900 MiB apparent) on the host: ${du_half:-?} KiB allocated; over.bin (3 GiB, --disk 1g): $( [ -e "$T/project/over.bin" ] && echo "ON THE HOST ($(du -k "$T/project/over.bin" | cut -f1) KiB)" || echo refused); run --disk 16m's 1 GiB /output/x.bin: $( [ -e "$out/x.bin" ] && echo "COPIED ($(du -k "$out/x.bin" | cut -f1) KiB)" || echo "not copied")"
	verdict "R2 review: the container is frozen while diff reads and apply copies" \
	    '[ "$pd" -gt 0 ] && [ "$pa" -gt 0 ] && [ "$ipaused" = 1 ] && [ "$irc" = 130 ] && [ "$(docker inspect -f "{{.State.Paused}}" "sandgate-$REV")" = false ]' \
	    "samples paused: $pd during diff --stat (exit $rsd_rc), $pa during apply of half.txt (exit $rsh_rc); SIGINT to a frozen diff: exit $irc" \
	    "$(rec rs)" \
	    "docker inspect .State.Paused every 50 ms; after all three (the last interrupted while paused: $( [ "$ipaused" = 1 ] && echo yes || echo "never seen paused")): $(docker inspect -f '{{.State.Paused}}' "sandgate-$REV")"
	"$SG" exec "$REV" -- rm -f /workspace/half.txt /workspace/over.bin >/dev/null 2>&1
	rm -rf "$out" "$T/project/half.txt" "$T/project/over.bin"
}

# R4 and R5: depth past the descriptor limit, a path past PATH_MAX.
atk_review_depth() {
	local deep long
	deep=$(printf 'd/%.0s' $(seq 1100))deep.txt
	x rd "$REV" --timeout 60 -- sh /workspace/.attacks/review.sh deep
	# as many descriptors as it likes: the depth alone
	SGREV_NOFILE=65536 sgrev rde export --output "$T/rev-deep.zip" "$REV"
	verdict "R4 export: a tree 1,100 folders deep" \
	    '[ "$rde_rc" = 0 ] && python3 -c "import sys, zipfile; sys.exit(\"work/$deep\" not in zipfile.ZipFile(\"$T/rev-deep.zip\").namelist())"' \
	    "export exit $rde_rc$( [ "$rde_rc" -gt 128 ] && echo " (signal $((rde_rc - 128)))")" \
	    "$(rec rd)" \
	    "zip $(du -k "$T/rev-deep.zip" 2>/dev/null | cut -f1) KiB with work/d/.../deep.txt, peak RSS $(peak rde) KiB, /tmp $(tmpsays rde)"
	x rl "$REV" --timeout 60 -- sh /workspace/.attacks/review.sh long
	long=$(j rl 'o["stdout"]' | sed -n 's/^a \([0-9]*\)-byte path$/\1/p')
	sgrev rls diff --stat "$REV"
	sgrev rlj diff --json "$REV"
	sgrev rla apply --all "$REV"
	sgrev rle export --output "$T/rev-deep.zip" "$REV"
	verdict "R5 review: depth past the fd limit, a ${long:-?}-byte path" \
	    '[ "$rls_rc" = 0 ] && [ "$rlj_rc" = 0 ] && [ "$rle_rc" = 0 ] && grep -qx "A $deep" "$T/rls.out" && grep -q "^A p000.\{4400\}" "$T/rls.out" && grep -q "^applied $deep$" "$T/rla.out" && grep -q "^applied p000.\{4400\}" "$T/rla.out" && python3 -c "
import json
a = {x[\"path\"] for x in json.load(open(\"$T/rlj.out\"))[\"added\"]}
assert \"$deep\" in a and any(len(p) > 4096 for p in a)"' \
	    "diff --stat exit $rls_rc, --json exit $rlj_rc, apply --all exit $rla_rc, export exit $rle_rc: $(head -c 80 "$T/rls.err")" \
	    "$(rec rl)" \
	    "ulimit -n 1024; both files listed by diff --stat and --json, applied by apply --all, in the zip"
	"$SG" exec "$REV" -- sh -c 'rm -rf /workspace/d /workspace/p000*' >/dev/null 2>&1
	# apply --all brought both into the project, which R11 copies again
	# (create refuses paths past 4 KiB): take them out
	rm -rf "$T/rev-deep.zip" "$T/project/d" "$T/project/p000"*
}

# R11: the evidence folder (every exec's full output) of one sandbox
# stays within its --disk, however many commands print.
atk_review_evidence() {
	local evd i used
	if ! create evd "$T/project" --disk 16m --network none; then
		row "R11 evidence" NO "$(head -c 100 "$T/create.err")" "create failed" ""
		return
	fi
	for i in 1 2 3; do
		"$SG" exec "$evd" --timeout 60 -- head -c 12000000 /dev/zero \
		    >/dev/null 2>&1
	done
	x ev "$evd" --timeout 60 -- head -c 12000000 /dev/zero
	used=$(du -sk "$SANDGATE_STATE/sandboxes/$evd/runs" | cut -f1)
	verdict "R11 evidence: 4 x 12 MB of output, --disk 16m" \
	    '[ "$used" -le 16384 ] && [ "$(j ev "o[\"exit_code\"]")" = 0 ]' \
	    "exit $(j ev 'o["exit_code"]')" "$(rec ev)" \
	    "runs/ holds $used KiB on the host (the sandbox's --disk: 16384 KiB)"
	"$SG" discard "$evd" >/dev/null 2>&1
	# the same at once: 8 execs printing 20 MB each, together
	if ! create evd "$T/project" --disk 16m --network none; then
		row "R11b evidence" NO "$(head -c 100 "$T/create.err")" "create failed" ""
		return
	fi
	for i in 1 2 3 4 5 6 7 8; do
		"$SG" exec "$evd" --timeout 60 -- sh -c 'sleep 2; head -c \
		    20000000 /dev/zero' >/dev/null 2>"$T/ev$i.err" &
	done
	wait
	used=$(du -sk "$SANDGATE_STATE/sandboxes/$evd/runs" | cut -f1)
	verdict "R11b evidence: 8 concurrent execs of 20 MB, --disk 16m" \
	    '[ "$used" -le 17408 ] && ! grep -q "whole output is in" "$T"/ev?.err' \
	    "8 execs" "" \
	    "runs/ holds $used KiB on the host (the sandbox's --disk: 16384 KiB, 64 KiB per stream written at once)"
	"$SG" discard "$evd" >/dev/null 2>&1
}

atk_review() {
	if ! create REV "$T/project" --disk 1g --network none; then
		row "R1-R10 review and bring-out" NO "$(head -c 100 "$T/create.err")" "create failed" ""
		return
	fi
	atk_review_writer
	atk_review_memory
	atk_review_names
	atk_review_alike
	atk_review_depth
	atk_review_sparse
	atk_review_evidence
	# the project is shared with the other sandboxes' rows: put it back
	rm -rf "$T/project/ww.txt" "$T/project/wx.sh" "$T/project/esc.txt" \
	    "$T/project/x"*
	"$SG" discard "$REV" >/dev/null 2>&1
}

# R12: an exec started while a diff holds the container frozen waits for
# the thaw and runs. The diff's freeze is made by hand (its lock held, the
# container paused), so that the exec surely starts inside it; Docker
# 20.10 answers the exec's unpause of the thawed container with a 500.
atk_freezewait() {
	local cid lock fd pid rc paused FW
	# a sandbox of its own: the rows before may have discarded theirs
	create FW "$T/project" --network none || return
	"$SG" exec "$FW" -- true >/dev/null 2>&1
	cid=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["container"])' \
	    "$SANDGATE_STATE/sandboxes/$FW/meta.json")
	lock=$SANDGATE_STATE/freeze/$cid
	mkdir -p "$SANDGATE_STATE/freeze"
	exec {fd}>>"$lock"
	flock "$fd"
	docker pause "$cid" >/dev/null
	"$SG" exec "$FW" -- echo exec-after-thaw >"$T/fw.out" 2>"$T/fw.err" &
	pid=$!
	sleep 2
	paused=$(docker inspect -f '{{.State.Paused}}' "$cid")
	docker unpause "$cid" >/dev/null
	flock -u "$fd"
	exec {fd}>&-
	wait "$pid"
	rc=$?
	verdict "R12 review: an exec during a diff's freeze runs after the thaw" \
	    '[ "$rc" = 0 ] && [ "$(cat "$T/fw.out")" = exec-after-thaw ] && [ "$paused" = true ]' \
	    "exit $rc; $(head -c 150 "$T/fw.err")" "" \
	    "container paused while the exec waited: $paused; output: $(head -c 40 "$T/fw.out")"
	"$SG" discard "$FW" >/dev/null 2>&1
}
