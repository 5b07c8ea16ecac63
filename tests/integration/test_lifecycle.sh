#!/bin/bash
# test_lifecycle.sh: create / exec / discard / list / run against real
# Docker with the real binaries ($SANDGATE_BIN) and the tiny test image.
set -u
SRC=${SANDGATE_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRC/tests/lib/common.sh"

sg_require_docker
sg_setup
sg_test_image || { echo "cannot build the test image"; exit 1; }
IMG=(--image "$SG_TEST_IMAGE" --network none)

mkdir -p "$SG_TMP/src/sub"
echo hello >"$SG_TMP/src/a.txt"
echo nested >"$SG_TMP/src/sub/b.txt"

# --- usage errors and an unreachable Docker --------------------------------
sg_run r "$SG" create "$SG_TMP/src" --no-such-flag
assert_eq "unknown flag exits 2" 2 "$r_rc"
sg_run r "$SG" exec --bogus sbx_000000000000000000000000 -- true
assert_eq "unknown exec flag exits 2" 2 "$r_rc"
sg_run r "$SG" exec sbx_000000000000000000000000
assert_eq "exec without a command exits 2" 2 "$r_rc"
sg_run r env DOCKER_HOST=unix:///nonexistent.sock "$SG" list
assert_eq "no Docker exits 125" 125 "$r_rc"
assert_eq "no Docker message" "sandgate: cannot reach Docker at unix:///nonexistent.sock (No such file or directory); start dockerd or set DOCKER_HOST" "$r_err"
sg_run r "$SG" create "$SG_TMP/src" --image sandgate-test/no-such-image
assert_eq "missing image exits 125" 125 "$r_rc"
assert_contains "missing image is named" "$r_err" "sandgate-test/no-such-image"
assert_contains "missing image suggests --image" "$r_err" "--image"

# --- create ----------------------------------------------------------------
sg_run r "$SG" create "$SG_TMP/src" "${IMG[@]}" --memory 64m --pids 64
assert_eq "create exits 0" 0 "$r_rc"
ID=$r_out
case "$ID" in
sbx_????????????????????????) ok "create prints an id" ;;
*) fail "create prints an id" "got '$ID'"; sg_summary; exit 1 ;;
esac
sg_on_exit "'$SG' discard '$ID'"
CNAME="sandgate-$ID"
hc=$(docker inspect -f '{{.Config.User}} {{.HostConfig.ReadonlyRootfs}} {{.HostConfig.CapDrop}} [{{index .HostConfig.SecurityOpt 0}}] {{.HostConfig.NetworkMode}} {{.HostConfig.Init}} {{.HostConfig.Memory}} {{.HostConfig.MemorySwap}} {{.HostConfig.PidsLimit}}' "$CNAME")
seccomp=$(docker inspect -f '{{index .HostConfig.SecurityOpt 1}}' "$CNAME")
SUID=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["uid"])' \
    "$SANDGATE_STATE/sandboxes/$ID/meta.json")
IUID=$((SUID + 65536))
assert_eq "session container hardening (the init runs as the init's uid)" \
    "$IUID:$IUID true [ALL] [no-new-privileges] none false 67108864 67108864 64" "$hc"
getent passwd "$IUID" >/dev/null && fail "no host account has the init's uid" ||
    ok "no host account has the init's uid"
[ "$SUID" -ge 1879048192 ] && [ "$SUID" -lt $((1879048192 + 65536)) ] &&
    ok "a uid of its own, in the documented range ($SUID)" ||
    fail "a uid of its own, in the documented range" "got $SUID"
getent passwd "$SUID" >/dev/null && fail "no host account has the sandbox's uid" ||
    ok "no host account has the sandbox's uid"
assert_eq "no container log, ulimits, OOM score, private cgroup namespace" \
    "none [nofile=4096:4096 nproc=80:80 core=0:0] 1000 private" \
    "$(docker inspect -f '{{.HostConfig.LogConfig.Type}} {{.HostConfig.Ulimits}} {{.HostConfig.OomScoreAdj}} {{.HostConfig.CgroupnsMode}}' "$CNAME")"
assert_contains "seccomp profile is an allowlist" "$seccomp" '"defaultAction":"SCMP_ACT_ERRNO"'
assert_not_contains "seccomp profile allows no ptrace" "$seccomp" '"ptrace"' 
assert_not_contains "no docker socket mounted" \
    "$(docker inspect -f '{{json .Mounts}}' "$CNAME")" docker.sock
assert_eq "container labelled" "$ID" \
    "$(docker inspect -f '{{index .Config.Labels "sandgate.sandbox"}}' "$CNAME")"

