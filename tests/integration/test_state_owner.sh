#!/usr/bin/env bash
# test_state_owner.sh: sandgate uses a state root only when no other uid
# can change it. The root holds what sandgate acts on as its user (the
# host path apply writes to, the disk image it mounts, the probe each runc
# sandbox runs as its init), so it must be a folder owned by sandgate's
# uid (or root) that no one else may write, and so must every folder
# above it, one others may write allowed only when sticky (/tmp). Else
# every command stops at once with 125, naming the folder, before it reads
# or runs anything (atk43g2 G2: a group-writable root, or one below a
# folder another uid owns, was used as it was).
set -u
SRC=${SANDGATE_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRC/tests/lib/common.sh"

sg_require_docker
sg_setup
sg_base_image
[ "$(id -u)" = 0 ] || { echo "skip: needs root to play another uid"; exit 77; }
mkdir -p "$SG_TMP/src"
printf 'hello\n' >"$SG_TMP/src/a.txt"
chmod 0700 "$SANDGATE_STATE"

sg_run c "$SG" create "$SG_TMP/src" --network none
assert_eq "a sandbox is made in a private state root" 0 "$c_rc"
[ "$c_rc" = 0 ] || { echo "$c_err"; sg_summary; exit 1; }
SBX=$c_out
sg_on_exit "chmod 0700 '$SANDGATE_STATE'; chown root '$SANDGATE_STATE'; '$SG' discard $SBX"
WORK=$SANDGATE_STATE/sandboxes/$SBX/work

# refused: every command class, 125, the folder named, nothing run
refused() {	# LABEL WHAT-STDERR-SAYS
	local label=$1 says=$2
	sg_run x "$SG" exec "$SBX" -- touch /workspace/ran
	assert_eq "$label: exec refused" 125 "$x_rc"
	assert_contains "$label: exec names the folder" "$x_err" "$says"
	[ -e "$WORK/ran" ] && fail "$label: the command did not run" ||
	    ok "$label: the command did not run"
	sg_run l "$SG" list
	assert_eq "$label: list refused" 125 "$l_rc"
	assert_not_contains "$label: list shows nothing" "$l_out" "$SBX"
	sg_run d "$SG" diff "$SBX"
	assert_eq "$label: diff refused" 125 "$d_rc"
	sg_run a "$SG" apply --all "$SBX"
	assert_eq "$label: apply refused" 125 "$a_rc"
	sg_run g "$SG" discard "$SBX"
	assert_eq "$label: discard refused" 125 "$g_rc"
	[ -d "$SANDGATE_STATE/sandboxes/$SBX" ] && ok "$label: the sandbox is kept" ||
	    fail "$label: the sandbox is kept"
}

for mode in 0770 0707 0755; do
	chmod "$mode" "$SANDGATE_STATE"
	if [ "$mode" = 0755 ]; then
		sg_run x "$SG" exec "$SBX" -- true
		assert_eq "a root of mode 0755 is used" 0 "$x_rc"
	else
		refused "mode $mode" "state folder $SANDGATE_STATE is writable by"
	fi
done
chmod 0700 "$SANDGATE_STATE"

chown 65534 "$SANDGATE_STATE"
refused "owned by uid 65534" "state folder $SANDGATE_STATE is owned by uid 65534"
chown root "$SANDGATE_STATE"

# a folder above: another uid's, or others' to write without the sticky bit
chown 65534 "$SG_TMP"
refused "the folder above is uid 65534's" "the folder above it, $SG_TMP, is owned by uid 65534"
chown root "$SG_TMP"
chmod 0777 "$SG_TMP"
refused "the folder above is 0777" "the folder above it, $SG_TMP, is writable by anyone (mode 0777, not sticky)"
chmod 1777 "$SG_TMP"
sg_run x "$SG" exec "$SBX" -- true
assert_eq "a sticky folder above (as /tmp) is fine" 0 "$x_rc"
chmod 0700 "$SG_TMP"

# the root's own folder is made private when missing, and a link to a
# private root is followed once: the real path is what is used
sg_run n env SANDGATE_STATE="$SG_TMP/new/state" "$SG" list
assert_eq "a missing root is made" 0 "$n_rc"
assert_eq "made 0700" "700" "$(stat -c %a "$SG_TMP/new/state")"
ln -s "$SANDGATE_STATE" "$SG_TMP/link"
sg_run k env SANDGATE_STATE="$SG_TMP/link" "$SG" list
assert_eq "a link to the private root works" 0 "$k_rc"
assert_contains "and finds its sandbox" "$k_out" "$SBX"
: >"$SG_TMP/file"
sg_run f env SANDGATE_STATE="$SG_TMP/file" "$SG" list
assert_eq "a file as the root is refused" 125 "$f_rc"
assert_contains "and said so" "$f_err" "is not a folder"

# a root that cannot be resolved is refused, never used unchecked
# (atk44a F2: a link to a folder of another mount namespace resolved to
# nothing and the check was skipped; a dangling link takes the same path)
ln -s "$SG_TMP/nowhere/at/all" "$SG_TMP/dangling"
mkdir -p "$SG_TMP/nowhere"
chmod 0500 "$SG_TMP/nowhere"
sg_run f env SANDGATE_STATE="$SG_TMP/dangling" "$SG" list
assert_eq "a root that does not resolve is refused" 125 "$f_rc"
assert_contains "naming it" "$f_err" "state folder $SG_TMP/dangling"
chmod 0700 "$SG_TMP/nowhere"

# a link on the way owned by another uid (who could point it elsewhere)
# is refused, though what it points to is private (atk44a F4)
ln -s "$SANDGATE_STATE" "$SG_TMP/theirs"
chown -h 65534 "$SG_TMP/theirs"
sg_run f env SANDGATE_STATE="$SG_TMP/theirs" "$SG" list
assert_eq "another uid's link on the way is refused" 125 "$f_rc"
assert_contains "and named" "$f_err" "the link $SG_TMP/theirs on the way is owned by uid 65534"

# what another uid planted inside while the root was open stays refused
# after a chmod of the root (atk44a F1: a planted sandboxes link held the
# next sandbox, whose meta its owner then forged)
planted() {	# LABEL PATH WHAT-STDERR-SAYS
	sg_run x "$SG" exec "$SBX" -- touch /workspace/ran
	assert_eq "$1: exec refused" 125 "$x_rc"
	assert_contains "$1: named" "$x_err" "$2 $3"
	sg_run c "$SG" create "$SG_TMP/src" --network none
	assert_eq "$1: create refused" 125 "$c_rc"
	[ "$c_rc" = 0 ] && sg_on_exit "'$SG' discard $c_out"
	[ -e "$WORK/ran" ] && fail "$1: the command did not run" ||
	    ok "$1: the command did not run"
}
mkdir "$SG_TMP/theirs.d"
chown 65534 "$SG_TMP/theirs.d"
ln -s "$SG_TMP/theirs.d" "$SANDGATE_STATE/execend"
planted "a link planted in the root" "$SANDGATE_STATE/execend" "is a link"
rm "$SANDGATE_STATE/execend"
mkdir "$SANDGATE_STATE/records"
chown 65534 "$SANDGATE_STATE/records"
planted "a folder of uid 65534 in the root" "$SANDGATE_STATE/records" "is owned by uid 65534"
chown root "$SANDGATE_STATE/records"
chmod 0777 "$SANDGATE_STATE/records"
planted "a folder anyone may write in the root" "$SANDGATE_STATE/records" "is writable by anyone (mode 0777)"
rmdir "$SANDGATE_STATE/records"
ln -s "$SG_TMP/theirs.d" "$SANDGATE_STATE/sandboxes/sbx_000000000000000000000000"
planted "a sandbox folder planted as a link" "$SANDGATE_STATE/sandboxes/sbx_000000000000000000000000" "is a link"
rm "$SANDGATE_STATE/sandboxes/sbx_000000000000000000000000"

# a folder of another uid on the way, as given, though the real path
# passes by it (atk44c E5: such a folder, swapped for a link of its
# owner's while the path resolved, chose which folder became the root)
mkdir "$SG_TMP/theirs.w"
chown 65534 "$SG_TMP/theirs.w"
sg_run f env SANDGATE_STATE="$SG_TMP/theirs.w/../state" "$SG" list
assert_eq "another uid's folder on the way is refused" 125 "$f_rc"
assert_contains "and named" "$f_err" "the folder above it, $SG_TMP/theirs.w, is owned by uid 65534"

# the sandbox's meta.json, what apply takes its host path from, read
# only as a file of this uid with no other name, never through a link
# (atk44c E1, E2: planted while the folders were open, a link or a hard
# link of the attacker's, kept after they were chmod'ed)
META=$SANDGATE_STATE/sandboxes/$SBX/meta.json
cp "$META" "$SG_TMP/meta.theirs"
chown 65534 "$SG_TMP/meta.theirs"
mv "$META" "$SG_TMP/meta.real"
ln -s "$SG_TMP/meta.theirs" "$META"
sg_run x "$SG" apply --all "$SBX"
assert_eq "meta.json a link: apply refused" 125 "$x_rc"
assert_contains "and why" "$x_err" "meta.json is a link"
rm "$META"
ln "$SG_TMP/meta.theirs" "$META"
sg_run x "$SG" apply --all "$SBX"
assert_eq "meta.json another uid's (a hard link): apply refused" 125 "$x_rc"
assert_contains "and why" "$x_err" "is owned by uid 65534"
rm "$META"
cp "$SG_TMP/meta.real" "$META"
ln "$META" "$SG_TMP/meta.second"
sg_run x "$SG" exec "$SBX" -- true
assert_eq "meta.json with a second name: exec refused" 125 "$x_rc"
assert_contains "and why" "$x_err" "linked elsewhere too"
rm "$SG_TMP/meta.second"
chmod 0666 "$META"
sg_run x "$SG" exec "$SBX" -- true
assert_eq "meta.json anyone may write: exec refused" 125 "$x_rc"
chmod 0600 "$META"

# what each sandbox's folder holds: this uid's, no link (atk44f: disk.img
# and work planted as links made root mount the planter's image over a
# folder of their choosing; checked and checked.tmp.PID links, lock link,
# a replicas file naming a listener of theirs that got the control token)
SDIR=$SANDGATE_STATE/sandboxes/$SBX
for e in checked lock disk.img replicas; do
	if [ -e "$SDIR/$e" ]; then
		mv "$SDIR/$e" "$SG_TMP/$e.real"
	fi
	ln -s "$SG_TMP/theirs.d/$e" "$SDIR/$e"
	sg_run x "$SG" exec "$SBX" -- true
	assert_eq "$e planted as a link: exec refused" 125 "$x_rc"
	assert_contains "and named" "$x_err" "$SDIR/$e is a link"
	rm "$SDIR/$e"
	[ -e "$SG_TMP/$e.real" ] && mv "$SG_TMP/$e.real" "$SDIR/$e"
done
: >"$SDIR/checked.tmp.4242"
chown 65534 "$SDIR/checked.tmp.4242"
sg_run x "$SG" exec "$SBX" -- true
assert_eq "a file of another uid in the sandbox folder: exec refused" 125 "$x_rc"
assert_contains "and named" "$x_err" "$SDIR/checked.tmp.4242 is owned by uid 65534"
rm "$SDIR/checked.tmp.4242"

# the uid claims folder ($SANDGATE_UID_DIR): checked as the root is
# (atk44c E4: one another uid made first let it take every uid, and two
# sandboxes got one)
mkdir "$SG_TMP/uids"
chown 65534 "$SG_TMP/uids"
sg_run u env SANDGATE_UID_DIR="$SG_TMP/uids" "$SG" create "$SG_TMP/src" --network none
assert_eq "a claims folder of another uid: create refused" 125 "$u_rc"
assert_contains "and named" "$u_err" "uid claims folder $SG_TMP/uids is owned by uid 65534"
[ "$u_rc" = 0 ] && sg_on_exit "'$SG' discard $u_out"

# still the sandbox it was: nothing ran in any refused command
sg_run x "$SG" exec "$SBX" -- sh -c 'ls /workspace; echo alive'
assert_eq "the sandbox works again once private" "0 a.txt alive" "$x_rc $(echo $x_out)"
sg_summary
