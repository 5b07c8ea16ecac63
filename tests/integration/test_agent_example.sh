#!/usr/bin/env bash
# test_agent_example.sh: runs examples/agent_example.py (the worked example
# of docs/agents.md) against real Docker, the real proxy container and the
# demo registry, so the example cannot rot.
#
# Same set-up as test_network.sh: the proxy's upstream side is an
# --internal test network holding only the demo registry, so nothing can
# leave the machine. The proxy container is a singleton; it is stopped at
# the end.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
sg_require_docker
sg_setup
SRC=${SANDGATE_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
export SANDGATE_DATA_DIR=$SRC
EGRESS=sgtest-egress-$$
REG=$SG_TMP/registry
POL=$SG_TMP/policy.d
PROJ=$SG_TMP/project

# --- set-up: base image, registry, proxy ------------------------------------
sg_base_image
# the registry is a singleton too; one left on another network has no
# address on ours
docker rm -f sandgate-demo-registry >/dev/null 2>&1
# one clean-up, in order: the network can only go once nothing is on it
sg_on_exit '[ -z "${PROXY_STARTED:-}" ] || "$SG" proxy stop; '"docker rm -f sandgate-demo-registry; docker network rm $EGRESS"
sg_demo_registry "$EGRESS" "$REG"
mkdir -p "$POL"
cp "$SRC"/policy.d/*.yaml "$SRC"/examples/demo-policy/*.yaml "$POL/"
sg_run r "$SG" proxy start --egress-network "$EGRESS" --hosts "$REG/hosts" \
	--policy-dir "$POL" --log-dir "$SANDGATE_LOG_DIR"
assert_eq "proxy start" 0 "$r_rc"
PROXY_STARTED=1		# even a failed start may have replaced the container
[ "$r_rc" = 0 ] || { echo "$r_err"; sg_summary; exit 1; }

mkdir -p "$PROJ"
cp -r "$SRC"/examples/demo-project/. "$PROJ/"
cp "$PROJ/app.py" "$SG_TMP/app.py.orig"

# --- the example itself -------------------------------------------------------
sg_run r python3 "$SRC/examples/agent_example.py" --sandgate "$SG" \
	--project "$PROJ" --ca-cert "$REG/ca.crt"
assert_eq "agent_example.py exits 0" 0 "$r_rc"
[ "$r_rc" = 0 ] || printf '%s\n%s\n' "$r_out" "$r_err"
assert_contains "it reports every step" "$r_out" "all steps did what they should"
assert_contains "the blocked install is read from network_blocked" "$r_out" \
	"network_blocked=['pypi.blocked.test:443']"
assert_contains "the agent is told what to do about it" "$r_out" \
	"ask an admin to allowlist it"
assert_contains "apply reports the file" "$r_out" "applied app.py"

# --- what it left behind on the host -------------------------------------------
if cmp -s "$SG_TMP/app.py.orig" "$PROJ/app.py"; then
	fail "apply changed the project's app.py" "it is unchanged"
else
	ok "apply changed the project's app.py"
fi
assert_contains "the host file has the sandbox's edit" "$(cat "$PROJ/app.py")" \
	'return "sandgate_demo is not installed; run: pip install -r requirements.txt"'
python3 -c "import ast, sys; ast.parse(open(sys.argv[1]).read())" "$PROJ/app.py"
assert_eq "the applied app.py is still valid Python" 0 "$?"
sg_run r diff -r -x app.py "$SRC/examples/demo-project" "$PROJ"
assert_eq "nothing else in the project changed" 0 "$r_rc"
sg_run r "$SG" list --json
assert_eq "the example discarded its sandbox" "[]" "$r_out"
assert_contains "its execs left run records" \
	"$(cat "$SANDGATE_RECORD_DIR/runs.jsonl" 2>/dev/null)" '"event":"run.exec"'
sg_run r "$SG" audit --json --reason not_allowlisted --log-dir "$SANDGATE_LOG_DIR"
assert_contains "the blocked install is in the security-event log" "$r_out" \
	'"host":"pypi.blocked.test"'

# --- the example fails loudly when something is off -----------------------------
sg_run r python3 "$SRC/examples/agent_example.py" --sandgate "$SG" \
	--project "$SG_TMP/no-such-project" --ca-cert "$REG/ca.crt"
assert_eq "a failed step exits 1" 1 "$r_rc"
assert_contains "and says which" "$r_err" "FAILED: create failed"
sg_run r python3 "$SRC/examples/agent_example.py" --sandgate "$SG"
assert_eq "missing arguments exit 2" 2 "$r_rc"

sg_summary
