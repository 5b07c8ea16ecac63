#!/usr/bin/env bash
# fresh-machine.sh: run commands the way a new user would, on a fresh
# Debian 12 machine: a container whose root filesystem is Debian 12's
# minbase plus bash, apt, git and ca-certificates (no compiler, no cmake, no
# Docker), with its own dockerd inside, over a clean clone of what is
# committed in this checkout. Nothing installed on this machine helps, so a
# missing install step shows up here first.
#
#   scripts/fresh-machine.sh [--logs DIR] [--keep-image] 'COMMAND' ['COMMAND' ...]
#   e.g. scripts/fresh-machine.sh 'bash scripts/demo.sh' 'bash scripts/test.sh'
#
# Every command runs, in order, in the same container (the second sees what
# the first installed, as on a real machine). Prints each command's last
# lines, then one table: exit code and seconds of each. Exits with the last
# failing command's code (0 when all pass). Logs: --logs DIR (default a
# temporary folder, printed), one file per command.
#
# Needs root, a running dockerd, mmdebstrap or debootstrap (installed when
# missing), and Debian's archive. Inside, apt reaches the archive through
# Docker's default bridge; the sandboxes the commands make stay on the inner
# dockerd's internal networks.
set -euo pipefail

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
IMG=sandgate-fresh/debian12
LOGS= KEEP=0

usage() {
	sed -n '9,10p' "$0" | sed 's/^# *//' >&2
	exit 2
}
while [ $# -gt 0 ]; do
	case $1 in
	--logs) LOGS=${2:?--logs DIR}; shift ;;
	--keep-image) KEEP=1 ;;
	-h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) echo "fresh-machine.sh: unknown option '$1'" >&2; usage ;;
	*) break ;;
	esac
	shift
done
[ $# -gt 0 ] || usage

say() { printf '%s fresh-machine: %s\n' "$(date +%T)" "$*" >&2; }
WORK=$(mktemp -d /var/tmp/sandgate-fresh.XXXXXX)
NAME=sandgate-fresh-$$
LOGS=${LOGS:-$WORK/logs}
mkdir -p "$LOGS"
cleanup() {
	docker rm -f -v "$NAME" >/dev/null 2>&1 || true
	[ "$KEEP" = 1 ] || docker image rm -f "$IMG" >/dev/null 2>&1 || true
	[ "$LOGS" = "$WORK/logs" ] || rm -rf "$WORK"
}
trap cleanup EXIT

# The machine: Debian 12 minbase plus bash, apt, git and ca-certificates.
fresh_image() {
	docker image inspect "$IMG" >/dev/null 2>&1 && return 0
	say "building $IMG (Debian 12 minbase + git, ca-certificates), once"
	if ! command -v mmdebstrap >/dev/null && ! command -v debootstrap >/dev/null; then
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
		    --no-install-recommends mmdebstrap >/dev/null
	fi
	if command -v mmdebstrap >/dev/null; then
		mmdebstrap --variant=minbase --include=bash,apt,git,ca-certificates \
		    --quiet bookworm "$WORK/root.tar"
		docker import "$WORK/root.tar" "$IMG" >/dev/null
		rm -f "$WORK/root.tar"
	else
		debootstrap --variant=minbase --include=git,ca-certificates \
		    bookworm "$WORK/root" >"$WORK/debootstrap.log" 2>&1
		tar -C "$WORK/root" -c . | docker import - "$IMG" >/dev/null
		rm -rf "$WORK/root"
	fi
}

# The commands, each timed and logged, as one script run inside.
steps_script() {
	local i=0 cmd
	echo 'cd /root/sandgate; fail=0'
	echo '[ -e /dev/loop-control ] || mknod /dev/loop-control c 10 237'
	echo 'for i in $(seq 0 63); do [ -e /dev/loop$i ] || mknod /dev/loop$i b 7 $i; done'
	echo 'echo "packages before: $(dpkg-query -f ".\n" -W | wc -l)" >/logs/machine.txt'
	echo 'for t in gcc cc cmake make docker dockerd; do command -v $t >/dev/null && echo "present before: $t"; done >>/logs/machine.txt'
	for cmd in "$@"; do
		i=$((i + 1))
		printf 'echo "=== %d: %s"; s=$(date +%%s)\n' "$i" "$cmd"
		printf '( %s ) >/logs/step%d.log 2>&1; rc=$?\n' "$cmd" "$i"
		printf 'tail -n 25 /logs/step%d.log\n' "$i"
		printf 'echo "%d|$rc|$(( $(date +%%s) - s ))" >>/logs/steps.txt\n' "$i"
		echo '[ $rc -eq 0 ] || fail=$rc'
	done
	echo 'echo "packages after: $(dpkg-query -f ".\n" -W | wc -l)" >>/logs/machine.txt'
	echo 'exit $fail'
}

fresh_image
git clone -q "$SRC" "$WORK/sandgate"
steps_script "$@" >"$WORK/steps.sh"
: >"$LOGS/steps.txt"
say "logs in $LOGS"

# Docker inside Docker: everything --privileged grants, spelled out, less
# CAP_SYS_RESOURCE where this machine's bounding set lacks it; the host's
# cgroup tree; loop device nodes made up front (a container's /dev is a
# snapshot taken at its start); the inner dockerd's data on a volume.
PRIV=(--cap-add ALL --security-opt seccomp=unconfined
    --security-opt apparmor=unconfined --security-opt systempaths=unconfined
    --device-cgroup-rule 'a *:* rwm' -v /sys/fs/cgroup:/sys/fs/cgroup)
if [ $(( 0x$(awk '/^CapBnd/ { print $2 }' /proc/self/status) >> 24 & 1 )) = 0 ]; then
	PRIV+=(--cap-drop SYS_RESOURCE)
fi
set +e
docker run --name "$NAME" "${PRIV[@]}" --cgroupns host \
    -v "$WORK/sandgate:/root/sandgate" -v "$WORK/steps.sh:/steps.sh:ro" \
    -v "$LOGS:/logs" -v /var/lib/docker --tmpfs /run --tmpfs /var/run \
    -e DEBIAN_FRONTEND=noninteractive "$IMG" bash /steps.sh
rc=$?
set -e

echo
cat "$LOGS/machine.txt" 2>/dev/null || true
echo
echo "| # | command | exit | seconds |"
echo "|--:|---|--:|--:|"
i=0
for cmd in "$@"; do
	i=$((i + 1))
	IFS='|' read -r _ code secs < <(grep "^$i|" "$LOGS/steps.txt" || echo "$i|?|?")
	echo "| $i | \`$cmd\` | $code | $secs |"
done
exit "$rc"
