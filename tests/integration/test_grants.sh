#!/usr/bin/env bash
# test_grants.sh: the approval flow of issue 19 end to end, on real Docker
# with the real proxy container and the demo registry (pypi.sandgate.test,
# HTTPS, on an --internal network):
#   an exec is blocked -> `pending` lists the destination -> a short
#   `grant` -> the same command succeeds -> at expiry it is blocked again,
#   and a tunnel open at expiry was closed (egress.revoked); the log holds
#   the grant and expiry events and `audit verify` is OK. A grant limited
#   to one exec does not let another exec of the sandbox through, and a
#   grant outside the admins' floors is refused naming the rule.
#
# The contract under test is docs/policy.md ("Grants", "Approving a
# blocked destination") and docs/agents.md ("Asking a person to open a
# destination").
set -u
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
sg_require_docker
sg_setup
SRC=${SANDGATE_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
export SANDGATE_DATA_DIR=$SRC
EGRESS=sgtest-grants-$$
REG=$SG_TMP/registry
POL=$SG_TMP/policy.d
HP=pypi.sandgate.test

sg_base_image
sg_demo_registry "$EGRESS" "$REG"
sg_on_exit "'$SG' proxy stop; docker rm -f sandgate-demo-registry; docker network rm $EGRESS"
mkdir -p "$POL"
cp "$SRC"/policy.d/*.yaml "$POL/"
cat >"$POL/floor.yaml" <<'YAML'
description: what approvers may open
grants:
  under: [sandgate.test]
  allow_private: true
deny:
  - host: paste.sandgate.test
    rationale: no approver may open a paste site
YAML
sg_run r "$SG" proxy start --egress-network "$EGRESS" --hosts "$REG/hosts" \
	--policy-dir "$POL" --log-dir "$SANDGATE_LOG_DIR"
assert_eq "proxy start" 0 "$r_rc"
[ "$r_rc" = 0 ] || { echo "$r_err"; sg_summary; exit 1; }
mkdir -p "$SG_TMP/project"
echo grants >"$SG_TMP/project/README"
sg_run r "$SG" create "$SG_TMP/project" --ca-cert "$REG/ca.crt"
assert_eq "create" 0 "$r_rc"
SBX=$r_out
sg_on_exit "'$SG' discard $SBX"

CURL=(curl -sS -m 10 -o /dev/null -w '%{http_code}' "https://$HP/simple/")

# 1. Blocked, and pending lists it.
sg_run r "$SG" exec --json "$SBX" -- "${CURL[@]}"
assert_contains "blocked before the grant" "$r_out" "\"destination\":\"$HP:443\""
sg_run p "$SG" pending "$SBX"
assert_contains "pending lists the destination" "$p_out" "$SBX  $HP:443  not_allowlisted  1 attempt"

# 2. Outside the floors: refused, naming the rule.
sg_run g "$SG" grant "$SBX" paste.sandgate.test --for 60s --rationale "want it"
assert_eq "a grant of a denied name: exit 126" 126 "$g_rc"
assert_contains "the refusal names the deny entry" "$g_err" \
	"sandgate: grant refused: paste.sandgate.test:443 is denied by the deny entry \"paste.sandgate.test\" (/etc/sandgate/policy.d/floor.yaml:6: no approver may open a paste site); no grant can open it"
sg_run g "$SG" grant "$SBX" pypi.org --for 60s --rationale "want it"
assert_eq "a grant outside grants.under: exit 126" 126 "$g_rc"
assert_contains "the refusal names grants.under" "$g_err" \
	"pypi.org is not under a domain grants may cover (rule: grants: under: sandgate.test (/etc/sandgate/policy.d/floor.yaml:3))"

# 3. A short grant: the same command succeeds; a tunnel opened under it
#    is closed at expiry; then it is blocked again.
sg_run g "$SG" grant "$SBX" "$HP" --for 12s --rationale "the task installs from the demo index"
assert_eq "grant --for 12s" 0 "$g_rc"
sg_run r "$SG" exec --json "$SBX" -- "${CURL[@]}"
assert_contains "the same command succeeds under the grant" "$r_out" '"stdout":"200"'
sg_run t "$SG" exec --json --timeout 60 "$SBX" -- python3 -c '
import base64, os, socket, ssl, time, urllib.parse
u = urllib.parse.urlsplit(os.environ["HTTPS_PROXY"])
s = socket.create_connection((u.hostname, u.port))
auth = base64.b64encode(("%s:%s" % (u.username, u.password)).encode()).decode()
s.sendall(("CONNECT pypi.sandgate.test:443 HTTP/1.1\r\nHost: pypi.sandgate.test:443\r\n"
           "Proxy-Authorization: Basic %s\r\n\r\n" % auth).encode())
assert s.recv(4096).startswith(b"HTTP/1.1 200")
t = ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"]).wrap_socket(
    s, server_hostname="pypi.sandgate.test")
print("handshake done")
t.settimeout(40)
start = time.time()
try:
    while t.recv(4096):
        pass
except (ssl.SSLError, OSError):
    pass
print("closed after %d s" % (time.time() - start))'
assert_contains "the tunnel carried a TLS handshake under the grant" "$t_out" 'handshake done'
assert_contains "the tunnel was closed" "$t_out" 'closed after'
printf '%s\n' "$t_out" | python3 -c 'import json,sys; print("tunnel exec:", json.load(sys.stdin)["stdout"].replace("\n", "; "))'
sleep 2
sg_run r "$SG" exec --json "$SBX" -- "${CURL[@]}"
assert_contains "blocked again after expiry" "$r_out" "\"destination\":\"$HP:443\""
ev=$("$SG" audit --sandbox "$SBX" --json --log-dir "$SANDGATE_LOG_DIR" |
	python3 -c 'import json,sys
for l in sys.stdin:
    e = json.loads(l)
    if e["event"] in ("grant.added", "grant.expired", "egress.revoked"):
        print(e["event"], e.get("host"), e.get("by", "-"), e.get("rationale", "-"), e.get("reason", "-"))')
assert_contains "the log holds the grant, with who and why" "$ev" \
	"grant.added $HP $(id -un) (uid $(id -u)) the task installs from the demo index"
assert_contains "the log holds the expiry" "$ev" "grant.expired $HP"
assert_contains "the proxy closed the tunnel at expiry" "$ev" "egress.revoked $HP"
sg_run v "$SG" audit verify --log-dir "$SANDGATE_LOG_DIR"
assert_eq "audit verify OK" 0 "$v_rc"

# 4. A grant for one exec: another exec of the sandbox is not let through.
runs_now() {
	"$SG" pending "$SBX" --json | python3 -c 'import json,sys
print(" ".join(r for l in sys.stdin for r in json.loads(l)["run_ids"]))'
}
before=$(runs_now)
"$SG" exec --json --timeout 90 "$SBX" -- sh -c "${CURL[*]}; echo;
	while [ ! -e /workspace/go ]; do sleep 0.2; done; ${CURL[*]}" >"$SG_TMP/a.json" 2>&1 &
apid=$!
RA=
for _ in $(seq 1 100); do
	for r in $(runs_now); do
		case " $before " in *" $r "*) ;; *) RA=$r ;; esac
	done
	[ -n "$RA" ] && break
	sleep 0.3
done
assert_contains "pending names the waiting exec's run" "$RA" "run_"
sg_run g "$SG" grant "$SBX" "$HP" --for 60s --exec "$RA" --rationale "only the waiting build"
assert_eq "grant --exec" 0 "$g_rc"
sg_run r "$SG" exec --json "$SBX" -- "${CURL[@]}"
assert_contains "another exec is not let through" "$r_out" "\"destination\":\"$HP:443\""
"$SG" exec "$SBX" -- touch /workspace/go >/dev/null 2>&1
wait $apid
assert_contains "the granted exec got through" "$(cat "$SG_TMP/a.json")" '\n200"'
"$SG" revoke "$SBX" "$HP" >/dev/null 2>&1

sg_summary
