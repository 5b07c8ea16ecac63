#!/usr/bin/env bash
# test_attacks_runsc.sh: the attack suite again, every sandbox under gVisor
# (--runtime runsc). scripts/test.sh registers Debian's runsc with dockerd
# first (setup.sh's sg_install_gvisor); where runsc is not registered the
# test skips (77) and says so.
set -u
HERE=$(dirname "$0")
if docker info >/dev/null 2>&1 &&
    ! docker info --format '{{json .Runtimes}}' | grep -q '"runsc"'; then
	echo "skip: gVisor (runsc) is not registered with dockerd here (scripts/setup.sh --with-gvisor registers it)"
	exit 77
fi
exec bash "$HERE/test_attacks.sh" --runtime runsc
