#!/usr/bin/env bash
# test_terminate.sh: TLS termination (tls: terminate) for a real sandbox,
# end to end with real Docker, the real proxy container, pip and curl.
#
# `sandgate proxy start` makes the sandgate CA (key 0600, uid 65532, in a
# folder mounted into the proxy alone); `sandgate create` makes the sandbox
# trust it with no --ca-cert. The proxy's upstream side is an --internal
# test network holding the demo registry (pypi.sandgate.test, HTTPS with a
# CA made here), which the policy entry names as its ca_file: the sandbox
# never trusts that CA, only the proxy does. Nothing leaves the machine.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
sg_require_docker
sg_setup
sg_test_image || exit 1
SRC=${SANDGATE_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
export SANDGATE_DATA_DIR=$SRC
EGRESS=sgtest-term-$$
REG=$SG_TMP/registry
POL=$SG_TMP/policy.d

TOKEN=sg-term-token-$$-4f1e9b
GIT=$SG_TMP/git

sg_base_image
# A private registry: every request needs the token, which only the
# proxy's secret store holds.
mkdir -p "$REG"
printf 'Bearer %s\n' "$TOKEN" > "$REG/token"
sg_demo_registry "$EGRESS" "$REG"
sg_on_exit "'$SG' proxy stop; docker rm -f sandgate-demo-registry sgtest-git-$$; docker network rm $EGRESS"
# git's own http-backend over HTTPS, git.sandgate.test, a certificate of
# the registry's CA.
mkdir -p "$GIT/repos" "$GIT/pki"
git init -q --bare "$GIT/repos/demo.git"
git -C "$GIT/repos/demo.git" symbolic-ref HEAD refs/heads/main
git clone -q "$GIT/repos/demo.git" "$SG_TMP/seed" 2>/dev/null
echo hello > "$SG_TMP/seed/README"
git -C "$SG_TMP/seed" add README
git -C "$SG_TMP/seed" -c user.email=t@sandgate.test -c user.name=t \
	commit -q -m "first commit"
git -C "$SG_TMP/seed" push -q origin HEAD:main
openssl req -newkey rsa:2048 -nodes -subj "/CN=git.sandgate.test" \
	-keyout "$GIT/pki/server.key" -out "$GIT/pki/server.csr" 2>/dev/null
printf 'subjectAltName=DNS:git.sandgate.test\nextendedKeyUsage=serverAuth\n' \
	> "$GIT/pki/ext.cnf"
openssl x509 -req -in "$GIT/pki/server.csr" -CA "$REG/ca.crt" \
	-CAkey "$REG/pki/ca.key" -CAcreateserial -days 2 \
	-extfile "$GIT/pki/ext.cnf" -out "$GIT/pki/server.crt" 2>/dev/null
chmod -R a+rX "$GIT"
cp "$SRC/tests/data/git/serve.py" "$GIT/serve.py"
docker run -d --name "sgtest-git-$$" --network "$EGRESS" --user 1000:1000 \
	--read-only --cap-drop ALL --security-opt no-new-privileges \
	--memory 256m --pids-limit 64 -v "$GIT:/srv:ro" sandgate/base:latest \
	python3 /srv/serve.py /srv/repos /srv/pki/server.crt \
	/srv/pki/server.key 443 >/dev/null ||
	{ fail "git server starts"; sg_summary; exit 1; }
GIT_IP=$(docker inspect -f "{{(index .NetworkSettings.Networks \"$EGRESS\").IPAddress}}" "sgtest-git-$$")
printf '%s git.sandgate.test\n' "$GIT_IP" >> "$REG/hosts"
mkdir -p "$POL/ca"
cp "$REG/ca.crt" "$POL/ca/demo-registry.crt"
printf 'Bearer %s\n' "$TOKEN" | "$SG" secret set demo-token >/dev/null
cat > "$POL/termtest.yaml" <<'EOF'
description: a registry read through the proxy (test_terminate.sh)
allow:
  - host: pypi.sandgate.test
    ports: [443]
    allow_private: true
    tls: terminate
    ca_file: ca/demo-registry.crt
    methods: [GET, HEAD]
    paths: [/simple/, /packages/]
    credentials: {header: Authorization, secret: demo-token}
    rationale: install from the demo index with its token, never upload
  - host: git.sandgate.test
    ports: [443]
    allow_private: true
    tls: terminate
    ca_file: ca/demo-registry.crt
    methods: [GET, POST]
    paths:
      - /demo.git/info/refs?service=git-upload-pack
      - /demo.git/git-upload-pack
    rationale: clone and fetch the demo repository, never push to it
EOF
sg_run r "$SG" proxy start --egress-network "$EGRESS" --hosts "$REG/hosts" \
	--policy-dir "$POL" --log-dir "$SANDGATE_LOG_DIR"
assert_eq "proxy start" 0 "$r_rc"
[ "$r_rc" = 0 ] || { echo "$r_err"; sg_summary; exit 1; }

# --- the CA ---------------------------------------------------------------------
CA=$SANDGATE_STATE/proxy/ca
assert_eq "the CA's folder is the proxy's alone" "65532 700" \
	"$(stat -c '%u %a' "$CA")"
assert_eq "its key is the proxy's, 0600" "65532 600" \
	"$(stat -c '%u %a' "$CA/ca.key")"
assert_contains "its certificate is a CA" \
	"$(openssl x509 -in "$CA/ca.crt" -noout -text)" "CA:TRUE"

mkdir -p "$SG_TMP/project"
cp -r "$SRC"/examples/demo-project/. "$SG_TMP/project/"
sg_run r "$SG" create "$SG_TMP/project" --allow termtest
assert_eq "create (no --ca-cert)" 0 "$r_rc"
ID=$r_out
sg_on_exit "'$SG' discard $ID"

# --- a terminated install ----------------------------------------------------------
sg_run r "$SG" exec "$ID" -- pip install --index-url \
	https://pypi.sandgate.test/simple sandgate-demo
assert_eq "pip install through the terminated entry" 0 "$r_rc"
assert_contains "pip says installed" "$r_out" \
	"Successfully installed sandgate-demo"
sg_run r "$SG" exec "$ID" -- curl -sS -v -o /dev/null \
	https://pypi.sandgate.test/simple/
assert_contains "the sandbox sees the minted certificate" "$r_err" \
	"issuer: CN=sandgate CA"

# --- the token: used by the proxy, held by no sandbox -----------------------------
# (The token is spelt in two halves: the command line is in the run record.)
sg_run r "$SG" exec "$ID" -- sh -c 'env; cat /workspace/* 2>/dev/null;
	a=sg-term-token-'$$'; b=4f1e9b
	grep -rl "$a-$b" / --exclude-dir=proc --exclude-dir=sys 2>/dev/null;
	echo done'
assert_contains "the search ran" "$r_out" "done"
assert_not_contains "the token is not in the sandbox" "$r_out" "$TOKEN"
sg_run r "$SG" exec "$ID" -- curl -sS -o /dev/null -w '%{http_code}' \
	-H 'Authorization: Bearer forged' https://pypi.sandgate.test/simple/
assert_eq "a sandbox's own Authorization is replaced" 200 "$r_out"

# --- git: clone allowed, push refused in words -------------------------------------
sg_run r "$SG" exec "$ID" -- git clone https://git.sandgate.test/demo.git \
	/workspace/demo
assert_eq "git clone through the terminated entry" 0 "$r_rc"
sg_run r "$SG" exec "$ID" -- cat /workspace/demo/README
assert_eq "the clone has the file" "hello" "$r_out"
sg_run r "$SG" exec "$ID" -- sh -c 'cd /workspace/demo &&
	echo change >> README && git -c user.email=a@sandgate.test \
	-c user.name=a commit -qam change && git push origin HEAD:main'
[ "$r_rc" != 0 ] && ok "git push fails" ||
	fail "git push fails (exit $r_rc)"
assert_contains "git shows the policy's words" "$r_out$r_err" \
	"network blocked by policy"

# --- refusals inside the session, in words -----------------------------------------
sg_run r "$SG" exec "$ID" -- curl -sS -X POST --data x \
	https://pypi.sandgate.test/legacy/
assert_contains "an upload gets the 403's words" "$r_out" \
	"network blocked by policy: destination pypi.sandgate.test:443"
sg_run r "$SG" exec "$ID" -- curl -sS -o /dev/null -w '%{http_code}' \
	https://pypi.sandgate.test/admin/
assert_eq "a path outside the entry: 403" 403 "$r_out"
sg_run r "$SG" exec "$ID" -- curl -sS -H 'Host: other.sandgate.test' \
	https://pypi.sandgate.test/simple/
assert_contains "another Host than the SNI: refused" "$r_out" \
	"network blocked by policy"
sg_run r "$SG" audit --sandbox "$ID" --json --log-dir "$SANDGATE_LOG_DIR"
assert_contains "the event carries the path" "$r_out" '"path":"/legacy/"'
assert_contains "and the method" "$r_out" '"method":"POST"'
assert_contains "host_mismatch is logged" "$r_out" '"reason":"host_mismatch"'

# --- no sandbox reads the CA key --------------------------------------------------
sg_run r "$SG" exec "$ID" -- sh -c '
	for p in /etc/sandgate/ca/ca.key "'"$CA"'/ca.key" \
	    /var/lib/sandgate/proxy/ca/ca.key /run/sandgate/ca.key; do
		cat "$p" 2>/dev/null && echo "READ $p"
	done
	grep -l "PRIVATE KEY" -r /etc /workspace /tmp /home /run /var 2>/dev/null
	echo "MOUNTS=$(grep -c "proxy/ca" /proc/self/mountinfo)"'
assert_not_contains "the key is at none of those paths" "$r_out" "READ "
assert_not_contains "no private key file is reachable" "$r_out" "ca.key"
assert_contains "the CA folder is not mounted" "$r_out" "MOUNTS=0"

# --- the token appears nowhere ------------------------------------------------------
sg_run r "$SG" audit --log-dir "$SANDGATE_LOG_DIR" --json
sg_run p "$SG" proxy logs
blocks=$(curl -s --unix-socket "$SANDGATE_STATE/proxy/run/control.sock" \
	http://proxy/blocks)
runs=$(cat "$SANDGATE_STATE"/records/*.jsonl "$SANDGATE_RECORD_DIR"/*.jsonl \
	2>/dev/null)
logs=$(cat "$SANDGATE_LOG_DIR"/* 2>/dev/null)
for what in "r_out" "p_out" "p_err" "blocks" "runs" "logs"; do
	assert_not_contains "the token is not in $what" "${!what}" "$TOKEN"
done
assert_contains "the log was read" "$logs" "pypi.sandgate.test"
sg_summary
