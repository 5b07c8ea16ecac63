# rows-container.sh: attack rows for what a sandbox can do to its own
# long-lived process, the host's disk, users and kernel limits, the
# controller's records, its deadlines and its markers, and for the container
# spec and the network seal while the sandbox lives (issue 16, findings 1,
# 2, 4, 5, 6, 7, 12 and the seal re-check; then 1d, 1e, 1e', 1e'', 1e''',
# 6c, 6d, 12b and a seal rule added; round 5: 1f, 1g). Sourced by tests/attacks/run after
# lib.sh; each atk_* function adds its rows. Needs $SG, $T, $MAIN, $RAISED,
# $SANDGATE_STATE, $SANDGATE_LOG_DIR, $SANDGATE_RECORD_DIR, $PROXY_IP, $HERE
# and the create helper of run.

# --- 1. /proc/PID/mem injection into the long-lived process ------------------
atk_inject() {
	local ticks0 ticks1 f
	if ! create INJ "$T/project" --network none; then
		row "1c inject into the idle process" NO "create failed" "" ""
		return
	fi
	f=$SANDGATE_STATE/sandboxes/$INJ/work/.injected
	x inj "$INJ" --timeout 5 -- python3 /workspace/.attacks/inject.py
	# the leftover kill ran when the command ended; now a timeout
	x inj2 "$INJ" --timeout 2 -- sleep 30
	sleep 2
	ticks0=$({ wc -l <"$f"; } 2>/dev/null || echo 0)
	sleep 2.5
	ticks1=$({ wc -l <"$f"; } 2>/dev/null || echo 0)
	verdict "1c inject into the idle process (/proc/PID/mem)" \
	    '! grep -q INJECTED <<<"$(j inj "o[\"stdout\"]")" && [ "$ticks1" = 0 ]' \
	    "$(j inj 'o["stdout"].strip()' | cut -c1-100)" "$(rec inj)" \
	    "payload lines after the command, a timeout and 2 s: $ticks0 -> $ticks1 (the idle probe is PID 1 and not dumpable)"
	"$SG" discard "$INJ" >/dev/null 2>&1
}

# --- 1d. a process whose main thread exited while a thread lives on ------------
# The leader's /proc/PID/environ can't be read and its stat says Z: the kill
# must take it anyway (after a timeout, a normal end and a SIGINT), and the
# record may say "cleanup: ok" only when nothing of the command is left.
zl_ticks() {
	{ wc -l <"$SANDGATE_STATE/sandboxes/$ZL/work/.zbeat"; } 2>/dev/null || echo 0
}
zl_after() {
	local a b
	sleep 1.5
	a=$(zl_ticks)
	sleep 2.5
	b=$(zl_ticks)
	printf '%s' $((b - a))
}
atk_zleader() {
	local uid tasks d1 d2 d3 pid rc3
	if ! create ZL "$T/project" --network none; then
		row "1d leader exited, a thread lives on" NO "create failed" "" ""
		return
	fi
	x zl1 "$ZL" --timeout 3 -- sh -c 'python3 /workspace/.attacks/zleader.py; sleep 60'
	d1=$(zl_after)
	x zl2 "$ZL" --timeout 20 -- python3 /workspace/.attacks/zleader.py
	d2=$(zl_after)
	"$SG" exec "$ZL" -- sh -c 'python3 /workspace/.attacks/zleader.py; sleep 60' \
	    >/dev/null 2>"$T/zl3.err" &
	pid=$!
	sleep 3
	kill -INT "$pid"
	wait "$pid"
	rc3=$?
	d3=$(zl_after)
	uid=$(sbx_uid "$ZL")
	tasks=$(ps -eLo uid= | awk -v u="$uid" '$1 == u' | wc -l)
	verdict "1d leader exited, a thread lives on (timeout, end, SIGINT)" \
	    '[ "$zl1_rc" = 124 ] && [ "$zl2_rc" = 0 ] && [ "$rc3" = 130 ] && [ "$d1" = 0 ] && [ "$d2" = 0 ] && [ "$d3" = 0 ]' \
	    "exit $zl1_rc, $zl2_rc, $rc3; $(j zl2 'o["stdout"].strip()')" \
	    "$(rec zl1); $(rec zl2)" \
	    "heartbeats in the 2.5 s after each: $d1, $d2, $d3; host tasks of uid $uid: $tasks (the init's included)"
	"$SG" discard "$ZL" >/dev/null 2>&1
}

# inside/NAME.c built static, a sandbox made (--network none) into VAR and
# the program put at /workspace/.NAME; 1 with LABEL's row said when not.
inside_static() {	# NAME LABEL VAR
	if ! gcc -O2 -static -pthread -o "$T/$1" "$HERE/inside/$1.c" 2>"$T/$1.err"; then
		row "$2" NO "cannot build $1.c: $(head -c 200 "$T/$1.err")" "" ""
		return 1
	fi
	if ! create "$3" "$T/project" --network none; then
		row "$2" NO "create failed" "" ""
		return 1
	fi
	install -m 0755 "$T/$1" "$SANDGATE_STATE/sandboxes/${!3}/work/.$1"
}

