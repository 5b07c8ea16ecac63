#!/usr/bin/env bash
# test_exec_fresh_owner.sh: the container of an `exec --fresh` whose
# sandgate was SIGKILLed mid-command is not left behind. Each fresh
# container carries its owner (sandgate.owner: the pid, start time, pid
# namespace, boot id and uid of the sandgate that made it); `sandgate
# gc`, and the sandbox's next exec, remove the fresh containers whose
# owner is gone and unregister their addresses from the proxy, and leave
# a live exec's alone. Real Docker and the real proxy container (its
# upstream side an --internal network of its own). A sandgate in another
# pid namespace, or whose /proc hides the owner (hidepid=invisible),
# keeps a live owner's container, and so does one in another time
# namespace (the owner holds its mark locked while it runs).
# docs/controller.md ("sandgate gc",
# "exec --fresh").
set -u
SRC=${SANDGATE_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRC/tests/lib/common.sh"

sg_require_docker
sg_setup
export SANDGATE_DATA_DIR=$SRC
sg_base_image
sg_proxy_up fresh
mkdir -p "$SG_TMP/project"
echo "fresh" >"$SG_TMP/project/README"
sg_run r "$SG" create "$SG_TMP/project"
assert_eq "create" 0 "$r_rc"
SBX=$r_out
sg_on_exit "'$SG' discard $SBX"
sg_on_exit "docker ps -aq --filter label=sandgate.sandbox=$SBX | xargs -r docker rm -f"

fresh() {	# the sandbox's fresh containers: "name owner" lines
	docker ps -a --filter "label=sandgate.sandbox=$SBX" \
	    --filter label=sandgate.role=fresh \
	    --format '{{.Names}} {{.Label "sandgate.owner"}}'
}
registered() {	# how many addresses the proxy holds for the sandbox
	"$SG" proxy status 2>/dev/null | grep -c "^  $SBX "
}

# Start `exec --fresh -- sleep 60`, wait for its container and its
# command, then SIGKILL that sandgate: nothing of it cleans up.
killed_fresh() {
	"$SG" exec --fresh "$SBX" -- sleep 60 >/dev/null 2>&1 &
	local pid=$! i
	for i in $(seq 1 120); do
		[ -n "$(fresh)" ] && docker top "$(fresh | head -n1 | cut -d' ' -f1)" 2>/dev/null |
		    grep -q "sleep 60" && break
		sleep 0.5
	done
	FRESH_OWNER=$(fresh | head -n1 | cut -d' ' -f2-)
	FRESH_REG=$(registered)
	kill -KILL $pid
	wait $pid 2>/dev/null
}

# A live exec --fresh (its container up and registered), then one
# killed beside it; each exec sweeps orphans before it starts, so the
# live one's went first.
"$SG" exec --fresh "$SBX" -- sleep 40 >/dev/null 2>&1 &
live=$!
for i in $(seq 1 120); do
	[ "$(registered)" -ge 2 ] && break
	sleep 0.5
done
# A sandgate in another pid namespace (a container with the Docker
# socket, a unit with PrivatePIDs) cannot see the live owner in its
# /proc: it must keep that container, not sweep it.
sg_run r unshare -p -f --mount-proc "$SG" gc
assert_eq "gc in another pid namespace" 0 "$r_rc"
assert_eq "gc in another pid namespace kept the live exec's container" 1 \
	"$(fresh | wc -l)"
assert_eq "and its registration" 2 "$(registered)"
# A sandgate whose /proc hides the live owner reads its /proc/PID as
# ENOENT, as a pid that is gone (atk1921c F4: another user's gc under
# hidepid=invisible removed a fresh container in use). Another uid would
# need its own Docker access and state; hidepid=invisible hides from a
# reader outside /proc's gid (0) a process whose capabilities exceed its
# own too: here a root in gid 65534 without CAP_SYS_PTRACE, in a mount
# namespace of its own (the host's /proc keeps its options).
hidden() {	# run "$@" where /proc hides the live owner
	unshare -m sh -c 'mount --make-rprivate / &&
	    mount -t proc -o hidepid=invisible proc /proc &&
	    exec setpriv --regid=65534 --clear-groups \
	        --bounding-set=-sys_ptrace --inh-caps=-sys_ptrace "$@"' sh "$@"
}
sg_run r hidden test -e "/proc/$live/stat"
assert_eq "the live owner is hidden there" 1 "$r_rc"
sg_run r hidden "$SG" gc
assert_eq "gc where /proc hides the owner" 0 "$r_rc"
assert_eq "gc where /proc hides the owner kept the live exec's container" \
	1 "$(fresh | wc -l)"
assert_eq "and its registration" 2 "$(registered)"
assert_eq "and its fresh mark" 1 \
	"$(find "$SANDGATE_STATE/sandboxes/$SBX" -maxdepth 1 -name 'fresh.*' | wc -l)"
killed_fresh
assert_eq "the fresh container names its owner (pid start pidns boot uid)" 1 \
	"$(grep -cE "^[0-9]+ [0-9]+ [0-9]+ [0-9a-f-]{36} $(id -u)\$" <<<"$FRESH_OWNER")"
assert_eq "the fresh containers and the session are registered" 3 \
	"$FRESH_REG"
assert_eq "the killed exec left its fresh container" 2 "$(fresh | wc -l)"

sg_run r "$SG" gc
assert_eq "gc" 0 "$r_rc"
assert_contains "gc says what it removed" "$r_out$r_err" "fresh container"
assert_eq "gc removed the orphan, kept the live exec's container" 1 \
	"$(fresh | wc -l)"
assert_eq "the live one is its own sandgate's" "$live" \
	"$(fresh | cut -d' ' -f2)"  # owner: "PID START"
assert_eq "the orphan's address is unregistered" 2 "$(registered)"
wait $live
assert_eq "the live exec's container went at its end" 0 "$(fresh | wc -l)"
assert_eq "only the session stays registered" 1 "$(registered)"

# The sandbox's next exec sweeps an orphan too.
killed_fresh
assert_eq "a second killed exec left its container" 1 "$(fresh | wc -l)"
# (the first killed exec's mark went with the sweep of this one's start)
assert_eq "and its fresh mark" 1 \
	"$(find "$SANDGATE_STATE/sandboxes/$SBX" -maxdepth 1 -name 'fresh.*' | wc -l)"
sg_run r "$SG" exec "$SBX" -- true
assert_eq "the next exec runs" 0 "$r_rc"
assert_eq "the next exec removed the orphan" 0 "$(fresh | wc -l)"
assert_eq "and its registration" 1 "$(registered)"
assert_eq "and the killed execs' fresh marks" 0 \
	"$(find "$SANDGATE_STATE/sandboxes/$SBX" -maxdepth 1 -name 'fresh.*' | wc -l)"

# An exec with no fresh mark asks Docker for no container list (the
# sweep's list cost every exec a Docker round trip, 3-10 ms).
# LeakSanitizer cannot run under ptrace (a sanitizer build aborts at exit).
sg_run r env ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
	strace -f -e trace=sendto -s 64 -o "$SG_TMP/sendto" \
	"$SG" exec "$SBX" -- true
assert_eq "an exec under strace runs" 0 "$r_rc"
assert_eq "it lists no containers" 0 \
	"$(grep -c 'containers/json' "$SG_TMP/sendto")"
sg_run r "$SG" exec --fresh "$SBX" -- true
assert_eq "exec --fresh runs" 0 "$r_rc"
assert_eq "and leaves no fresh mark at its end" 0 \
	"$(find "$SANDGATE_STATE/sandboxes/$SBX" -maxdepth 1 -name 'fresh.*' | wc -l)"

# A live owner judged from another time namespace (atk1921f F1): the
# start times /proc shows shift by the reader's boottime offset, so a
# sandgate there took the live owner for pid reuse (gone), removed its
# container and ended its run. The owner holds its fresh mark and its
# run's .active marker locked while it runs (flock, let go by the kernel
# when it dies), which reads the same from every namespace (a judge in
# the owner's pid namespace whose /proc is the parent's:
# tests/unit/test_ownmark.c; sandgate exec itself does not run there).
active() {	# the sandbox's runs going on: their .active markers
	find "$SANDGATE_STATE/sandboxes/$SBX/runs" -maxdepth 1 -name '*.active' |
	    wc -l
}
"$SG" exec --fresh "$SBX" -- sleep 30 >/dev/null 2>&1 &
live=$!
for i in $(seq 1 120); do
	[ "$(registered)" -ge 2 ] && [ "$(active)" -ge 1 ] && break
	sleep 0.5
done
assert_eq "a live exec --fresh" 1 "$(fresh | wc -l)"
if unshare --time --boottime 1000 --fork true 2>/dev/null; then
	sg_run r unshare --time --boottime 1000 --fork "$SG" gc
	assert_eq "gc in another time namespace" 0 "$r_rc"
	assert_eq "it kept the live exec's container" 1 "$(fresh | wc -l)"
	assert_eq "and its registration" 2 "$(registered)"
	assert_eq "and its run's .active marker" 1 "$(active)"
	sg_run r unshare --time --boottime 1000 --fork "$SG" exec "$SBX" -- true
	assert_eq "an exec in another time namespace" 0 "$r_rc"
	assert_eq "it kept the live exec's container" 1 "$(fresh | wc -l)"
	assert_eq "and its run's .active marker" 1 "$(active)"
else
	echo "SKIP: gc in another time namespace: unshare --time --boottime" \
	    "is refused here (needs CAP_SYS_ADMIN and CAP_SYS_TIME)"
fi
wait "$live"
assert_eq "the live exec's container went at its end" 0 "$(fresh | wc -l)"

sg_summary
