#!/usr/bin/env bash
# test_exec_stop_start.sh: a stop while an exec is starting leaves the
# sandbox usable (atk38b F1). SIGTERM to `sandgate exec` just after its
# run's .active marker appeared lands while runc's `runc init` for the
# exec enters the container: the kill's freeze then catches that process
# inside the container's cgroups. With Docker's pause as the freeze, runc
# exec never finished, the unpause waited behind it in dockerd for about
# 300 s and the container stayed paused, every later exec hanging. The
# stop is swept over delays after the marker (the window is a few ms
# wide, where it falls depends on the host's speed), each time checking
# that the exec ends, the container is neither paused (Docker) nor frozen
# (its freezer cgroup) and the next exec runs. The same for a kill of one
# exec while another starts (the stop of exec A while exec B's marker is
# fresh): B ends too, and the sandbox stays usable.
# Last: a container left frozen by a sandgate killed during its kill
# (frozen by hand here, Docker knowing nothing) is thawed by the next exec.
set -u
SRC=${SANDGATE_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRC/tests/lib/common.sh"

sg_require_docker
sg_setup
sg_test_image || { echo "cannot build the test image"; exit 1; }
sg_test_sandbox
CID=$(docker ps -q --no-trunc -f "name=sandgate-$SBX")
RUNS=$SANDGATE_STATE/sandboxes/$SBX/runs

# The container's freezer: "v1 DIR" (freezer.state) or "v2 DIR"
# (cgroup.freeze), from its init's /proc/PID/cgroup.
freezer() {
	local pid line
	pid=$(docker inspect -f '{{.State.Pid}}' "$CID")
	line=$(grep -E '^[0-9]+:freezer:' "/proc/$pid/cgroup")
	if [ -n "$line" ]; then
		echo "v1 /sys/fs/cgroup/freezer${line#*:freezer:}"
		return
	fi
	line=$(grep -E '^0::' "/proc/$pid/cgroup")
	echo "v2 /sys/fs/cgroup${line#0::}"
}
read -r FZV FZDIR <<<"$(freezer)"

# "frozen" or "thawed", as the kernel has it.
fz_state() {
	if [ "$FZV" = v1 ]; then
		case $(cat "$FZDIR/freezer.state") in
		THAWED) echo thawed ;;
		*) echo frozen ;;
		esac
	else
		case $(cat "$FZDIR/cgroup.freeze") in
		0) echo thawed ;;
		*) echo frozen ;;
		esac
	fi
}

# Thaw by hand (what a hung exec left before the fix).
fz_recover() {
	if [ "$FZV" = v1 ]; then
		echo THAWED >"$FZDIR/freezer.state"
	else
		echo 0 >"$FZDIR/cgroup.freeze"
	fi
}
sg_on_exit "fz_recover"

fz_freeze() {
	if [ "$FZV" = v1 ]; then
		echo FROZEN >"$FZDIR/freezer.state"
	else
		echo 1 >"$FZDIR/cgroup.freeze"
	fi
}

# stop.py MODE DELAY_MS: MODE self (SIGTERM to the exec that starts) or
# other (exec A runs `sleep 30`; exec B starts; A is stopped). The stop
# goes DELAY_MS after the starting exec's .active marker appeared. Prints
# "rcA rcB" (rcB "-" in self mode; "hung" for an exec still running 30 s
# after the stop; the hung one is thawed by hand so the test goes on,
# after what it waited for is shown on stderr: the freezer's state, the
# processes of sandgate and the runtime with their kernel stacks, and
# then the hung exec's own stderr).
cat >"$SG_TMP/stop.py" <<'EOF'
import os, signal, subprocess, sys, time
sg, sbx, runs, mode, delay = sys.argv[1:6]
delay = float(delay) / 1000
thaw, diag, tmp = sys.argv[6:9]

def exec_(argv):
    err = open(os.path.join(tmp, "stop-%d.err" % time.monotonic_ns()), "w+")
    p = subprocess.Popen([sg, "exec", sbx, "--timeout", "60", "--"] + argv,
                         stdout=subprocess.DEVNULL, stderr=err)
    p.err = err
    return p

def actives():
    return set(n for n in os.listdir(runs) if n.endswith(".active"))

def wait_new(before, proc):
    end = time.monotonic() + 30
    while time.monotonic() < end and proc.poll() is None:
        if actives() - before:
            return
        time.sleep(0.0002)

def ended(proc):
    try:
        return str(proc.wait(timeout=30))
    except subprocess.TimeoutExpired:
        subprocess.run(["bash", diag], stdout=sys.stderr)
        subprocess.run(["sh", "-c", thaw])
        proc.wait()
        proc.err.seek(0)
        sys.stderr.write("the hung exec's stderr:\n" + proc.err.read())
        return "hung"

a = None
if mode == "other":
    before = actives()
    a = exec_(["sleep", "30"])
    wait_new(before, a)
    time.sleep(0.3)         # A's command runs
before = actives()
b = exec_(["sleep", "3"] if mode == "self" else ["true"])
wait_new(before, b)
time.sleep(delay)
(b if mode == "self" else a).send_signal(signal.SIGTERM)
if mode == "self":
    print(ended(b), "-")
else:
    print(ended(a), ended(b))
EOF

