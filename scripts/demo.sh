#!/usr/bin/env bash
# demo.sh: the main job, end to end, on this machine only.
#
#   1. set-up: Debian packages, the build, dockerd (setup.sh);
#   2. the sandbox image (sandgate/base) and a local PyPI-style registry,
#      pypi.sandgate.test, on an --internal network (nothing leaves);
#   3. the egress proxy with the shipped policy plus the demo set;
#   4. a sandbox over examples/demo-project that may use demo-pypi:
#      a pip install that works, one that is blocked with its readable
#      error, the security-event log entry, the diff, and clean-up.
#
# Safe to run again; leaves the proxy running (`sandgate proxy stop`).
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

t0=$(date +%s)
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
show() { printf '\033[2m$ %s\033[0m\n' "$*"; "$@"; }

sg_install_packages
sg_build
sg_start_docker

SG=$SG_BUILD/bin/sandgate
DEMO=$SG_ROOT/logs/demo
export SANDGATE_LOG_DIR=$DEMO/logs
export SANDGATE_DATA_DIR=$SG_ROOT
mkdir -p "$DEMO/logs" "$DEMO/policy.d"

step "sandbox image sandgate/base (built once from Debian's packages)"
"$SG" image build | tail -n 2

step "demo registry pypi.sandgate.test on an internal network"
bash "$SG_ROOT/images/demo-registry/start.sh" sandgate-demo-egress "$DEMO/registry"
cp "$SG_ROOT"/policy.d/*.yaml "$SG_ROOT"/examples/demo-policy/*.yaml "$DEMO/policy.d/"

step "egress proxy: the sandboxes' only way out"
show "$SG" proxy start --egress-network sandgate-demo-egress \
	--hosts "$DEMO/registry/hosts" --policy-dir "$DEMO/policy.d" \
	--log-dir "$SANDGATE_LOG_DIR"
show "$SG" policy explain pypi.sandgate.test:443 --sets demo-pypi \
	--policy-dir "$DEMO/policy.d" || true

step "a sandbox over examples/demo-project, allowed to use demo-pypi"
rm -rf "$DEMO/project" && cp -r "$SG_ROOT/examples/demo-project" "$DEMO/project"
printf '\033[2m$ sandgate create %s --allow demo-pypi --ca-cert ...\033[0m\n' "$DEMO/project"
id=$("$SG" create "$DEMO/project" --allow demo-pypi --ca-cert "$DEMO/registry/ca.crt")
echo "$id"
trap '"$SG" discard "$id" >/dev/null 2>&1 || true' EXIT

step "installing a package from the allowlisted registry, through the proxy"
show "$SG" exec "$id" -- pip install --index-url https://pypi.sandgate.test/simple sandgate-demo
show "$SG" exec "$id" -- python3 app.py

step "one blocked attempt: an index that is not allowlisted"
set +e
show "$SG" exec "$id" -- pip install --retries 1 --timeout 5 \
	--index-url https://pypi.example.test/simple requests
rc=$?
set -e
echo "(exit code $rc: the agent sees the policy's words, and sandgate's own line above)"

step "the security-event log entry for this sandbox"
show "$SG" audit --sandbox "$id" --log-dir "$SANDGATE_LOG_DIR"
grep '"event":"egress.blocked"' "$SANDGATE_LOG_DIR/security-events.jsonl" |
	tail -n 1 | python3 -m json.tool
show "$SG" audit verify --log-dir "$SANDGATE_LOG_DIR" \
	--key "${SANDGATE_STATE:-/var/lib/sandgate}/proxy/keys/checkpoint.key.pub"

step "the same from a bare busybox sandbox: wget and the notice"
. "$SG_ROOT/tests/lib/common.sh"
sg_test_image
bb=$("$SG" create "$DEMO/project" --image "$SG_TEST_IMAGE" --allow pypi)
trap '"$SG" discard "$id" "$bb" >/dev/null 2>&1 || true' EXIT
set +e
show "$SG" exec "$bb" -- wget -q -O- http://blocked.invalid/

step "two sandboxes, two answers: demo-pypi allowed in one, not in the other"
py2=$("$SG" create "$DEMO/project" --allow pypi --ca-cert "$DEMO/registry/ca.crt")
trap '"$SG" discard "$id" "$bb" "$py2" >/dev/null 2>&1 || true' EXIT
show "$SG" exec "$id" -- curl -sS -o /dev/null -w '%{http_code}\n' https://pypi.sandgate.test/simple/
show "$SG" exec "$py2" -- curl -sS -o /dev/null -w '%{http_code}\n' https://pypi.sandgate.test/simple/

step "nothing but the proxy is reachable from a sandbox"
proxy_ip=$(docker inspect -f '{{(index .NetworkSettings.Networks "sandgate-internal").IPAddress}}' sandgate-proxy)
for target in "${proxy_ip%.*}.1 80" "$proxy_ip 3129" "169.254.169.254 80"; do
	printf '\033[2m$ nc -w 2 %s\033[0m  ' "$target"
	if "$SG" exec "$bb" -- nc -w 2 $target </dev/null >/dev/null 2>&1; then
		echo "CONNECTED (unexpected)"
	else
		echo "no connection"
	fi
done
printf '\033[2m$ nslookup exfil.example.test\033[0m  '
"$SG" exec --timeout 20 "$bb" -- nslookup exfil.example.test >/dev/null 2>&1 &&
	echo "ANSWERED (unexpected)" || echo "no answer: names are resolved by the proxy alone"
set -e

step "what the agent changed, for review"
"$SG" exec "$id" -- sh -c 'echo "sandgate-demo==0.1.0  # installed in the sandbox" > requirements.txt' >/dev/null
show "$SG" diff "$id"

step "clean-up"
show "$SG" discard "$id" "$bb" "$py2"
trap - EXIT
echo
echo "demo finished in $(( $(date +%s) - t0 )) s; the proxy keeps running (sandgate proxy stop)"