# --- 1d'. the same as an exec's first process, its marker erased or forged -----
# inside/zforge.c (built static here), run as the exec itself (its parent
# the runtime's, outside the container), blanks its SANDGATE_RUN or writes
# another exec's in place, then ends its main thread: the kernel shows such
# a leader in the root cgroups, its live thread still in its run's memory
# cgroup. With another exec of the sandbox in progress, a --timeout 1 kill
# spared it (atk46b F1: erased, it looked like the runtime's start of
# another exec; F2: forged, like that exec's process, on main too), and it
# ran on after sandgate exited. runc only (under gVisor the marker decides,
# a documented limitation).
zf_lines() {
	{ wc -l <"$SANDGATE_STATE/sandboxes/$ZF/work/$1"; } 2>/dev/null || echo 0
}
# zforge as exec P (--timeout 1) in MODE: into VAR, the lines its thread
# wrote in the 2.5 s after sandgate exited (1.5 s on).
zf_run() {	# P MODE VAR
	local a b
	x "$1" "$ZF" --timeout 1 -- /workspace/.zforge "$2" "/workspace/.$1"
	sleep 1.5
	a=$(zf_lines ".$1")
	sleep 2.5
	b=$(zf_lines ".$1")
	printf -v "$3" '%s' $((b - a))
}
atk_zforge() {
	local label="1d' leader exited, marker erased or forged, another exec running"
	local bpid de df
	if [ "$RUNTIME" = runsc ]; then
		row "$label" "n/a (gVisor)" "under gVisor the marker decides whose a process is (documented)" "" ""
		return
	fi
	inside_static zforge "$label" ZF || return
	x zfb "$ZF" --timeout 60 -- sleep 40 &
	bpid=$!
	sleep 1
	zf_run zfe erase de
	zf_run zff forge df
	kill -INT "$bpid" 2>/dev/null
	wait "$bpid"
	verdict "$label" \
	    '[ "$zfe_rc" = 124 ] && [ "$zff_rc" = 124 ] && [ "$de" = 0 ] && [ "$df" = 0 ]' \
	    "exit $zfe_rc, $zff_rc; $(j zfe 'o["stdout"].strip()'); $(j zff 'o["stdout"].strip()' | cut -c1-60)" \
	    "$(rec zfe); $(rec zff)" \
	    "lines in the 2.5 s after each exec ended, another exec running: erased $de, forged $df"
	"$SG" discard "$ZF" >/dev/null 2>&1
}

# --- 1e. a command signals the container's init ---------------------------------
# The init accepts SIGTERM/SIGINT only from outside (docker stop): a command
# that sends them must not stop the container under the other execs.
atk_killinit() {
	local state
	if ! create KI "$T/project" --network none; then
		row "1e kill -TERM 1 from a command" NO "create failed" "" ""
		return
	fi
	x ki "$KI" --timeout 20 -- sh -c 'kill -TERM 1; echo sent $?; kill -INT 1; sleep 2; echo still here'
	state=$(docker inspect -f '{{.State.Status}}' "sandgate-$KI")
	verdict "1e kill -TERM 1 and kill -INT 1 from a command" \
	    '[ "$ki_rc" = 0 ] && grep -q "still here" <<<"$(j ki "o[\"stdout\"]")" && [ "$state" = running ]' \
	    "exit $ki_rc; $(j ki 'o["stdout"].strip()' | tr '\n' ' ')" "$(rec ki)" \
	    "container after the command: $state"
	"$SG" discard "$KI" >/dev/null 2>&1
}

# --- 1e'. a command forges the "from outside" signal ------------------------------
# rt_sigqueueinfo, rt_tgsigqueueinfo and pidfd_send_signal let a command
# send SIGTERM/SIGINT to the init with si_pid 0 (what a sender outside the
# pid namespace shows) and a negative si_code: the init must ignore them,
# and an exec running meanwhile must end normally.
atk_forgeinit() {
	local state bg
	if ! create FI "$T/project" --network none; then
		row "1e' forged docker stop from a command" NO "create failed" "" ""
		return
	fi
	x fia "$FI" --timeout 40 -- sh -c 'sleep 12; echo long-running-exec done' &
	bg=$!
	sleep 3
	x fi "$FI" --timeout 30 -- python3 /workspace/.attacks/sigforge.py 2
	wait "$bg"
	fia_rc=$(j fia 'o["exit_code"]')
	state=$(docker inspect -f '{{.State.Status}}' "sandgate-$FI")
	verdict "1e' forged docker stop (rt_sigqueueinfo, rt_tgsigqueueinfo, pidfd_send_signal, si_pid 0)" \
	    '[ "$fi_rc" = 0 ] && grep -q "still here" <<<"$(j fi "o[\"stdout\"]")" && [ "$fia_rc" = 0 ] && grep -q "exec done" <<<"$(j fia "o[\"stdout\"]")" && [ "$(j fia "o.get(\"container_stopped\")")" != True ] && [ "$state" = running ]' \
	    "exit $fi_rc; $(j fi 'o["stdout"].strip()' | sed -n '1p;$p' | tr '\n' ' ')" \
	    "$(rec fi); concurrent: $(rec fia)" \
	    "concurrent exec: exit $fia_rc; container after both: $state"
	"$SG" discard "$FI" >/dev/null 2>&1
}

