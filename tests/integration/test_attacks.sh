#!/usr/bin/env bash
# test_attacks.sh: the attack suite (tests/attacks/run) under ctest: every
# attack on the sandbox boundary must be contained, the agent told and the
# attempt recorded. Needs root and Docker (skips with 77 otherwise).
# Arguments go to tests/attacks/run (--runtime runsc).
set -u
SRC=${SANDGATE_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
if [ "$(id -u)" != 0 ] || ! docker info >/dev/null 2>&1; then
	echo "skip: the attack suite needs root and Docker"
	exit 77
fi
exec "$SRC/tests/attacks/run" "$@"
