#!/usr/bin/env bash
# test_probe_join_wake.sh: `sandgate-probe join` starts its command once
# the host moved it into its memory cgroup, and sandgate sends it a wake
# (PROCSTAT_JOIN_WAKE, SIGURG) right after the move so it does not wait
# for its next poll. Any process of the sandbox runs as the join's uid and
# can send that signal too: a wake from that uid must neither kill the
# join nor make it start its command before the move, and the command
# must start with the signal mask the join was given (a blocked mask is
# inherited across execve). Runs the probe on the host as an unprivileged
# uid, with a memory cgroup (v1) of its own standing in for the run's;
# no Docker.
set -u
SRC=${SANDGATE_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRC/tests/lib/common.sh"

if [ "$(id -u)" != 0 ]; then
	echo "skip: needs root (a memory cgroup, another uid)"
	exit 77
fi
MEM=$(sed -n 's/^[0-9]*:memory:\(.*\)$/\1/p' /proc/self/cgroup)
if [ -z "$MEM" ] || [ ! -d "/sys/fs/cgroup/memory$MEM" ]; then
	echo "skip: no cgroup v1 memory controller here"
	exit 77
fi
sg_setup
PROBE=$SG_BIN/sandgate-probe
UID_=65534
WAKE=$((1 << (23 - 1)))		# SIGURG's bit in /proc/PID/status masks
NAME=sgtest_wake_$$
CG=/sys/fs/cgroup/memory${MEM%/}/$NAME
mkdir "$CG" || { fail "memory cgroup $CG made"; sg_summary; exit 1; }
chmod 0711 "$SG_TMP"
OUT=$SG_TMP/status
: >"$OUT"
chmod 0666 "$OUT"

# mask PID FIELD: the hex mask FIELD (SigBlk, ShdPnd, ...) of PID, or "".
mask() {
	sed -n "s/^$2:[[:space:]]*//p" "/proc/$1/status" 2>/dev/null
}

# has_wake PID FIELD: FIELD of PID has SIGURG's bit set.
has_wake() {
	local m
	m=$(mask "$1" "$2")
	[ -n "$m" ] && [ $((0x$m & WAKE)) != 0 ]
}

# until_true SECONDS CMD...: poll CMD every 10 ms; 1 when it never held.
until_true() {
	local n=$(($1 * 100))
	shift
	while ! "$@"; do
		n=$((n - 1))
		[ "$n" -gt 0 ] || return 1
		sleep 0.01
	done
}

not_pending() {
	! has_wake "$1" ShdPnd && ! has_wake "$1" SigPnd
}

setpriv --reuid "$UID_" --regid "$UID_" --clear-groups \
    "$PROBE" join "$NAME" -- grep -E '^SigBlk:' /proc/self/status >"$OUT" &
JPID=$!
# the join first (unless it was waited for: its pid may be another's),
# then its cgroup, empty by then
sg_on_exit "[ -n \"\${JDONE:-}\" ] || { kill -KILL $JPID; wait $JPID; }"
sg_on_exit "rmdir '$CG'"

if until_true 10 has_wake "$JPID" SigBlk; then
	ok "the waiting join holds its wake blocked"
else
	fail "the waiting join holds its wake blocked" \
	    "SigBlk '$(mask "$JPID" SigBlk)'"
fi
# Five spoofed wakes from the sandbox's uid, each taken by the join
# before the next: it looks at its cgroup again and goes on waiting.
for i in 1 2 3 4 5; do
	setpriv --reuid "$UID_" --regid "$UID_" --clear-groups \
	    kill -URG "$JPID" || fail "spoofed wake $i sent"
	until_true 10 not_pending "$JPID" ||
	    fail "spoofed wake $i taken by the join"
done
if kill -0 "$JPID" 2>/dev/null; then
	ok "spoofed wakes do not kill the join"
else
	fail "spoofed wakes do not kill the join"
fi
assert_eq "spoofed wakes do not start the command before the move" \
    "$(readlink -f "$PROBE")" "$(readlink "/proc/$JPID/exe" 2>/dev/null)"
assert_eq "the command wrote nothing before the move" 0 \
    "$(wc -c <"$OUT")"

# The move, then the host's wake: the command starts and exits.
echo "$JPID" >"$CG/cgroup.procs"
kill -URG "$JPID"
wait "$JPID"
rc=$?
JDONE=1
assert_eq "moved, the join runs its command (exit 0)" 0 "$rc"
assert_eq "the command starts with the join's own signal mask" \
    "SigBlk:	0000000000000000" "$(cat "$OUT")"

sg_summary