# --- 1e'' and 1e'''. a command acts on the init as its own uid could ---------
# The init runs as a uid no command has. Filling the pending-signal count
# (or lowering PID 1's RLIMIT_SIGPENDING) would make the kernel drop a
# forged SIGTERM/SIGINT's siginfo and hand PID 1 SI_USER with si_pid 0,
# what docker stop shows; RLIMIT_CPU 0 would get it SIGKILLed. Each must
# fail, and an exec running meanwhile must end normally.
il_run() {	# il_run PREFIX STEP...: the steps while a concurrent exec sleeps
	local p=$1 bg
	shift
	x "${p}a" "$IL" --timeout 40 -- sh -c 'sleep 14; echo long-running-exec done' &
	bg=$!
	sleep 3
	x "$p" "$IL" --timeout 30 -- python3 /workspace/.attacks/initlimit.py "$@"
	wait "$bg"
	printf -v "${p}a_rc" '%s' "$(j "${p}a" 'o["exit_code"]')"
}
il_ok() {	# il_ok PREFIX: the steps' command and the concurrent exec held
	local a=${1}a rc arc
	rc=${1}_rc arc=${1}a_rc
	[ "${!rc}" = 0 ] && grep -q "still here" <<<"$(j "$1" 'o["stdout"]')" &&
	    [ "${!arc}" = 0 ] && grep -q "exec done" <<<"$(j "$a" 'o["stdout"]')" &&
	    [ "$(j "$a" 'o.get("container_stopped")')" != True ] &&
	    [ "$(docker inspect -f '{{.State.Status}}' "sandgate-$IL")" = running ]
}
atk_initlimit() {
	local state
	if ! create IL "$T/project" --network none; then
		row "1e'' forged stop with the siginfo lost" NO "create failed" "" ""
		return
	fi
	il_run il1 fill:15 fill:2 pend:15 pend:2
	state=$(docker inspect -f '{{.State.Status}}' "sandgate-$IL")
	verdict "1e'' forged stop with the siginfo lost (pending signals full, RLIMIT_SIGPENDING 0; SIGTERM, SIGINT)" \
	    'il_ok il1 && [ "$(j il1 "o[\"stdout\"]" | grep -c "rt_sigqueueinfo(1, .*errno 1$")" = 4 ]' \
	    "exit $il1_rc; $(j il1 'o["stdout"].strip()' | grep -E 'rt_sigq|RLIMIT|still|gone' | cut -c1-60 | tr '\n' ' ')" \
	    "$(rec il1); concurrent: $(rec il1a)" \
	    "concurrent exec: exit $il1a_rc; container after both: $state; the controller said: $(grep -h 'sandgate:' "$T/il1.err" "$T/il1a.err" | head -4 | cut -c1-120 | tr '\n' ' ')"
	[ "$state" = running ] || "$SG" exec "$IL" -- true >/dev/null 2>&1
	il_run il2 cpu
	state=$(docker inspect -f '{{.State.Status}}' "sandgate-$IL")
	verdict "1e''' prlimit of the init (RLIMIT_CPU 0, then orphans to reap)" \
	    'il_ok il2 && grep -q "RLIMIT_CPU, (0, 0)) failed: errno 1$" <<<"$(j il2 "o[\"stdout\"]")"' \
	    "exit $il2_rc; $(j il2 'o["stdout"].strip()' | tr '\n' ' ' | cut -c1-110)" \
	    "$(rec il2); concurrent: $(rec il2a)" \
	    "concurrent exec: exit $il2a_rc; container after both: $state"
	"$SG" discard "$IL" >/dev/null 2>&1
}

# --- 2. the container's log fills the host's disk -------------------------------
atk_logfill() {
	local lp s0 s1 type
	type=$(docker inspect -f '{{.HostConfig.LogConfig.Type}}' "sandgate-$MAIN")
	lp=$(docker inspect -f '{{.LogPath}}' "sandgate-$MAIN")
	s0=$(stat -c %s "$lp" 2>/dev/null || echo 0)
	x lf "$MAIN" --timeout 60 -- sh /workspace/.attacks/logfill.sh 20
	s1=$(stat -c %s "$lp" 2>/dev/null || echo 0)
	verdict "2 write into the container's log (20 MiB)" \
	    '[ $((s1 - s0)) -lt 1048576 ]' \
	    "$(j lf 'o["stdout"].strip().splitlines()[-1]')" "$(rec lf)" \
	    "log driver ${type}; ${lp:-no log file}: $s0 -> $s1 bytes"
}

# --- 4. a uid of its own: other sandboxes and host users ------------------------
atk_uids() {
	local um ur lim pid secret out1 out2 out3 bg host1000 own
	um=$(sbx_uid "$MAIN")
	ur=$(sbx_uid "$RAISED")
	um=$um:$um ur=$ur:$ur
	verdict "4 two sandboxes, two uids, no host account" \
	    '[ "$um" != "$ur" ] && ! getent passwd "${um%%:*}" >/dev/null && ! getent passwd "${ur%%:*}" >/dev/null' \
	    "users $um and $ur" "meta.json" \
	    "host passwd: ${um%%:*} $(getent passwd "${um%%:*}" >/dev/null && echo PRESENT || echo absent), ${ur%%:*} $(getent passwd "${ur%%:*}" >/dev/null && echo PRESENT || echo absent)"
	# sandbox A holds all but 2 of the per-uid inotify instances
	lim=$(cat /proc/sys/fs/inotify/max_user_instances)
	"$SG" exec "$RAISED" --timeout 30 -- python3 /workspace/.attacks/inotify.py \
	    $((lim - 2)) 8 >"$T/ino-a.out" 2>&1 &
	bg=$!
	sleep 3
	x ino "$MAIN" --timeout 20 -- python3 /workspace/.attacks/inotify.py 8 0
	wait "$bg"
	verdict "4b per-uid kernel limit: inotify held by another sandbox" \
	    '[ "$ino_rc" = 0 ]' "$(j ino 'o["stdout"].strip()')" "$(rec ino)" \
	    "other sandbox: $(tr '\n' ' ' <"$T/ino-a.out") (max_user_instances $lim)"
	# a host user with the old shared uid, and one with the sandbox's own
	secret=sgsecret-$$
	"$SG" exec "$MAIN" --env SANDGATE_T_SECRET="$secret" --timeout 20 -- sleep 12 \
	    >/dev/null 2>&1 &
	bg=$!
	sleep 2
	out1=""
	for pid in $(docker top "sandgate-$MAIN" -eo pid 2>/dev/null | tail -n +2); do
		out1+=$(setpriv --reuid=1000 --regid=1000 --clear-groups \
		    cat "/proc/$pid/environ" 2>/dev/null | tr '\0' '\n' |
		    grep -c "$secret")
	done
	pid=$(docker inspect -f '{{.State.Pid}}' "sandgate-$MAIN")
	out2=$(setpriv --reuid=1000 --regid=1000 --clear-groups sh -c \
	    "echo 'print(\"host\")' > /proc/$pid/root/workspace/src/app.py" 2>&1 &&
	    echo WRITTEN)
	own=${um%%:*}
	out3=$(setpriv --reuid="$own" --regid="$own" --clear-groups \
	    cat "/proc/$pid/environ" 2>&1 >/dev/null && echo READ)
	kill -INT "$bg" 2>/dev/null
	wait "$bg" 2>/dev/null
	host1000=$(getent passwd 1000 | cut -d: -f1)
	verdict "4c host users: environ and workspace of a sandbox" \
	    '! grep -q "[1-9]" <<<"$out1" && [[ $out2 != *WRITTEN* ]] && [[ $out3 != *READ* ]]' \
	    "uid 1000 (${host1000:-no account}): secret found in environ $(grep -o '[1-9]' <<<"$out1" | wc -l) times; workspace write: $(tail -1 <<<"$out2" | cut -c1-60)" \
	    "setpriv on the host" \
	    "uid $own (the sandbox's own) reading /proc/$pid/environ: $(tail -1 <<<"$out3" | cut -c1-60)"
}

