#!/usr/bin/env bash
# test_network.sh: sandboxes behind the proxy, end to end, with real Docker,
# the real proxy container, pip, python and busybox wget.
#
# The proxy's upstream side is an --internal test network holding the demo
# registry (pypi.sandgate.test, HTTPS with a CA made here), so nothing can
# leave the machine even if the code under test were wrong.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
sg_require_docker
sg_setup
sg_test_image || exit 1
SRC=${SANDGATE_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
export SANDGATE_DATA_DIR=$SRC
EGRESS=sgtest-egress-$$
REG=$SG_TMP/registry
POL=$SG_TMP/policy.d

# --- set-up: base image, registry, proxy ------------------------------------
sg_base_image
sg_demo_registry "$EGRESS" "$REG"
sg_on_exit "'$SG' proxy stop; docker rm -f sandgate-demo-registry; docker network rm $EGRESS"
mkdir -p "$POL"
cp "$SRC"/policy.d/*.yaml "$SRC"/examples/demo-policy/*.yaml "$POL/"
sg_run r "$SG" proxy start --egress-network "$EGRESS" --hosts "$REG/hosts" \
	--policy-dir "$POL" --log-dir "$SANDGATE_LOG_DIR"
assert_eq "proxy start" 0 "$r_rc"
[ "$r_rc" = 0 ] || { echo "$r_err"; sg_summary; exit 1; }
sg_run r "$SG" proxy start --egress-network "$EGRESS" --hosts "$REG/hosts" \
	--policy-dir "$POL" --log-dir "$SANDGATE_LOG_DIR"
assert_contains "proxy start is idempotent" "$r_out" "already running"
sg_run r "$SG" proxy status
assert_eq "proxy status" 0 "$r_rc"
assert_contains "status shows health" "$r_out" "(ok)"
PROXY_IP=$(docker inspect -f '{{(index .NetworkSettings.Networks "sandgate-internal").IPAddress}}' sandgate-proxy)

mkdir -p "$SG_TMP/project"
cp -r "$SRC"/examples/demo-project/. "$SG_TMP/project/"

# --- a package install that works --------------------------------------------
sg_run r "$SG" create "$SG_TMP/project" --allow demo-pypi --ca-cert "$REG/ca.crt"
assert_eq "create with --allow demo-pypi" 0 "$r_rc"
PY=$r_out
sg_on_exit "'$SG' discard $PY"
sg_run r "$SG" exec "$PY" -- pip install --index-url https://pypi.sandgate.test/simple sandgate-demo
assert_eq "pip install from the allowlisted index" 0 "$r_rc"
assert_contains "pip says installed" "$r_out" "Successfully installed sandgate-demo"
sg_run r "$SG" exec "$PY" -- python3 -c 'import sandgate_demo; print(sandgate_demo.hello())'
assert_eq "import sandgate_demo" 0 "$r_rc"
assert_contains "the package runs" "$r_out" "hello from sandgate-demo"

# --- a package install that is blocked -----------------------------------------
sg_run r "$SG" exec "$PY" -- pip install --retries 1 --timeout 5 \
	--index-url https://pypi.blocked.test/simple requests
assert_eq "pip install from another index fails" 1 "$r_rc"
assert_contains "pip's output has the policy words" "$r_out$r_err" \
	"network blocked by policy: destination"
assert_contains "exec tells the agent" "$r_err" \
	"sandgate: network blocked by policy: destination pypi.blocked.test:443 not allowlisted"
sg_run r "$SG" exec --json "$PY" -- pip install --retries 0 \
	--index-url https://pypi.blocked.test/simple requests
blocked=$(printf '%s' "$r_out" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(",".join(b["destination"] for b in d["network_blocked"]))')
assert_eq "exec --json lists network_blocked" "pypi.blocked.test:443" "$blocked"
sg_run r "$SG" audit --sandbox "$PY" --json --log-dir "$SANDGATE_LOG_DIR"
assert_contains "the security log has the event with the sandbox id" "$r_out" \
	"\"sandbox\":\"$PY\""
assert_contains "the event names the destination" "$r_out" '"host":"pypi.blocked.test"'

# --- two sandboxes, two answers --------------------------------------------------
sg_run r "$SG" create "$SG_TMP/project" --allow pypi --ca-cert "$REG/ca.crt"
assert_eq "create with --allow pypi" 0 "$r_rc"
PY2=$r_out
sg_on_exit "'$SG' discard $PY2"
sg_run a "$SG" exec "$PY" -- curl -sS -o /dev/null -w '%{http_code}' https://pypi.sandgate.test/simple/
sg_run b "$SG" exec "$PY2" -- curl -sS -o /dev/null -w '%{http_code}' https://pypi.sandgate.test/simple/
assert_eq "demo-pypi sandbox reaches the registry" 200 "$a_out"
assert_contains "pypi-only sandbox is refused" "$b_err" \
	"network blocked by policy: destination pypi.sandgate.test:443 not allowlisted"

# --- a bare busybox sandbox ---------------------------------------------------------
sg_run r "$SG" create "$SG_TMP/project" --image "$SG_TEST_IMAGE" --allow demo-pypi
assert_eq "create busybox sandbox" 0 "$r_rc"
BB=$r_out
sg_on_exit "'$SG' discard $BB"
sg_run r "$SG" exec "$BB" -- wget -q -O- http://blocked.invalid/
assert_eq "wget fails" 1 "$r_rc"
assert_contains "wget's error has the policy words" "$r_err" \
	"network blocked by policy: destination blocked.invalid:80 not allowlisted"
assert_contains "the sandgate: notice" "$r_err" \
	"sandgate: network blocked by policy: destination blocked.invalid:80 not allowlisted (1 attempt)"

# --- nothing but the proxy is reachable ------------------------------------------------
GW_EGRESS=$(docker network inspect -f '{{(index .IPAM.Config 0).Gateway}}' "$EGRESS")
python3 - "$GW_EGRESS" 18222 "$SG_TMP/listener.count" <<'EOF' &
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], int(sys.argv[2]))); s.listen(8); s.settimeout(1)
n, end = 0, time.time() + 60
open(sys.argv[3], "w").write("0")
while time.time() < end:
    try:
        c, _ = s.accept(); n += 1; c.close()
        open(sys.argv[3], "w").write(str(n))
    except socket.timeout:
        pass
EOF
LISTENER=$!
sg_on_exit "kill $LISTENER"
sleep 0.5
probe_tcp() {	# name, address, port
	sg_run r "$SG" exec --timeout 20 "$BB" -- nc -w 3 "$2" "$3" </dev/null
	if [ "$r_rc" != 0 ]; then ok "no connection: $1 ($2:$3)"; else fail "no connection: $1 ($2:$3)" "nc connected"; fi
}
probe_tcp "gateway of sandgate-internal" "$(echo "$PROXY_IP" | sed 's/\.[0-9]*$/.1/')" 80
probe_tcp "a port of the proxy other than its listener" "$PROXY_IP" 3129
probe_tcp "the proxy's control port range" "$PROXY_IP" 22
probe_tcp "the metadata address" 169.254.169.254 80
probe_tcp "a host address on the egress side" "$GW_EGRESS" 18222
assert_eq "the host listener on the egress side saw nothing" 0 "$(cat "$SG_TMP/listener.count")"
sg_run r "$SG" exec --timeout 30 "$BB" -- nslookup exfil-data.example.test
assert_contains "a DNS query for an outside name fails" "$r_rc" "1"
sg_run r "$SG" exec --timeout 30 "$BB" -- nslookup exfil-data.example.test 127.0.0.11
assert_eq "a DNS query to Docker's resolver gets no answer" 1 "$r_rc"
# --- sandboxes are sealed from each other and from Docker's resolver ----------------------
PY_IP=$(docker inspect -f '{{(index .NetworkSettings.Networks "sandgate-internal").IPAddress}}' "sandgate-$PY")
"$SG" exec --timeout 15 "$PY" -- python3 -c '
import socket; s = socket.socket(); s.bind(("0.0.0.0", 8099)); s.listen(4)
s.settimeout(8)
try:
    c, a = s.accept(); print("accepted", a[0])
except socket.timeout:
    print("nobody came")' >"$SG_TMP/neighbour.out" 2>&1 &
NB=$!
sleep 1
sg_run r "$SG" exec --timeout 20 "$BB" -- nc -w 3 "$PY_IP" 8099 </dev/null
assert_eq "another sandbox's listening port is out of reach" 1 "$r_rc"
assert_contains "the agent is told at once (no route to host)" "$r_err" "No route to host"
wait "$NB"
assert_contains "the listener in the other sandbox saw nobody" "$(cat "$SG_TMP/neighbour.out")" "nobody came"
sg_run r "$SG" exec --timeout 20 "$BB" -- nslookup "sandgate-$PY" 127.0.0.11
assert_eq "Docker's resolver does not answer another sandbox's name" 1 "$r_rc"
assert_not_contains "its address is not given" "$r_out" "$PY_IP"
sg_run r "$SG" exec --timeout 20 "$BB" -- nslookup sandgate-proxy 127.0.0.11
assert_eq "nor the proxy's name" 1 "$r_rc"
BB_PID=$(docker inspect -f '{{.State.Pid}}' "sandgate-$BB")
rules=$(nsenter -t "$BB_PID" -n iptables -S OUTPUT 2>&1)
assert_contains "the seal is loaded in the sandbox's namespace" "$rules" \
	"-A OUTPUT -d $PROXY_IP/32 -p tcp -m tcp --dport 3128 -j ACCEPT"
assert_contains "Docker's resolver refused before loopback is allowed" \
	"$(printf '%s\n' "$rules" | sed -n 2p)" "127.0.0.11/32"
docker restart -t 1 "sandgate-$BB" >/dev/null
sg_run r "$SG" exec "$BB" -- nc -w 3 "$PY_IP" 8099 </dev/null
assert_contains "a sandbox restarted outside sandgate is sealed again" "$r_err" "No route to host"
sg_run r "$SG" exec "$BB" -- wget -q -O- "http://$PROXY_IP:3128/"
assert_contains "a request through the proxy to the proxy is refused" "$r_err" \
	"network blocked by policy: destination $PROXY_IP:3128 not allowlisted"

# --- registration follows the sandbox ----------------------------------------------------
sg_run r "$SG" proxy status
assert_contains "status lists the sandbox" "$r_out" "$BB"
"$SG" discard "$BB" >/dev/null 2>&1
sg_run r "$SG" proxy status
assert_not_contains "discard unregisters it" "$r_out" "$BB"

sg_summary