cat >"$SG_TMP/diag.sh" <<EOF
echo "an exec hung: the freezer $FZDIR"
cat "$FZDIR/freezer.state" "$FZDIR/cgroup.freeze" 2>/dev/null
ps -eo pid,ppid,stat,wchan:24,etimes,comm,args |
    awk '\$6 == "sandgate" || \$6 ~ /^(runc|containerd-shim|sleep|true)/' | cut -c1-200
for p in \$(pgrep -f 'sandgate exec'); do
	echo "sandgate exec \$p:"
	cat /proc/\$p/stack 2>/dev/null
	ls -l /proc/\$p/fd | grep -F freeze
done
EOF
if [ "$FZV" = v1 ]; then
	THAW="echo THAWED >$FZDIR/freezer.state"
else
	THAW="echo 0 >$FZDIR/cgroup.freeze"
fi
hung=0 frozen=0 paused=0 nextbad=0 runs=0 bstates=""
for mode in self other; do
	for d in 0 2 4 6 8 10 12 14 16 18 20 24 28 32 40 50; do
		runs=$((runs + 1))
		read -r rca rcb <<<"$(python3 "$SG_TMP/stop.py" "$SG" "$SBX" \
		    "$RUNS" "$mode" "$d" "$THAW" "$SG_TMP/diag.sh" "$SG_TMP")"
		[ "$rca" = hung ] || [ "$rcb" = hung ] && {
			hung=$((hung + 1))
			echo "$mode delay $d ms: an exec still ran 30 s after" \
			    "the stop (A $rca, B $rcb)"
		}
		[ "$mode" = other ] && bstates="$bstates $rcb"
		if [ "$(fz_state)" != thawed ]; then
			frozen=$((frozen + 1))
			echo "$mode delay $d ms: the container is left frozen"
			fz_recover
		fi
		if [ "$(docker inspect -f '{{.State.Paused}}' "$CID")" != false ]
		then
			paused=$((paused + 1))
			echo "$mode delay $d ms: Docker has the container paused"
			# Docker unpauses only what the kernel has frozen
			fz_freeze
			timeout 60 docker unpause "$CID" >/dev/null 2>&1
			fz_recover
		fi
		sg_run n timeout 60 "$SG" exec "$SBX" --timeout 30 -- echo next
		if [ "$n_rc" != 0 ] || [ "$n_out" != next ]; then
			nextbad=$((nextbad + 1))
			echo "$mode delay $d ms: the next exec: rc $n_rc," \
			    "$n_err"
		fi
	done
done
echo "concurrent starts (B) ended with:$bstates"
assert_eq "every stopped exec ended ($runs stops)" 0 "$hung"
assert_eq "no stop left the container frozen" 0 "$frozen"
assert_eq "no stop left the container paused (Docker)" 0 "$paused"
assert_eq "the exec after each stop ran" 0 "$nextbad"

# A container frozen behind Docker's back (a sandgate killed between
# the kill's freeze and its thaw) is thawed by the next exec.
fz_freeze
sg_run n timeout 60 "$SG" exec "$SBX" --timeout 30 -- echo thawed
assert_eq "an exec after a freeze left behind: exit 0" 0 "$n_rc"
assert_eq "an exec after a freeze left behind: its output" thawed "$n_out"
assert_eq "the container is thawed" thawed "$(fz_state)"

# The other way round (atk39d F1): Docker has the container paused but
# its freezer was thawed behind Docker's back (a diff's unpause that
# timed out, then another exec's kill froze and thawed the cgroup).
# Docker refuses every exec of a paused container and runc refuses its
# unpause ("container not paused"): every exec failed with 125 until the
# sandbox was discarded. The next exec unpauses it.
timeout 60 docker pause "$CID" >/dev/null
fz_recover
sg_run n timeout 60 "$SG" exec "$SBX" --timeout 30 -- echo unpaused
assert_eq "an exec after a pause thawed behind Docker: exit 0" 0 "$n_rc"
assert_eq "an exec after a pause thawed behind Docker: its output" \
    unpaused "$n_out"
assert_eq "Docker has the container running" false \
    "$(docker inspect -f '{{.State.Paused}}' "$CID")"
assert_eq "the container is thawed, as Docker has it" thawed "$(fz_state)"

# A diff waiting for the container's freeze lock, which another sandgate
# command holds (an apply copying, an exec's kill), stops at SIGINT with
# 130: its freeze had caught the signal and waited on until the lock was
# let go.
FZC=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["container"])' "$SANDGATE_STATE/sandboxes/$SBX/meta.json")
mkdir -p "$SANDGATE_STATE/freeze"
flock -x "$SANDGATE_STATE/freeze/$FZC" sleep 30 &
H=$!
sleep 0.3
"$SG" diff "$SBX" >/dev/null 2>"$SG_TMP/diff-int.err" &
D=$!
sleep 1
kill -INT "$D"
for i in 1 2 3 4 5 6 7 8 9 10; do
	kill -0 "$D" 2>/dev/null || break
	sleep 0.3
done
if kill -0 "$D" 2>/dev/null; then
	fail "a diff waiting for the freeze lock stops at SIGINT" "it still waits 3 s later"
	kill "$H"
	wait "$D"
else
	wait "$D"
	assert_eq "a diff waiting for the freeze lock stops at SIGINT: 130" 130 "$?"
	kill "$H"
fi
wait "$H" 2>/dev/null
sg_run n timeout 60 "$SG" diff "$SBX"
assert_eq "the next diff runs" 0 "$n_rc"

sg_summary