# --- 5. a compromised proxy plants links for root ----------------------------
atk_proxylog() {
	local victim=/root/.sgatk-victim-$$ v2=/root/.sgatk-victim2-$$ before after
	local own2
	: >"$victim"
	printf 'root only %s\n' "$$" >"$v2"
	chmod 600 "$victim" "$v2"
	sg_on_exit "rm -f $victim $v2"
	before=$(sha256sum "$victim")
	# links as the proxy's uid (65532, which owns the folder) plants them
	ln -sf "$victim" "$SANDGATE_LOG_DIR/runs.jsonl" 2>"$T/pl.err"
	ln -sf "$v2" "$SANDGATE_LOG_DIR/security-events.jsonl.7" 2>>"$T/pl.err"
	chown -h 65532:65532 "$SANDGATE_LOG_DIR/runs.jsonl" \
	    "$SANDGATE_LOG_DIR/security-events.jsonl.7" 2>>"$T/pl.err"
	x pl "$MAIN" --timeout 20 -- true
	"$SG" proxy start --egress-network "$EGRESS" --hosts "$T/hosts" \
	    --policy-dir "$T/policy.d" --log-dir "$SANDGATE_LOG_DIR" \
	    >"$T/pl-proxy.out" 2>&1
	after=$(sha256sum "$victim")
	own2=$(stat -c %u "$v2")
	rm -f "$SANDGATE_LOG_DIR/runs.jsonl" "$SANDGATE_LOG_DIR/security-events.jsonl.7"
	verdict "5 the proxy's uid plants links in its log folder" \
	    '[ "$before" = "$after" ] && [ "$own2" = 0 ]' \
	    "exec exit $pl_rc; proxy start: $(head -c 60 "$T/pl-proxy.out")" "$(rec pl)" \
	    "root-only file behind runs.jsonl $( [ "$before" = "$after" ] && echo unchanged || echo APPENDED TO); behind security-events.jsonl.7 owned by uid $own2 after proxy start"
}

# --- 6. a deadline under back-pressure -----------------------------------------
atk_backpressure() {
	local f=$SANDGATE_STATE/sandboxes/$MAIN/work/.ticks span rc
	rm -f "$f"
	"$SG" exec "$MAIN" --timeout 3 -- sh -c \
	    '(while :; do date +%s >> /workspace/.ticks; sleep 0.2; done) & yes | head -c 50000000' \
	    2>"$T/bp.err" | (sleep 8; cat >/dev/null)
	rc=${PIPESTATUS[0]}
	span=$(awk 'NR == 1 { a = $1 } { b = $1 } END { print b - a }' "$f" 2>/dev/null)
	"$SG" exec "$MAIN" -- rm -f /workspace/.ticks >/dev/null 2>&1
	verdict "6 --timeout 3 with a reader that waits 8 s" \
	    '[ "$rc" = 124 ] && [ "${span:-99}" -le 5 ]' \
	    "exit $rc; $(grep -m1 'timed out' "$T/bp.err")" "stdout piped" \
	    "the command's own clock ran ${span:-?} s (a ticker in the background, independent of stdout)"
}

# --- 6d. the process limit full at the timeout ---------------------------------
# Self-healing pid-hopping chains (inside/hydra.c, built static here) fill
# the process limit with exited, unreaped processes. Under gVisor the kill
# at the deadline (the reaper's docker exec) then takes the whole sandbox
# down (or gVisor ends it before the deadline: exit 137), and gVisor's
# runtime may hang with dockerd's answers (the reaper's docker exec, the
# inspects after it: once 120 s): the exec must still return within the
# deadline, the reaper's bound (10 s), the kill grace (5 s) and the 3.5 s
# it asks Docker why the container stopped, stopping the sandbox from
# outside when the kill inside cannot finish, and its record must say
# whether the container stopped, as docker inspect sees it.
atk_pidsfull() {
	local t0 wall state stopped settle
	inside_static hydra "6d process limit full at the timeout" PF || return
	t0=$(date +%s%N)
	x pf "$PF" --timeout 4 -- sh -c '/workspace/.hydra 24; sleep 60'
	wall=$((($(date +%s%N) - t0) / 1000000))
	stopped=$(j pf 'o["container_stopped"]')
	# Docker's view of a sandbox stopped from outside lags while gVisor's
	# runtime hangs: up to 60 s for it to say so
	for settle in $(seq 0 60); do
		state=$(docker inspect -f '{{.State.Status}}' "sandgate-$PF")
		[ "$stopped" = true ] && [ "$state" = running ] || break
		sleep 1
	done
	verdict "6d process limit full at the timeout (--timeout 4)" \
	    '{ [ "$pf_rc" = 124 ] || { [ "$pf_rc" = 137 ] && [ "$stopped" = true ]; }; } && [ "$wall" -le 24500 ] && { { [ "$state" = running ] && [ "$stopped" = false ]; } || { [ "$state" != running ] && [ "$stopped" = true ] && grep -q "container stopped under the command" "$T/pf.err"; }; } && ! grep -q "may still run" "$T/pf.err"' \
	    "exit $pf_rc; $(notice pf command) $(notice pf "the sandbox")" "$(rec pf)" \
	    "exec wall $wall ms (bound 24500: 4 s + the reaper's 10 s + the 5 s grace + 3.5 s for Docker + 2 s); container after: $state (Docker said so after $settle s); record container_stopped: $stopped"
	"$SG" discard "$PF" >/dev/null 2>&1
}