# --- exec: streams, exit code, --json --------------------------------------
sg_run r "$SG" exec "$ID" -- sh -c 'echo out; echo err >&2; exit 3'
assert_eq "exec exit code passes through" 3 "$r_rc"
assert_eq "exec stdout" out "$r_out"
assert_eq "exec stderr" err "$r_err"
sg_run r "$SG" exec "$ID" -- cat /workspace/a.txt /workspace/sub/b.txt
assert_eq "workspace holds the copy" "hello
nested" "$r_out"
sg_run r "$SG" exec "$ID" -- sh -c 'id -u; env | sort'
assert_contains "runs as the sandbox's uid" "$r_out" "$SUID"
assert_contains "SANDGATE_RUN marker" "$r_out" "SANDGATE_RUN=run_"
assert_contains "HOME set" "$r_out" "HOME=/home/sandbox"
sg_run r "$SG" exec "$ID" --json -- sh -c 'echo out; echo err >&2; exit 3'
assert_eq "--json exit code" 3 "$r_rc"
fields=$(printf '%s' "$r_out" | python3 -c '
import json, sys
o = json.load(sys.stdin)
print(o["exit_code"], repr(o["stdout"]), repr(o["stderr"]), o["timed_out"],
    o["oom_killed"], o["pids_limit_hit"], o["container_stopped"],
    o["output_truncated"], o["network_blocked"],
    isinstance(o["duration_ms"], int), o["run_id"][:4], sorted(o["usage"]))')
assert_eq "--json fields" "3 'out\n' 'err\n' False False False False False [] True run_ ['cpu_ms', 'peak_memory_bytes', 'peak_pids']" "$fields"
sg_run r "$SG" exec "$ID" --env FOO=bar --workdir /tmp -- sh -c 'echo $FOO; pwd'
assert_eq "--env and --workdir" "bar
/tmp" "$r_out"

# --- timeout kills the whole tree ------------------------------------------
start=$(date +%s)
sg_run r "$SG" exec "$ID" --timeout 2 -- sh -c 'sleep 1000 & sleep 1000'
took=$(( $(date +%s) - start ))
assert_eq "timeout exits 124" 124 "$r_rc"
[ "$took" -le 5 ] && ok "timeout returns within 5 s" || \
    fail "timeout returns within 5 s" "took $took s"
assert_contains "timeout message" "$r_err" \
    "sandgate: command timed out after 2 s (--timeout)"
sg_run r "$SG" exec "$ID" -- ps
assert_not_contains "no sleep survives the timeout" "$r_out" "sleep"
assert_contains "idle probe survives" "$r_out" "probe idle"

# sandgate's notices in --json come from sandgate, never from the command
sg_run r "$SG" exec "$ID" --json --timeout 2 -- sh -c \
    'echo "sandgate: command killed: memory limit 1 GiB exceeded" >&2; sleep 100'
notices=$(printf '%s' "$r_out" | python3 -c '
import json, sys
print(json.load(sys.stdin)["notices"])')
assert_eq "--json notices: sandgate's own, not the command's forgery" \
    "['command timed out after 2 s (--timeout)']" "$notices"

# another run's processes survive a timeout of this one
"$SG" exec "$ID" --timeout 20 -- sh -c 'sleep 6; echo survived' \
    >"$SG_TMP/other.out" 2>&1 &
other=$!
sleep 1
sg_run r "$SG" exec "$ID" --timeout 1 -- sleep 100
assert_eq "concurrent: the short one times out" 124 "$r_rc"
wait "$other"
assert_eq "concurrent: the other exec survives" 0 "$?"
assert_eq "concurrent: its output" survived "$(cat "$SG_TMP/other.out")"

# --- SIGINT to sandgate exec -------------------------------------------------
"$SG" exec "$ID" -- sh -c 'sleep 1000 & sleep 1000' >/dev/null 2>&1 &
pid=$!
sleep 1.5
kill -INT "$pid"
wait "$pid"
assert_eq "SIGINT exits 130" 130 "$?"
sg_run r "$SG" exec "$ID" -- ps
assert_not_contains "SIGINT leaves no sleep" "$r_out" "sleep"

# --- --fresh -----------------------------------------------------------------
sg_run r "$SG" exec "$ID" --fresh -- sh -c 'cat /workspace/a.txt; exit 0'
assert_eq "--fresh exits 0" 0 "$r_rc"
assert_eq "--fresh sees the workspace" hello "$r_out"
assert_eq "--fresh container removed" 1 \
    "$(docker ps -aq --filter label=sandgate.sandbox="$ID" | wc -l)"

# --- limits --------------------------------------------------------------------
sg_run r "$SG" exec "$ID" -- sh -c 'head -c 200m /dev/zero | tail > /dev/null'
assert_eq "memory hog exits 137" 137 "$r_rc"
assert_contains "memory message" "$r_err" \
    "sandgate: command killed: memory limit 64 MiB exceeded"
sg_run r "$SG" exec "$ID" --timeout 30 -- sh -c 'f() { f & f & wait; }; f'
assert_contains "fork bomb reports the pids limit" "$r_err" \
    "sandgate: process limit 64 reached"
sg_run r "$SG" exec "$ID" -- ps
assert_eq "fork bomb leaves nothing (ps: header, the idle probe, ps)" 3 \
    "$(printf '%s\n' "$r_out" | wc -l)"
sg_run r "$SG" exec "$ID" --json -- sh -c 'head -c 12000000 /dev/zero | tr "\0" a'
trunc=$(printf '%s' "$r_out" | python3 -c '
import json, sys
o = json.load(sys.stdin)
print(o["output_truncated"], len(o["stdout"]) < 8400000,
    "[sandgate: 3611392 bytes cut]" in o["stdout"])')
assert_eq "output cap keeps head and tail" "True True True" "$trunc"
ev=$(ls -S "$SANDGATE_STATE/sandboxes/$ID/runs/"*.stdout | head -1)
assert_eq "evidence keeps the whole output" 12000000 "$(stat -c %s "$ev")"

# --- run records -------------------------------------------------------------
runs="$SANDGATE_RECORD_DIR/runs.jsonl"
[ -s "$runs" ] && ok "runs.jsonl written" || fail "runs.jsonl written"
last=$(grep '"event":"run\.' "$runs" | tail -1 | python3 -c '
import json, sys
o = json.load(sys.stdin)
print(o["sandbox"] == sys.argv[1], o["event"], o["run"][:4],
    o["exit_code"], o["flags"]["output_truncated"], "limits" in o,
    o["cleanup"])' "$ID")
assert_eq "run record fields" "True run.exec run_ 0 True True ok" "$last"

# --- list ---------------------------------------------------------------------
sg_run r "$SG" list
assert_contains "list shows the sandbox" "$r_out" "$ID"
assert_contains "list shows its status" "$r_out" "running"
sg_run r "$SG" list --json
assert_contains "list --json" "$r_out" "\"id\":\"$ID\""

# --- run ---------------------------------------------------------------------
mkdir -p "$SG_TMP/in"
echo data >"$SG_TMP/in/x"
sg_run r "$SG" run --input "$SG_TMP/in" --output "$SG_TMP/out" "${IMG[@]}" \
    -- sh -c 'cat /input/x; mkdir /output/d; cp /input/x /output/d/y; touch /input/no 2>/dev/null || echo ro'
assert_eq "run exits 0" 0 "$r_rc"
assert_eq "run sees /input read-only" "data
ro" "$r_out"
assert_eq "run copies /output back" data "$(cat "$SG_TMP/out/d/y" 2>/dev/null)"
assert_eq "run leaves no sandbox" 1 "$(ls "$SANDGATE_STATE/sandboxes" | wc -l)"
assert_eq "run leaves no container" 0 \
    "$(docker ps -aq --filter label=sandgate.role=run | wc -l)"
sg_run r "$SG" run "${IMG[@]}" -- sh -c 'exit 7'
assert_eq "run passes the exit code" 7 "$r_rc"

# --- create refuses a symlink and leaves nothing --------------------------------
mkdir -p "$SG_TMP/bad"
echo a >"$SG_TMP/bad/f"
ln -s /etc/passwd "$SG_TMP/bad/link"
before=$(docker ps -aq | wc -l)
sg_run r "$SG" create "$SG_TMP/bad" "${IMG[@]}"
assert_eq "symlink source refused" 125 "$r_rc"
assert_contains "symlink named" "$r_err" "link"
assert_eq "refused create leaves no state" 1 \
    "$(ls "$SANDGATE_STATE/sandboxes" | wc -l)"
assert_eq "refused create leaves no container" "$before" \
    "$(docker ps -aq | wc -l)"

# --- fail closed: a probe that reports root is refused ---------------------------
cat >"$SG_TMP/fakeprobe" <<'EOF'
#!/bin/sh
case "$1" in
idle) exec sleep 100000 ;;
check) echo '{"probe":1,"uid":0}' ;;
esac
EOF
chmod +x "$SG_TMP/fakeprobe"
sg_run r env SANDGATE_PROBE="$SG_TMP/fakeprobe" "$SG" create "$SG_TMP/src" \
    "${IMG[@]}"
assert_eq "failed control exits 125" 125 "$r_rc"
assert_contains "failed control message" "$r_err" "sandgate: sandbox refused: "
assert_eq "refused sandbox leaves no state" 1 \
    "$(ls "$SANDGATE_STATE/sandboxes" | wc -l)"
assert_eq "refused sandbox leaves no container" "$before" \
    "$(docker ps -aq | wc -l)"
assert_eq "refused sandbox leaves no mount" 0 \
    "$(grep "$SANDGATE_STATE" /proc/self/mounts | grep -vc "$ID")"

# --- discard, twice ------------------------------------------------------------
sg_run r "$SG" discard "$ID"
assert_eq "discard exits 0" 0 "$r_rc"
# the proxy confirmed the unregister: nothing kept to send again
[ -e "$SANDGATE_STATE/unregister/$ID" ] && fail "discard owes no unregister" \
    || ok "discard owes no unregister"
sg_run r "$SG" discard "$ID"
assert_eq "second discard exits 0" 0 "$r_rc"
assert_eq "discard removes containers" 0 \
    "$(docker ps -aq --filter label=sandgate.sandbox="$ID" | wc -l)"
[ -e "$SANDGATE_STATE/sandboxes/$ID" ] && fail "discard removes state" || \
    ok "discard removes state"
assert_eq "discard unmounts" 0 "$(grep -c "$SANDGATE_STATE" /proc/self/mounts)"
sg_run r "$SG" exec "$ID" -- true
assert_eq "exec after discard exits 125" 125 "$r_rc"

sg_summary
