#!/usr/bin/env bash
# setup.sh: everything a fresh Debian 12 machine needs before sandgate runs,
# done idempotently: Debian packages, the build, and a running dockerd.
#
#   scripts/setup.sh [--no-build] [--no-docker] [--with-gvisor]
#
# Sourced by demo.sh and test.sh; safe to run again at any time.
set -euo pipefail

SG_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SG_BUILD=${SG_BUILD:-$SG_ROOT/build}

# Build and run-time dependencies, all from Debian's archive.
SG_PACKAGES=(
	build-essential cmake pkg-config
	libevent-dev libssl-dev libc-ares-dev libyaml-dev libcmocka-dev
	libcurl4-openssl-dev libjansson-dev libidn2-dev libpsl-dev libzip-dev
	publicsuffix
	libseccomp-dev libunistring-dev
	docker.io e2fsprogs busybox-static mmdebstrap debootstrap
	git curl openssl python3 procps iproute2 ca-certificates
)

sg_log() { printf '[setup] %s\n' "$*" >&2; }

# Only the tests need these: clang and its compiler-rt runtimes (libFuzzer,
# ASan, UBSan; Debian's clang only recommends them) for the fuzz targets,
# valgrind for leak checks, rsyslog for the log shipper test (run with its
# own config, never the system's), logrotate for the rotations the log
# followers are tested under (rsyslog only recommends it, and packages go
# in without recommends), python3-jsonschema to check the OCSF
# export against its schema and (with python3-yaml) the Kubernetes
# manifests of deploy/kubernetes, time (/usr/bin/time) for the peak memory
# of the review commands, nodejs for a client and server that send and
# parse chunked trailers (test_proxy_terminate.py), strace to see which
# Docker requests an exec makes (test_exec_fresh_owner.sh).
SG_TEST_PACKAGES=(clang libclang-rt-14-dev valgrind rsyslog logrotate python3-jsonschema
	python3-yaml time nodejs strace)

sg_install_packages() {
	local missing=() p
	for p in "${SG_PACKAGES[@]}" "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
			grep -q 'install ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	sg_log "installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q >/dev/null
	apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
}

sg_build() {
	local dir=${1:-$SG_BUILD}; shift || true
	cmake -S "$SG_ROOT" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
	cmake --build "$dir" -j"$(nproc)" >/dev/null
}

sg_docker_ping() {
	curl -fsS --max-time 2 --unix-socket /var/run/docker.sock \
		http://docker/_ping >/dev/null 2>&1
}

# Start a daemon in the background, in a session of its own, with none of
# the caller's descriptors but the standard three: a lock the caller holds
# (flock) must not live on in dockerd and containerd.
#   sg_daemon LOG COMMAND [ARG...]
sg_daemon() {
	local log=$1 fd
	shift
	(
		for fd in /proc/$BASHPID/fd/*; do
			fd=${fd##*/}
			[ "$fd" -gt 2 ] && eval "exec $fd>&-"
		done
		exec setsid "$@" >>"$log" 2>&1 </dev/null
	) &
}

# Start dockerd in the background when none answers (no systemd here).
sg_start_docker() {
	sg_docker_ping && return 0
	[ -n "${DOCKER_HOST:-}" ] && [ "${DOCKER_HOST}" != unix:///var/run/docker.sock ] &&
		return 0
	sg_log "starting dockerd"
	mkdir -p /var/log
	sg_daemon /var/log/sandgate-dockerd.log dockerd
	local i
	for i in $(seq 1 120); do
		sg_docker_ping && return 0
		sleep 0.5
	done
	sg_log "dockerd did not answer within 60 s; see /var/log/sandgate-dockerd.log"
	tail -n 20 /var/log/sandgate-dockerd.log >&2 || true
	return 1
}

# gVisor for `--runtime runsc`: Debian's runsc, registered with dockerd
# (ptrace platform; "host" networking is the container's own namespace, so
# it stays on sandgate-internal). Opt-in: scripts/setup.sh --with-gvisor.
sg_install_gvisor() {
	local conf=/etc/docker/daemon.json json old
	sg_install_packages runsc
	# --oci-seccomp: gVisor applies the container's seccomp profile to the
	# sandbox's processes inside its own kernel (sandgate's profile refuses
	# unshare, ptrace, mount...), which runsc otherwise ignores.
	json='{
  "runtimes": {
    "runsc": {
      "path": "/usr/bin/runsc",
      "runtimeArgs": ["--platform=ptrace", "--network=host", "--oci-seccomp"]
    }
  }
}'
	old=${json/, \"--oci-seccomp\"/}
	if [ -s "$conf" ] && [ "$(cat "$conf")" != "$old" ]; then
		grep -q -- '--oci-seccomp' "$conf" && return 0
		sg_log "$conf exists: register runsc with runtimeArgs [\"--platform=ptrace\", \"--network=host\", \"--oci-seccomp\"] by hand (docs/controller.md)"
		return 1
	fi
	mkdir -p /etc/docker
	printf '%s\n' "$json" >"$conf"
	sg_log "registered runsc in $conf"
	pkill -HUP -x dockerd 2>/dev/null || true
	sleep 1
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	build=1 docker=1 gvisor=0
	for a in "$@"; do
		case $a in
		--no-build) build=0 ;;
		--no-docker) docker=0 ;;
		--with-gvisor) gvisor=1 ;;
		-h|--help) sed -n '2,7p' "$0"; exit 0 ;;
		*) echo "setup.sh: unknown option '$a'" >&2; exit 2 ;;
		esac
	done
	sg_install_packages
	[ $build = 1 ] && sg_build
	[ $docker = 1 ] && sg_start_docker
	[ $gvisor = 1 ] && sg_install_gvisor
	exit 0
fi