# --- 6c. a freeze refused: tasks in uninterruptible sleep -----------------------
# Writers with fsync keep tasks in D state, and the freezer may give up
# ("unable to freeze"); the kill must then work without it: the ticker the
# command started stops at the deadline, and nothing of the run is left.
dw_ticks() {
	wc -l <"$SANDGATE_STATE/sandboxes/$DW/work/.dtick" 2>/dev/null || echo 0
}
atk_dstate() {
	local a b left frz
	if ! create DW "$T/project" --network none; then
		row "6c freeze refused by I/O in D state" NO "create failed" "" ""
		return
	fi
	x dw "$DW" --timeout 4 -- sh /workspace/.attacks/dwriters.sh 48
	sleep 2
	a=$(dw_ticks)
	sleep 3
	b=$(dw_ticks)
	left=$(inproc "$DW" 'dd if=|dwriters' | wc -l)
	frz=$(grep -c 'freeze' "$T/dw.err")
	verdict "6c freeze refused by I/O in D state (--timeout 4)" \
	    '[ "$dw_rc" = 124 ] && [ $((b - a)) = 0 ] && [ "$left" = 0 ]' \
	    "exit $dw_rc; $(notice dw command)" "$(rec dw)" \
	    "ticks 2-5 s after the exec returned: $((b - a)); processes of the command left: $left; notices about the freeze: $frz (it may or may not fail on a given run)"
	"$SG" discard "$DW" >/dev/null 2>&1
}

# --- 7b. a leftover borrows a concurrent exec's run marker ----------------------
# A timed-out command leaves a child that takes the run id of another exec
# in progress (read from the cgroupfs, which the sandbox may read) as its
# marker. Under runc the host knows whose it is from the memory cgroup the
# host put its exec's first process in, which no process of the sandbox
# can leave: the kill at the timeout takes it, while the other exec runs.
atk_borrow() {
	local label="7b leftover takes a concurrent exec's run marker (--timeout 3)"
	local bpid left
	if [ "$RUNTIME" = runsc ]; then
		row "$label" "n/a (gVisor)" "gVisor runs no join and no per-run cgroup: markers decide there (documented)" "" ""
		return
	fi
	"$SG" exec "$MAIN" --timeout 60 -- sleep 25 >/dev/null 2>&1 &
	bpid=$!
	sleep 3
	x bo "$MAIN" --timeout 3 -- sh -c 'me=$(sed -n "s|.*memory:.*/sandgate-cmds/||p; s|.*memory:/sandgate-cmds/||p" /proc/self/cgroup | head -1)
for r in $(cd /sys/fs/cgroup/memory/sandgate-cmds 2>/dev/null && ls -d run_*); do [ "$r" != "$me" ] && other=$r; done
echo "me=$me other=${other:-none}"
env SANDGATE_RUN=${other:-none} setsid sh -c "while :; do sleep 1; done # borrowed7b" </dev/null >/dev/null 2>&1 &
sleep 100'
	sleep 2
	left=$(inproc "$MAIN" 'borrowed7b' | wc -l)
	kill "$bpid" 2>/dev/null
	wait "$bpid" 2>/dev/null
	verdict "$label" \
	    '[ "$bo_rc" = 124 ] && [ "$left" = 0 ] && j bo "o[\"stdout\"]" | grep -q "other=run_"' \
	    "exit $bo_rc; $(j bo 'o["stdout"]' | head -1)" "$(rec bo)" \
	    "processes of the timed-out command alive 2 s after it returned, while the other exec runs: $left"
}

# --- 7c. a leftover takes a --fresh exec's run marker ---------------------------
# Where no per-run memory cgroup says whose a process is (gVisor; runc with
# --memory under 12 MiB) the marker decides. A --fresh exec runs in a
# container of its own, so its marker must shield nothing in the session
# container: a timed-out command's child that carries it is killed.
atk_freshmark() {
	local label="7c leftover takes a --fresh exec's run marker (--timeout 3)"
	local sb=$MAIN fpid left i frun
	if [ "$RUNTIME" != runsc ]; then
		if ! create FM "$T/project" --network none --memory 10m; then
			row "$label" NO "create --memory 10m failed" "" ""
			return
		fi
		sb=$FM
	fi
	frun="$SANDGATE_STATE/sandboxes/$sb/work/.frun7c"
	rm -f "$frun"
	"$SG" exec "$sb" --fresh --timeout 90 -- sh -c 'echo $SANDGATE_RUN > /workspace/.frun7c; sleep 30' >/dev/null 2>&1 &
	fpid=$!
	for i in $(seq 1 60); do
		[ -s "$frun" ] && break
		sleep 1
	done
	x fm "$sb" --timeout 3 -- sh -c 'r=$(cat /workspace/.frun7c); echo "fresh=$r"
env SANDGATE_RUN=$r setsid sh -c "while :; do sleep 1; done # fresh7c" </dev/null >/dev/null 2>&1 &
sleep 100'
	left=$(inproc "$sb" 'fresh7c' | wc -l)
	kill "$fpid" 2>/dev/null
	wait "$fpid" 2>/dev/null
	verdict "$label" \
	    '[ "$fm_rc" = 124 ] && [ "$left" = 0 ] && j fm "o[\"stdout\"]" | grep -q "fresh=run_"' \
	    "exit $fm_rc; $(j fm 'o["stdout"]' | head -1)" "$(rec fm)" \
	    "processes of the timed-out command alive after it returned, while the --fresh exec runs: $left"
	[ "$sb" = "$MAIN" ] || "$SG" discard "$sb" >/dev/null 2>&1
}

