#!/usr/bin/env bash
# gen-configmaps.sh: the ConfigMaps made from the project's own files.
#
#   deploy/kubernetes/gen-configmaps.sh [--check] [POLICY_DIR]
#
#   generated/policy-configmap.yaml   sandgate-policy: every file of
#       POLICY_DIR (default: policy.d), with the policy digest the proxy
#       computes as the annotation sandgate.dev/policy-digest. The digest is
#       what `sandgate-proxy --check` prints, so it is the one every event
#       and /status of a replica on this policy names.
#   generated/seccomp-configmap.yaml  sandgate-seccomp: seccomp/sandgate.json,
#       the profile of every sandbox (50-seccomp-profile.yaml copies it to
#       the nodes).
#
# seccomp/sandgate.json itself is written by the seccomp unit test, from
# the same list the controller's container spec uses (controller/
# seccomp_profile.h); the test fails when the shipped copy differs.
#
# --check: write nothing; exit 1 if a generated file is not what this
# script would write (CI runs it so the committed files stay current).
# Binaries: $SANDGATE_BIN (default build/bin) and build/tests/test_seccomp.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=${SANDGATE_BIN:-$root/build/bin}
check=0
if [ "${1:-}" = --check ]; then
	check=1
	shift
fi
policy=${1:-$root/policy.d}

die() { printf 'gen-configmaps: %s\n' "$*" >&2; exit 1; }

[ -x "$bin/sandgate-proxy" ] || die "no $bin/sandgate-proxy (build first, or set SANDGATE_BIN)"
[ -d "$policy" ] || die "no policy folder $policy"
out=$("$bin/sandgate-proxy" --check --policy-dir "$policy" 2>&1) ||
	die "the proxy refuses $policy: $out"
digest=$(printf '%s\n' "$out" | sed -n 's/.*policy digest \([0-9a-f]\{64\}\)$/\1/p')
[ -n "$digest" ] || die "no policy digest in: $out"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ "$check" = 0 ] && [ -x "$root/build/tests/test_seccomp" ]; then
	(cd "$root/tests/unit" && SANDGATE_SECCOMP_EXPORT="$here/seccomp/sandgate.json" \
		"$root/build/tests/test_seccomp" >/dev/null) ||
		die "the seccomp test failed"
fi

python3 "$here/configmap.py" sandgate-policy sandgate-system \
	"sandgate.dev/policy-digest=$digest" "$policy"/* >"$tmp/policy-configmap.yaml"
python3 "$here/configmap.py" sandgate-seccomp kube-system "" \
	"$here/seccomp/sandgate.json" >"$tmp/seccomp-configmap.yaml"

status=0
for f in policy-configmap.yaml seccomp-configmap.yaml; do
	if [ "$check" = 1 ]; then
		cmp -s "$tmp/$f" "$here/generated/$f" || {
			printf 'gen-configmaps: generated/%s is out of date: run deploy/kubernetes/gen-configmaps.sh\n' "$f" >&2
			status=1
		}
	else
		mkdir -p "$here/generated"
		cp "$tmp/$f" "$here/generated/$f"
	fi
done
[ "$check" = 1 ] || printf 'gen-configmaps: policy digest %s\n' "$digest"
exit $status
