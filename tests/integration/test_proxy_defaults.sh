#!/bin/bash
# test_proxy_defaults.sh: `sandgate proxy start` runs the proxy with the
# options the log's guarantees rest on with the shipped configuration: a
# minimum age for rotated files (--log-keep-min-age), so that one sandbox's
# flood within its block budget cannot rotate away another's history
# (docs/audit.md, "Rotation"); and the credentials' folder of
# `sandgate secret`, mounted read-only, read as the proxy's uid. Real Docker, the real proxy container; its
# upstream side is an --internal network of its own.
set -u
SRC=${SANDGATE_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRC/tests/lib/common.sh"

sg_require_docker
sg_setup
export SANDGATE_DATA_DIR=$SRC
sg_proxy_up defaults
cmd=$(docker inspect -f '{{json .Config.Cmd}}' sandgate-proxy)
assert_contains "rotated logs are kept a week" "$cmd" \
	'"--log-keep-min-age","7d"'
assert_contains "it reads the credentials' values" "$cmd" \
	'"--secrets-dir","/etc/sandgate/secrets"'
mounts=$(docker inspect -f '{{json .HostConfig.Binds}}' sandgate-proxy)
assert_contains "the secrets folder is mounted read-only" "$mounts" \
	"$SANDGATE_STATE/proxy/secrets:/etc/sandgate/secrets:ro"
sdir=$(stat -c '%u %a' "$SANDGATE_STATE/proxy/secrets")
assert_eq "the secrets folder is the proxy's alone" "65532 700" "$sdir"
# The sandbox token key (docs/proxy.md, "Sandbox tokens"): the
# controller's alone; the proxy gets its public half and verifies.
assert_contains "it verifies sandbox tokens" "$cmd" \
	'"--token-key","/etc/sandgate/token.pub"'
assert_contains "the token key's public half is mounted read-only" \
	"$mounts" "$SANDGATE_STATE/keys/token.key.pub:/etc/sandgate/token.pub:ro"
tkey=$(stat -c '%u %a' "$SANDGATE_STATE/keys/token.key")
assert_eq "the token key is the controller's alone" "$(id -u) 600" "$tkey"
sg_run r "$SG" proxy status
assert_contains "the proxy runs with them" "$r_out" "(ok)"
printf 'sg-defaults-token\n' | "$SG" secret set reg-token >/dev/null
sg_run r "$SG" proxy logs
assert_contains "the proxy loaded the secret on set" "$r_err$r_out" \
	"1 secret(s) loaded from /etc/sandgate/secrets"
assert_not_contains "its value is nowhere in its output" "$r_err$r_out" \
	"sg-defaults-token"
sg_summary