# --- 7. a stale .active marker shields a forged one -------------------------------
atk_stale() {
	local pid run left marker
	"$SG" exec "$MAIN" -- sleep 3071 >/dev/null 2>&1 &
	pid=$!
	sleep 2
	marker=$(ls "$SANDGATE_STATE/sandboxes/$MAIN/runs/"*.active 2>/dev/null | head -1)
	kill -KILL "$pid"
	wait "$pid" 2>/dev/null
	run=$(basename "${marker:-none}" .active)
	x st "$MAIN" --timeout 10 -- sh -c "env SANDGATE_RUN=$run sh -c 'sleep 3072' >/dev/null 2>&1 & sleep 1"
	sleep 1
	left=$(inproc "$MAIN" 'sleep 307[12]')
	"$SG" gc >"$T/st-gc.out" 2>&1
	verdict "7 SIGKILLed exec: its marker shields a forged child" \
	    '[ -z "$left" ] && [ ! -e "$marker" ]' \
	    "exit $st_rc" "$(rec st)" \
	    "after the next exec: $( [ -z "$left" ] && echo 'no process left' || echo "SURVIVED: $(tr '\n' ' ' <<<"$left")"); marker after gc: $( [ -e "$marker" ] && echo KEPT || echo removed) ($(grep -m1 marker "$T/st-gc.out"))"
	"$SG" exec "$MAIN" -- sh -c 'pkill -KILL -f "sleep 307" || true' >/dev/null 2>&1
}

# --- 12. the container spec ---------------------------------------------------
atk_spec() {
	local spec
	spec=$(docker inspect -f 'log={{.HostConfig.LogConfig.Type}} ulimits={{.HostConfig.Ulimits}} oom={{.HostConfig.OomScoreAdj}} cgroupns={{.HostConfig.CgroupnsMode}} init={{.HostConfig.Init}}' "sandgate-$MAIN")
	x pe "$MAIN" --timeout 20 -- python3 /workspace/.attacks/personality.py
	verdict "12 container spec: log, ulimits, OOM score, cgroupns, seccomp allowlist" \
	    '[[ $spec == *log=none* ]] && [[ $spec == *nofile=* ]] && [[ $spec == *nproc=* ]] && [[ $spec == *oom=1000* ]] && [[ $spec == *cgroupns=private* ]] && grep -q "READ_IMPLIES_EXEC): refused" <<<"$(j pe "o[\"stdout\"]")" && docker inspect -f "{{index .HostConfig.SecurityOpt 1}}" "sandgate-$MAIN" | grep -q "\"defaultAction\":\"SCMP_ACT_ERRNO\""' \
	    "$(j pe 'o["stdout"].strip().splitlines()[0]')" "$(rec pe)" \
	    "$spec; seccomp default $(docker inspect -f '{{index .HostConfig.SecurityOpt 1}}' "sandgate-$MAIN" | grep -o '"defaultAction":"[A-Z_]*"')"
}

# --- 12b. AF_VSOCK with bits above the int the kernel takes --------------------
# seccomp compares the whole 64-bit register; socket(2) takes an int: the
# family rule must not let (1 << 32) | AF_VSOCK through.
atk_vsock() {
	local out
	x vs "$MAIN" --timeout 20 -- python3 /workspace/.attacks/vsock.py
	out=$(j vs 'o["stdout"]')
	verdict "12b AF_VSOCK socket, high bits in the family" \
	    '[ "$vs_rc" = 0 ] && ! grep -q OPENED <<<"$out" && grep -q "AF_UNIX): opened" <<<"$out" && grep -q "AF_INET6): opened" <<<"$out"' \
	    "$(grep -m1 '1<<32' <<<"$out")" "$(rec vs)" \
	    "$(tr '\n' ';' <<<"$out" | cut -c1-190)"
}

