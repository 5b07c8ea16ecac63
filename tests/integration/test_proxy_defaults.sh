#!/bin/bash
# test_proxy_defaults.sh: `sandgate proxy start` runs the proxy with the
# options the log's guarantees rest on with the shipped configuration: a
# minimum age for rotated files (--log-keep-min-age), so that one sandbox's
# flood within its block budget cannot rotate away another's history
# (docs/audit.md, "Rotation"). Real Docker, the real proxy container; its
# upstream side is an --internal network of its own.
set -u
SRC=${SANDGATE_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$SRC/tests/lib/common.sh"

sg_require_docker
sg_setup
export SANDGATE_DATA_DIR=$SRC
EGRESS=sgtest-defaults-$$
docker network create --internal "$EGRESS" >/dev/null ||
	{ fail "egress network created"; sg_summary; exit 1; }
sg_on_exit "'$SG' proxy stop; docker network rm $EGRESS"
sg_run r "$SG" proxy start --egress-network "$EGRESS" \
	--policy-dir "$SRC/policy.d" --log-dir "$SANDGATE_LOG_DIR"
assert_eq "proxy start" 0 "$r_rc"
[ "$r_rc" = 0 ] || { echo "$r_err"; sg_summary; exit 1; }
cmd=$(docker inspect -f '{{json .Config.Cmd}}' sandgate-proxy)
assert_contains "rotated logs are kept a week" "$cmd" \
	'"--log-keep-min-age","7d"'
sg_run r "$SG" proxy status
assert_contains "the proxy runs with them" "$r_out" "(ok)"
sg_summary
