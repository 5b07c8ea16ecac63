#!/usr/bin/env bash
# test_runsc_coreutils.sh: coreutils' ls and stat work in a gVisor sandbox.
# Debian 12's gVisor refuses statx's AT_NO_AUTOMOUNT (EINVAL), which
# coreutils 9 passes to every statx: without sandgate-statx.so (bound at
# /.sandgate/statx.so and named in a read-only /etc/ld.so.preload, gVisor
# sandboxes only) `ls -l` said "Invalid argument" for every file. Errors
# other than that one stay the kernel's; the preload holds under `env -i`;
# the sandbox user cannot change it; a library the sandbox cannot read is
# not mounted (ld.so would complain in every command); the host's preload
# file is this uid's, 0644, or replaced (a FIFO, another's file); runc
# sandboxes get neither file.
# Where runsc is not registered with dockerd the test skips (77).
set -u
SRC=${SANDGATE_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRC/tests/lib/common.sh"

sg_require_runsc
sg_setup
export SANDGATE_DATA_DIR=$SRC
sg_base_image
mkdir -p "$SG_TMP/src"
printf 'hello\n' >"$SG_TMP/src/a.txt"

# a FIFO where the preload file goes: replaced, never waited on (atk43g
# F2: the create hung in open)
mkdir -p "$SANDGATE_STATE/probe"
mkfifo "$SANDGATE_STATE/probe/ld.so.preload"
sg_run c timeout 120 "$SG" create "$SG_TMP/src" --runtime runsc --network none
assert_eq "gVisor sandbox created" 0 "$c_rc"
[ "$c_rc" = 0 ] || { echo "$c_err"; sg_summary; }
SBX=$c_out
sg_on_exit "'$SG' discard $SBX"

sg_run l "$SG" exec "$SBX" -- ls -l /workspace/a.txt
assert_eq "ls -l of a workspace file exits 0" 0 "$l_rc"
assert_contains "ls -l names the file" "$l_out" "/workspace/a.txt"
assert_eq "ls -l says nothing on stderr" "" "$l_err"
sg_run s "$SG" exec "$SBX" -- stat -c %s /workspace/a.txt
assert_eq "stat reads the size" "0 6" "$s_rc $s_out"
sg_run d "$SG" exec "$SBX" -- sh -c 'ls -ld /usr/bin /etc / && ls /usr/bin | wc -l'
assert_eq "ls -ld of image folders exits 0" 0 "$d_rc"
assert_eq "ls -ld says nothing on stderr" "" "$d_err"
n=$(tail -n1 <<<"$d_out")
[ "${n:-0}" -gt 100 ] && ok "ls lists /usr/bin ($n names)" || fail "ls lists /usr/bin" "got '$n'"
sg_run e "$SG" exec "$SBX" -- ls -l /workspace/nothing-here
assert_eq "a missing file is still exit 2" 2 "$e_rc"
assert_contains "and still ENOENT" "$e_err" "No such file or directory"
sg_run i "$SG" exec "$SBX" -- env -i /usr/bin/ls -ld /workspace
assert_eq "under env -i too" "0" "$i_rc"
assert_eq "under env -i nothing on stderr" "" "$i_err"
sg_run w "$SG" exec "$SBX" -- sh -c 'cat /etc/ld.so.preload;
	echo /workspace/x.so >/etc/ld.so.preload 2>/dev/null && echo WROTE;
	cp /workspace/a.txt /.sandgate/statx.so 2>/dev/null && echo REPLACED;
	umount /etc/ld.so.preload 2>/dev/null && echo UNMOUNTED; true'
assert_eq "the preload names the library, and the sandbox cannot change either" \
    "/.sandgate/statx.so" "$w_out"

# a preload file of the right content that another uid owns, or others
# may write, is replaced before it is bound (atk43g F1: it was bound as
# it was, and its owner changed what every gVisor sandbox loads)
P=$SANDGATE_STATE/probe/ld.so.preload
assert_eq "the FIFO was replaced by a regular file, 0644" "regular file 644" \
    "$(stat -c '%F %a' "$P")"
chown 12345 "$P"
chmod 0666 "$P"
sg_run f timeout 120 "$SG" create "$SG_TMP/src" --runtime runsc --network none
assert_eq "gVisor sandbox created beside a foreign preload file" 0 "$f_rc"
[ "$f_rc" = 0 ] && sg_on_exit "'$SG' discard $f_out"
assert_eq "the foreign file was replaced: this uid's, 0644" "$(id -u) 644" \
    "$(stat -c '%u %a' "$P")"

# a library the sandbox's uid may not read is not mounted: ld.so would
# otherwise complain on every command's stderr
mkdir -p "$SG_TMP/probe"
cp "$SANDGATE_PROBE" "$(dirname "$SANDGATE_PROBE")/sandgate-statx.so" "$SG_TMP/probe/"
chmod 0700 "$SG_TMP/probe/sandgate-statx.so"
sg_run u env SANDGATE_PROBE="$SG_TMP/probe/sandgate-probe" \
    "$SG" create "$SG_TMP/src" --runtime runsc --network none
assert_eq "gVisor sandbox with an unreadable library created" 0 "$u_rc"
if [ "$u_rc" = 0 ]; then
	sg_on_exit "'$SG' discard $u_out"
	sg_run v env SANDGATE_PROBE="$SG_TMP/probe/sandgate-probe" \
	    "$SG" exec "$u_out" -- sh -c 'for f in /.sandgate/*; do echo "${f##*/}"; done
	    test -e /etc/ld.so.preload && echo PRELOAD; echo end'
	assert_eq "unreadable library: neither file mounted" "$(printf 'probe\nend')" "$v_out"
	assert_eq "and ld.so says nothing" "" "$v_err"
fi

sg_run r "$SG" create "$SG_TMP/src" --network none
assert_eq "runc sandbox created" 0 "$r_rc"
[ "$r_rc" = 0 ] && sg_on_exit "'$SG' discard $r_out"
sg_run n "$SG" exec "$r_out" -- sh -c 'ls -A /.sandgate; test -e /etc/ld.so.preload && echo PRELOAD; ls -ld / >/dev/null && echo ls-ok'
assert_eq "runc: no library, no preload" "$(printf 'probe\nls-ok')" "$n_out"

# the probe folder another uid owns: runc sandboxes are refused (their init
# is the copy made there; atk43g2 G1: its owner swapped it); the state
# root's check of what it holds refuses it before anything else
chown 12345 "$SANDGATE_STATE/probe"
sg_run x "$SG" create "$SG_TMP/src" --network none
assert_eq "runc: a foreign probe folder refuses the create" 125 "$x_rc"
assert_contains "and says why" "$x_err" "$SANDGATE_STATE/probe is owned by uid 12345"
[ "$x_rc" = 0 ] && sg_on_exit "'$SG' discard $x_out"
chown "$(id -u)" "$SANDGATE_STATE/probe"
chmod 0775 "$SANDGATE_STATE/probe"
sg_run x "$SG" create "$SG_TMP/src" --network none
assert_eq "runc: a group-writable probe folder refuses it too" 125 "$x_rc"
[ "$x_rc" = 0 ] && sg_on_exit "'$SG' discard $x_out"
chmod 0755 "$SANDGATE_STATE/probe"
sg_summary