# --- the seal, re-checked while the sandbox lives --------------------------------
# seal_tamper PFX PORT EVWORD CHANGE...: run CHANGE (iptables arguments,
# one call per ";"-separated group) in $MAIN's namespace as root on the
# host, then exec connect.py to PORT of the proxy's address twice
# ($T/PFX.json, then PFX2); the rules are put back if the first exec ran.
# Sets seal_ev (seal_drift events of $MAIN holding EVWORD) and seal_mpid.
seal_tamper() {
	local pfx=$1 port=$2 word=$3 saved rc
	shift 3
	seal_mpid=$(docker inspect -f '{{.State.Pid}}' "sandgate-$MAIN")
	saved=$(nsenter -t "$seal_mpid" -n iptables-save -t filter)
	while [ $# -gt 0 ]; do
		local args=()
		while [ $# -gt 0 ] && [ "$1" != ";" ]; do args+=("$1"); shift; done
		[ $# -gt 0 ] && shift
		nsenter -t "$seal_mpid" -n iptables "${args[@]}"
	done
	x "$pfx" "$MAIN" --timeout 20 -- python3 /workspace/.attacks/connect.py "$PROXY_IP" "$port"
	seal_ev=$(grep -h '"sandbox.seal_drift"' "$SANDGATE_RECORD_DIR/runs.jsonl" 2>/dev/null | grep "$MAIN" | grep -c -- "$word")
	rc=${pfx}_rc
	[ "${!rc}" = 125 ] || printf '%s\n' "$saved" | nsenter -t "$seal_mpid" -n iptables-restore
	x "${pfx}2" "$MAIN" --timeout 20 -- python3 /workspace/.attacks/connect.py "$PROXY_IP" "$port"
}

atk_sealdrift() {
	seal_tamper sd 1 "$MAIN" -F
	verdict "seal flushed from the host: the next exec refuses" \
	    '[ "$sd_rc" = 125 ] && grep -q "network seal" "$T/sd.err" && [ "${seal_ev:-0}" -ge 1 ] && [ "$sd2_rc" != 0 ]' \
	    "exit $sd_rc; $(grep -m1 -o 'sandgate: refused: the network seal[^(]*([^)]*)' "$T/sd.err")" \
	    "sandbox.seal_drift events: ${seal_ev:-0}" \
	    "the exec after: $(j sd2 'o["stdout"].strip()') (probed and sealed again)"
}

# One ACCEPT more, for ports 8000-9000 of the proxy's address (in and out):
# the behaviour probes (port 1 refused, the resolver refused, the proxy's
# port answers) all still pass, so only the comparison of the rules in
# force with the seal's catches it.
atk_sealmore() {
	seal_tamper sm 8080 8000:9000 \
	    -I OUTPUT 1 -d "$PROXY_IP/32" -p tcp -m tcp --dport 8000:9000 -j ACCEPT \; \
	    -I INPUT 1 -s "$PROXY_IP/32" -p tcp -m tcp --sport 8000:9000 -j ACCEPT
	verdict "seal: one more rule lets ports 8000-9000 through" \
	    '[ "$sm_rc" = 125 ] && grep -q "network seal" "$T/sm.err" && [ "${seal_ev:-0}" -ge 1 ] && [ "$sm2_rc" != 0 ] && ! nsenter -t "$seal_mpid" -n iptables-save -t filter | grep -q 8000:9000' \
	    "exit $sm_rc; $(grep -m1 -o 'sandgate: refused: the network seal.*' "$T/sm.err" | cut -c1-160)" \
	    "sandbox.seal_drift events naming the rule: ${seal_ev:-0}" \
	    "the command: $(j sm 'o["stdout"].strip()' || echo 'did not run'); the exec after: $(j sm2 'o["stdout"].strip()') (sealed again)"
}

# --- 1f. the init under memory pressure; 1g. another exec's memory kill --------
# A process with almost no RSS (inside/memfd.c, built static without libc)
# fills a memfd up to --memory: the memory is the cgroup's, not the
# process's, so by RSS alone the memory cgroup's OOM killer would take the
# init (about 700 KB) and the container with it. sandgate lowers the init's
# oom_score_adj from the host at each start (sandbox_oom_init). runc only:
# gVisor ends the whole sandbox at its memory limit (docs/guarantees.md).
atk_oominit() {
	local state init mine apid
	oom_filler "1f init under memory pressure" OM || return
	x om0 "$OM" -- sh -c 'cat /proc/1/oom_score_adj /proc/self/oom_score_adj'
	init=$(j om0 'o["stdout"].split()[0]')
	mine=$(j om0 'o["stdout"].split()[1]')
	x oma "$OM" --timeout 30 -- /workspace/.memfd s 10 &
	apid=$!
	sleep 3
	x omb "$OM" --timeout 20 -- /workspace/.memfd m 1
	wait "$apid"
	state=$(docker inspect -f '{{.State.Status}}' "sandgate-$OM")
	verdict "1f init under memory pressure (memfd filler with no RSS, a concurrent exec)" \
	    '[ "$state" = running ] && [ "$(j oma "o[\"exit_code\"]")" = 0 ] && [ "$(j omb "o[\"oom_killed\"]")" = true ] && [ "${init:-1000}" -lt "${mine:-0}" ]' \
	    "filler: exit $(j omb 'o["exit_code"]'), $(notice omb 'command killed'); concurrent exec: exit $(j oma 'o["exit_code"]')" \
	    "$(rec omb); concurrent: $(rec oma)" \
	    "container after both: $state; oom_score_adj init $init, a command $mine"
	"$SG" discard "$OM" >/dev/null 2>&1
}

# 1f': as 1f, but the filler first lowers its own oom_score_adj to 0, as
# low as the init's where root lacks CAP_SYS_RESOURCE (open item 25), and
# below the sleeping exec's 1000. By score alone the OOM killer takes the
# sleeping exec, then the init (its RSS is the larger): each exec runs in
# a memory cgroup of its own, whose limit the filler reaches first
# (cgroup.h), so the kernel chooses among the filler's processes only.
# The command can't move itself out: its cgroupfs is read-only.
atk_oomlow() {
	local state adj moved cg apid
	oom_filler "1f' filler at oom_score_adj 0" OL || return
	x ol0 "$OL" -- sh -c 'echo 0 >/proc/self/oom_score_adj; cat /proc/self/oom_score_adj; { echo $$ >/sys/fs/cgroup/memory/cgroup.procs; } 2>/dev/null && echo moved || echo refused; grep ":memory:" /proc/self/cgroup'
	adj=$(j ol0 'o["stdout"].split()[0]')
	moved=$(j ol0 'o["stdout"].split()[1]')
	cg=$(j ol0 'o["stdout"].split()[2]')
	x ola "$OL" --timeout 30 -- /workspace/.memfd s 10 &
	apid=$!
	sleep 3
	x olb "$OL" --timeout 20 -- sh -c 'echo 0 >/proc/self/oom_score_adj && exec /workspace/.memfd m 1'
	wait "$apid"
	state=$(docker inspect -f '{{.State.Status}}' "sandgate-$OL")
	verdict "1f' filler at oom_score_adj 0 (memfd to --memory beside a sleeping exec)" \
	    '[ "$state" = running ] && [ "$(j ola "o[\"exit_code\"]")" = 0 ] && [ "$(j olb "o[\"oom_killed\"]")" = true ] && [ "$adj" = 0 ] && [ "$moved" = refused ]' \
	    "filler: exit $(j olb 'o["exit_code"]'), $(notice olb 'command killed'); sleeping exec: exit $(j ola 'o["exit_code"]')" \
	    "$(rec olb); sleeping: $(rec ola)" \
	    "container after both: $state; the command's oom_score_adj $adj, its move to the container's memory cgroup $moved, its own ${cg##*:}"
	"$SG" discard "$OL" >/dev/null 2>&1
}

# Rows 1f, 1f': runc only (gVisor ends the whole sandbox at its memory
# limit, documented); inside/memfd.c built, sandbox NAME created with
# --memory 48m and the filler in its workspace as .memfd. 0, or 1 with the
# row written.
oom_filler() {
	local label=$1 var=$2
	if [ "$RUNTIME" = runsc ]; then
		row "$label" "n/a (gVisor)" "gVisor ends the whole sandbox at its memory limit (documented)" "" ""
		return 1
	fi
	if ! gcc -O2 -static -nostdlib -fno-stack-protector -fno-builtin \
	    -o "$T/memfd" "$HERE/inside/memfd.c" 2>"$T/memfd.err"; then
		row "$label" NO "cannot build memfd.c: $(head -c 200 "$T/memfd.err")" "" ""
		return 1
	fi
	if ! create "$var" "$T/project" --network none --memory 48m; then
		row "$label" NO "create failed" "" ""
		return 1
	fi
	install -m 0755 "$T/memfd" "$SANDGATE_STATE/sandboxes/${!var}/work/.memfd"
}

# 1h: another exec's memory cgroup by a forged run marker. Exec A
# (inside/markforge.c, built static here) watches /proc for the join of
# any other exec (`sandgate-probe join RUN`, readable by the sandbox user),
# writes that RUN into its own SANDGATE_RUN in place and checks whether it
# was moved into sandgate-cmds/RUN, beside the victim's command (sharing
# its limit, its OOM kills, its record), and opens the waiting join's
# /proc/PID/mem for writing (a payload there runs beside the init, in the
# container's memory cgroup, before the move: atk16s F3). An open counts
# only when the join's own argv reads back through it: one that lands
# just after the join ran the victim's command holds that command's
# memory (dumpable as any command, already in the victim's cgroup), and
# is shown apart. Six victims or more (up to 20, until A saw six joins)
# run one after the other: each must run in its own run's cgroup, and A
# in none of theirs. A failing row names each victim that was not, with
# its exit and its last words.
# runc only (gVisor runs no join: one host process for the sandbox).
atk_markforge() {
	local label="1h another exec's memory cgroup by a forged run marker"
	local fpid i bad=0 seen moved writable late cg run badsaw=
	if [ "$RUNTIME" = runsc ]; then
		row "$label" "n/a (gVisor)" "gVisor runs no join: its processes are not the host's (documented)" "" ""
		return
	fi
	if ! gcc -O2 -static -o "$T/markforge" "$HERE/inside/markforge.c" 2>"$T/markforge.err"; then
		row "$label" NO "cannot build markforge.c: $(head -c 200 "$T/markforge.err")" "" ""
		return
	fi
	if ! create MF "$T/project" --network none --memory 64m; then
		row "$label" NO "create failed" "" ""
		return
	fi
	install -m 0755 "$T/markforge" "$SANDGATE_STATE/sandboxes/$MF/work/.markforge"
	x mf "$MF" --timeout 60 -- /workspace/.markforge 50 6 &
	fpid=$!
	sleep 1
	# six victims, more while the forger has not seen six joins (a join
	# lives about a millisecond: a busy host lets the forger miss some)
	i=0
	while [ "$i" -lt 6 ] || { [ "$i" -lt 20 ] && kill -0 "$fpid" 2>/dev/null; }; do
		i=$((i + 1))
		x "mfv$i" "$MF" --timeout 30 -- sh -c 'sleep 1; grep :memory: /proc/self/cgroup'
		cg=$(j "mfv$i" 'o["stdout"].strip()')
		run=$(j "mfv$i" 'o["run_id"]')
		case "$cg" in
		*/sandgate-cmds/"$run") ;;
		*)
			bad=$((bad + 1))
			badsaw="$badsaw #$i exit $(j "mfv$i" 'o["exit_code"]') in '${cg##*:}' $(tail -c 120 "$T/mfv$i.err");" ;;
		esac
	done
	wait "$fpid"
	seen=$(j mf 'o["stdout"]' | sed -n 's/^seen \([0-9]*\) moved.*/\1/p')
	moved=$(j mf 'o["stdout"]' | sed -n 's/^seen [0-9]* moved \([0-9]*\) .*/\1/p')
	writable=$(j mf 'o["stdout"]' | sed -n 's/^seen .* writable \([0-9]*\)$/\1/p')
	late=$(j mf 'o["stdout"]' | sed -n 's/^late \([0-9]*\)$/\1/p')
	verdict "$label" \
	    '[ "${seen:-0}" -ge 1 ] && [ "${moved:-1}" = 0 ] && [ "${writable:-1}" = 0 ] && [ "$bad" = 0 ]' \
	    "forger: joins seen ${seen:-?}, moved into one ${moved:-?}, join memory writable ${writable:-?} (+${late:-?} once a command), exit $(j mf 'o["exit_code"]')" \
	    "$(rec mf)" \
	    "victims outside their own run's cgroup: $bad of $i;${badsaw:- last victim: ${cg##*:}}"
	"$SG" discard "$MF" >/dev/null 2>&1
}

# 1g: exec A waits and exits 0 while exec B goes over --memory: the memory
# cgroup's oom_kill counter is the container's, so only the kernel's record
# of whom it killed (oomlog.h) may make A's result a memory kill. Under
# gVisor the whole sandbox stops at the limit (documented): A must then say
# that its container stopped, and why.
atk_oomattr() {
	local apid ok
	ok='[ "$(j oaa "o[\"exit_code\"]")" = 0 ] && [ "$(j oaa "o[\"oom_killed\"]")" = false ] && ! grep -q "memory limit" "$T/oaa.err"'
	[ "$RUNTIME" = runsc ] &&
	    ok='[ "$(j oaa "o[\"container_stopped\"]")" = true ] && grep -q "gVisor ends the whole sandbox at its memory limit" "$T/oaa.err"'
	if ! create OA "$T/project" --network none --memory 64m; then
		row "1g another exec's memory kill" NO "create failed" "" ""
		return
	fi
	# A outlives B's start by 6 s whatever the host's load (B marks its
	# start in the workspace), so B's memory kill always falls inside A.
	x oaa "$OA" --timeout 40 -- sh -c 'echo A started; i=0
	    while [ ! -e /workspace/.oab-started ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
	    sleep 6; echo A done' &
	apid=$!
	sleep 1
	x oab "$OA" --timeout 30 -- sh -c ': > /workspace/.oab-started; exec python3 /workspace/.attacks/memhog.py 512'
	wait "$apid"
	verdict "1g another exec's memory kill is not this command's" \
	    "$ok"' && [ "$(j oab "o[\"exit_code\"]")" = 137 ] && [ "$(j oab "o[\"oom_killed\"]")" = true ]' \
	    "A: exit $(j oaa 'o["exit_code"]') $(notice oaa 'command killed'); B: exit $(j oab 'o["exit_code"]') $(notice oab 'command killed')" \
	    "A: $(rec oaa); B: $(rec oab)" \
	    "A printed: $(j oaa 'o["stdout"].strip()' | tr '\n' ' ')"
	"$SG" discard "$OA" >/dev/null 2>&1
}
