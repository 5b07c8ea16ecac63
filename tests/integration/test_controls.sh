#!/usr/bin/env bash
# test_controls.sh: the fail-closed probe and the disk quota, for real.
#
# Runs sandgate-probe in containers made with the docker CLI, once with
# every control a sandbox gets (must pass) and once per missing or wrong
# control (must fail, naming that control), then checks the idle mode and
# the workspace disk quota (through `sandgate doctor`, which mounts a
# 16 MiB image and fills it) and `sandgate gc` on a staged crash. Needs
# Docker; the disk and gc parts need root.
set -u

SRC=${SANDGATE_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
BIN=${SANDGATE_BIN:-$SRC/build/bin}
SG=$BIN/sandgate
PROBE=$BIN/sandgate-probe
# common.sh builds the test image (sg_test_image); this script keeps its
# own counters, so its ok/fail helpers are defined after sourcing.
. "$SRC/tests/lib/common.sh"
pass=0
fail=0
work=$(mktemp -d /tmp/sg-controls.XXXXXX)
idle_name=sg-controls-idle-$$

cleanup() {
	docker rm -f "$idle_name" >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT

ok() { pass=$((pass + 1)); echo "ok   $*"; }
not_ok() { fail=$((fail + 1)); echo "FAIL $*"; }

if ! docker info >/dev/null 2>&1; then
	echo "skip: docker not reachable"
	echo "0 passed, 0 failed"
	exit 0
fi
for f in "$SG" "$PROBE"; do
	if [ ! -x "$f" ]; then
		echo "missing $f (build first)"
		echo "0 passed, 1 failed"
		exit 1
	fi
done
IMAGE=sandgate-test/busybox:latest
sg_test_image || { echo "cannot build $IMAGE"; echo "0 passed, 1 failed"; exit 1; }

# Every control a sandbox gets; each case below removes or changes one.
STRICT=(--read-only --cap-drop ALL --security-opt no-new-privileges
	--user 1000:1000 --memory 128m --memory-swap 128m --pids-limit 64
	--cpus 1 --network none --tmpfs /tmp:rw,noexec,nosuid,size=16m)
EXPECT=(--expect-memory 128m --expect-pids 64 --expect-cpus 1)

# run_probe OUT DOCKER-FLAGS...: the probe's report from a fresh container.
run_probe() {
	local out=$1
	shift
	docker run --rm "$@" -v "$PROBE:/.sandgate/probe:ro" "$IMAGE" \
	    /.sandgate/probe check >"$out" 2>"$out.err"
}

# case_fails NAME WORDS DOCKER-FLAGS...: the check must fail with WORDS.
case_fails() {
	local name=$1 words=$2 out verdict
	shift 2
	out=$work/$name.json
	if ! run_probe "$out" "$@"; then
		not_ok "$name: docker run failed: $(head -c 300 "$out.err")"
		return
	fi
	verdict=$("$SG" doctor --check-probe-json "$out" "${EXPECT[@]}")
	if [ $? -eq 1 ] && grep -qF -- "$words" <<<"$verdict"; then
		ok "$name: $verdict"
	else
		not_ok "$name: expected '$words', got '$verdict'"
	fi
}

# strict: every control holds.
out=$work/strict.json
if run_probe "$out" "${STRICT[@]}"; then
	verdict=$("$SG" doctor --check-probe-json "$out" "${EXPECT[@]}")
	if [ $? -eq 0 ]; then ok "strict: $verdict"; else not_ok "strict: $verdict"; fi
else
	not_ok "strict: docker run failed: $(head -c 300 "$out.err")"
fi

# without [FLAG...]: STRICT minus the given flags (each with its value).
without() {
	local skip=" $* " i=0 f
	while [ $i -lt ${#STRICT[@]} ]; do
		f=${STRICT[$i]}
		case $f in
		--read-only|--cap-drop|--security-opt|--user|--memory|--memory-swap|--pids-limit|--cpus|--network|--tmpfs)
			if [[ $skip == *" $f "* ]]; then
				[ "$f" = --read-only ] || i=$((i + 1))
			else
				printf '%s\n' "$f"
				[ "$f" = --read-only ] || printf '%s\n' "${STRICT[$((i + 1))]}"
				[ "$f" = --read-only ] || i=$((i + 1))
			fi ;;
		esac
		i=$((i + 1))
	done
}
mapfile -t no_capdrop < <(without --cap-drop)
mapfile -t no_ro < <(without --read-only)
mapfile -t no_nnp < <(without --security-opt)
mapfile -t no_user < <(without --user)
mapfile -t no_mem < <(without --memory --memory-swap)
mapfile -t no_swap < <(without --memory-swap)
mapfile -t no_pids < <(without --pids-limit)
mapfile -t no_cpus < <(without --cpus)
mapfile -t no_net < <(without --network)
mapfile -t no_tmp < <(without --tmpfs)

case_fails no-cap-drop "capabilities not empty" "${no_capdrop[@]}"
case_fails privileged "capabilities not empty" "${no_capdrop[@]}" --privileged
mapfile -t no_capdrop_user < <(without --cap-drop --user)
case_fails root-default-caps "effective capabilities not empty" \
    "${no_capdrop_user[@]}" --user 0:0
case_fails root-user "sandbox runs as root (uid 0)" "${no_user[@]}"
case_fails no-read-only "root filesystem not mounted read-only" "${no_ro[@]}"
case_fails no-nnp "no_new_privs not set" "${no_nnp[@]}"
case_fails seccomp-off "seccomp filter not active" "${STRICT[@]}" \
    --security-opt seccomp=unconfined
case_fails other-memory "memory limit is 256 MiB, expected 128 MiB" \
    "${no_mem[@]}" --memory 256m --memory-swap 256m
case_fails no-memory "memory limit not set" "${no_mem[@]}"
if grep -q '"memsw_max":[0-9]' "$work/strict.json" 2>/dev/null; then
	case_fails swap "swap allowed" "${no_swap[@]}" --memory-swap 256m
else
	echo "skip swap: no swap accounting on this host"
fi
case_fails other-pids "pids limit is 100, expected 64" "${no_pids[@]}" \
    --pids-limit 100
case_fails other-cpus "cpu limit is 2.00 cpus" "${no_cpus[@]}" --cpus 2
case_fails network "network interface 'eth0' present" "${no_net[@]}"
case_fails no-tmpfs "/tmp is not a separate mount" "${no_tmp[@]}"
case_fails tmp-exec "/tmp not mounted noexec" "${no_tmp[@]}" \
    --tmpfs /tmp:rw,exec,nosuid
case_fails docker-sock "Docker socket reachable" "${STRICT[@]}" \
    -v /var/run/docker.sock:/var/run/docker.sock:ro

# Garbage from inside never passes.
printf 'not json' >"$work/garbage.json"
verdict=$("$SG" doctor --check-probe-json "$work/garbage.json" "${EXPECT[@]}")
if [ $? -eq 1 ]; then ok "garbage: $verdict"; else not_ok "garbage: $verdict"; fi

# idle: PID 1 of a session container; reaps orphans, stops on SIGTERM.
if docker run -d --name "$idle_name" "${STRICT[@]}" \
    -v "$PROBE:/.sandgate/probe:ro" "$IMAGE" /.sandgate/probe idle >/dev/null; then
	docker exec "$idle_name" sh -c '(sleep 0.2 &) ; exit 0'
	sleep 1
	zombies=$(docker exec "$idle_name" ps -o stat | grep -c '^Z')
	if [ "$zombies" -eq 0 ]; then ok "idle reaps orphans"; else not_ok "idle left $zombies zombies"; fi
	# not dumpable: the sandbox's user can't write, trace or read it
	mem=$(docker exec "$idle_name" /.sandgate/probe check 2>/dev/null |
	    python3 -c 'import json, sys; print(json.load(sys.stdin).get("init_mem"))' 2>&1)
	envr=$(docker exec "$idle_name" cat /proc/1/environ 2>&1 >/dev/null)
	case "$mem" in
	EACCES|EPERM) ok "idle is not dumpable: /proc/1/mem for writing: $mem; environ: $envr" ;;
	*) not_ok "idle is writable from inside: /proc/1/mem for writing: $mem" ;;
	esac
	start=$(date +%s)
	docker stop -t 10 "$idle_name" >/dev/null
	took=$(($(date +%s) - start))
	code=$(docker inspect -f '{{.State.ExitCode}}' "$idle_name")
	if [ "$code" = 0 ] && [ "$took" -lt 5 ]; then
		ok "idle exits 0 on SIGTERM (${took}s)"
	else
		not_ok "idle: exit $code after ${took}s"
	fi
else
	not_ok "idle: container did not start"
fi

# Disk quota: doctor mounts a 16 MiB image in the state root and fills it.
if [ "$(id -u)" -eq 0 ]; then
	state=$work/state
	before=$(losetup -a | grep -c "$state" || true)
	report=$(SANDGATE_STATE=$state "$SG" doctor --image "$IMAGE")
	line=$(grep -E '^[A-Z]+ +disk ' <<<"$report")
	if [[ $line == OK* ]]; then ok "disk: $line"; else not_ok "disk: $line"; fi
	# doctor's own test container (made through the Engine API) passes.
	line=$(grep -E '^[A-Z]+ +limits ' <<<"$report")
	if [[ $line == OK* ]]; then ok "doctor limits: $line"; else not_ok "doctor limits: $line"; fi
	# the seal, loaded as create loads it, must be seen to make the difference
	line=$(grep -E '^[A-Z]+ +sealed ' <<<"$report")
	if [[ $line == OK* ]]; then ok "doctor seal: $line"; else not_ok "doctor seal: $line"; fi
	nets=$(docker network ls -q --filter label=sandgate.doctor | wc -l)
	ctrs=$(docker ps -aq --filter label=sandgate.doctor | wc -l)
	if [ "$nets" -eq 0 ] && [ "$ctrs" -eq 0 ]; then
		ok "doctor: no test network or container left behind"
	else
		not_ok "doctor: $nets test networks and $ctrs test containers left"
	fi
	after=$(losetup -a | grep -c "$state" || true)
	left=$(find "$state" -mindepth 1 -name '.doctor-disk-*' | wc -l)
	if [ "$before" -eq 0 ] && [ "$after" -eq 0 ] && [ "$left" -eq 0 ]; then
		ok "disk: no loop device or folder left behind"
	else
		not_ok "disk: $after loop devices and $left folders left"
	fi
else
	echo "skip disk: needs root"
fi

# gc: what a crash leaves (a container without folder, a folder without
# container with its disk still mounted, a create killed after its container
# started) goes; a live sandbox stays.
gc_test() {
	local state=$work/gc live=sbx_0123456789abcdef01234567
	local orphan=sbx_89abcdef0123456789abcdef ghost=sbx_fedcba9876543210fedcba98
	local half=sbx_aaaaaaaaaaaaaaaaaaaaaaaa
	local out out2
	mkdir -p "$state/sandboxes/$live" "$state/sandboxes/$orphan/work" \
	    "$state/sandboxes/$orphan/snapshot/sub" "$state/sandboxes/$half"
	touch "$state/sandboxes/$live/lock" "$state/sandboxes/$orphan/lock" \
	    "$state/sandboxes/$orphan/snapshot/sub/f" "$state/sandboxes/$half/lock"
	cat >"$state/sandboxes/$live/meta.json" <<-EOF
	{"id": "$live", "created": "2026-11-30T00:00:00Z", "source": "$work",
	 "image": "$IMAGE", "container": "sg-controls-live-$$", "network": "none",
	 "cpus": 1.0, "memory": 134217728, "pids": 64, "disk": 16777216,
	 "tmp_size": 16777216, "timeout": 60}
	EOF
	chmod 0555 "$state/sandboxes/$orphan/snapshot/sub" "$state/sandboxes/$orphan/snapshot"
	truncate -s 16M "$state/sandboxes/$orphan/disk.img"
	mkfs.ext4 -q -F "$state/sandboxes/$orphan/disk.img"
	mount -o loop "$state/sandboxes/$orphan/disk.img" "$state/sandboxes/$orphan/work" || {
		not_ok "gc: cannot set up a loop mount"; return; }
	docker create --label sandgate.sandbox=$live --label sandgate.state="$state" \
	    --name sg-controls-live-$$ "$IMAGE" true >/dev/null
	docker create --label sandgate.sandbox=$ghost --label sandgate.state="$state" \
	    --name sg-controls-ghost-$$ "$IMAGE" true >/dev/null
	docker create --label sandgate.sandbox=$half --label sandgate.state="$state" \
	    --name sg-controls-half-$$ "$IMAGE" true >/dev/null
	# Another state root's sandbox: never this gc's business.
	docker create --label sandgate.sandbox=$ghost --label sandgate.state="$work/other" \
	    --name sg-controls-other-$$ "$IMAGE" true >/dev/null
	out=$(SANDGATE_STATE=$state "$SG" gc --dry-run 2>&1)
	if grep -q "would remove container .* (sandbox $ghost" <<<"$out" &&
	    grep -q "would remove sandbox folder $orphan" <<<"$out" &&
	    grep -q "would remove sandbox $half (its create or run was interrupted)" <<<"$out" &&
	    [ -d "$state/sandboxes/$orphan" ] && [ -d "$state/sandboxes/$half" ] &&
	    docker inspect sg-controls-ghost-$$ >/dev/null 2>&1; then
		ok "gc --dry-run lists and keeps"
	else
		not_ok "gc --dry-run: $out"
	fi
	out=$(SANDGATE_STATE=$state "$SG" gc 2>&1)
	out2=$(SANDGATE_STATE=$state "$SG" gc 2>&1)
	if grep -q "removed container .* (sandbox $ghost" <<<"$out" &&
	    grep -q "removed sandbox folder $orphan" <<<"$out" &&
	    grep -q "removed sandbox $half (its create or run was interrupted)" <<<"$out" &&
	    [ ! -e "$state/sandboxes/$orphan" ] && [ -d "$state/sandboxes/$live" ] &&
	    [ ! -e "$state/sandboxes/$half" ] &&
	    ! docker inspect sg-controls-half-$$ >/dev/null 2>&1 &&
	    ! docker inspect sg-controls-ghost-$$ >/dev/null 2>&1 &&
	    docker inspect sg-controls-live-$$ >/dev/null 2>&1 &&
	    docker inspect sg-controls-other-$$ >/dev/null 2>&1 &&
	    ! losetup -a | grep -q "$state" && [ "$out2" = "nothing to remove" ]; then
		ok "gc removes leftovers, keeps the live sandbox, then finds nothing"
	else
		not_ok "gc: first run: $out; second run: $out2"
	fi
	umount "$state/sandboxes/$orphan/work" 2>/dev/null
	docker rm -f sg-controls-live-$$ sg-controls-ghost-$$ sg-controls-other-$$ \
	    sg-controls-half-$$ >/dev/null 2>&1
}
if [ "$(id -u)" -eq 0 ]; then
	gc_test
else
	echo "skip gc: needs root"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
