#!/usr/bin/env bash
# build.sh: the sandboxes' default image, sandgate/base, from Debian's
# packages: a minbase system (mmdebstrap, or debootstrap) + python3, pip, venv, git, curl and
# ca-certificates, a non-root user "sandbox" (1000:1000), and optionally
# nodejs and npm. The package list with versions is written to
# /usr/share/sandgate/manifest.txt inside the image and to MANIFEST_OUT.
#
#   images/base/build.sh [--with node] [--tag NAME] [--manifest-out FILE]
#
# Idempotent: an existing image of that tag is left alone unless --force.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../lib.sh"

tag=sandgate/base:latest with_node=0 force=0 manifest_out=
while [ $# -gt 0 ]; do
	case $1 in
	--with) [ "${2:-}" = node ] || { echo "build.sh: --with takes 'node'" >&2; exit 2; }
		with_node=1; shift ;;
	--tag) tag=$2; shift ;;
	--manifest-out) manifest_out=$2; shift ;;
	--force) force=1 ;;
	-h|--help) sed -n '2,10p' "$0"; exit 0 ;;
	*) echo "build.sh: unknown option '$1'" >&2; exit 2 ;;
	esac
	shift
done
if [ $force = 0 ] && docker image inspect "$tag" >/dev/null 2>&1; then
	echo "image $tag exists"
	exit 0
fi
mirror=$(img_debian_mirror)
root=$(mktemp -d /var/tmp/sandgate-base.XXXXXX)
trap 'rm -rf "$root" "$root.log"' EXIT
pkgs=python3,python3-pip,python3-venv,git,curl,ca-certificates,procps
[ $with_node = 1 ] && pkgs=$pkgs,nodejs,npm
# mmdebstrap (Debian's faster debootstrap: one apt run, parallel
# downloads) when present, else debootstrap; both make a minbase system.
if command -v mmdebstrap >/dev/null; then
	echo "mmdebstrap bookworm minbase ($pkgs) ..." >&2
	mmdebstrap --variant=minbase --include="$pkgs" bookworm "$root" "$mirror" \
		>"$root.log" 2>&1 || { tail -n 30 "$root.log" >&2; exit 1; }
elif command -v debootstrap >/dev/null; then
	echo "debootstrap bookworm minbase ($pkgs) ..." >&2
	debootstrap --variant=minbase --include="$pkgs" bookworm "$root" "$mirror" \
		>"$root.log" 2>&1 || { tail -n 30 "$root.log" >&2; exit 1; }
else
	echo "neither mmdebstrap nor debootstrap is installed" >&2
	exit 1
fi
chroot "$root" /usr/sbin/groupadd -g 1000 sandbox
chroot "$root" /usr/sbin/useradd -u 1000 -g 1000 -d /home/sandbox -s /bin/sh sandbox
mkdir -p "$root/home/sandbox" "$root/workspace" "$root/usr/share/sandgate" "$root/.sandgate"
chown 1000:1000 "$root/home/sandbox" "$root/workspace"
chroot "$root" dpkg-query -W -f '${Package} ${Version}\n' | sort > "$root/usr/share/sandgate/manifest.txt"
# pip must not refuse installs into a user venv or --user: the sandbox has
# no system site to protect (PEP 668 marker removed).
rm -f "$root"/usr/lib/python3*/EXTERNALLY-MANAGED
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
[ -n "$manifest_out" ] && cp "$root/usr/share/sandgate/manifest.txt" "$manifest_out"
img_import "$root" "$tag" \
	--change 'USER 1000:1000' --change 'WORKDIR /workspace' \
	--change 'ENV HOME=/home/sandbox PATH=/home/sandbox/.local/bin:/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8' \
	--change 'CMD ["/bin/sh"]' \
	--change "LABEL org.sandgate.manifest=/usr/share/sandgate/manifest.txt"
echo "built $tag ($(wc -l < "$root/usr/share/sandgate/manifest.txt") packages)"
