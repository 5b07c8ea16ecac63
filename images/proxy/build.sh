#!/usr/bin/env bash
# build.sh: the proxy's image, sandgate/proxy: a root filesystem holding
# sandgate-proxy, the shared libraries it links (from ldd) and the files
# glibc and c-ares read — no shell, no package manager. Imported with
# docker import; runs as 65532:65532.
#
#   images/proxy/build.sh BINARY [--tag NAME] [--force]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$here/../lib.sh"

bin=${1:?usage: build.sh BINARY [--tag NAME] [--force]}; shift
tag=sandgate/proxy:latest force=0
while [ $# -gt 0 ]; do
	case $1 in
	--tag) tag=$2; shift ;;
	--force) force=1 ;;
	*) echo "build.sh: unknown option '$1'" >&2; exit 2 ;;
	esac
	shift
done
[ -x "$bin" ] || { echo "build.sh: $bin is not an executable" >&2; exit 1; }
# Rebuild when the binary changed: its digest is a label of the image.
sum=$(sha256sum "$bin" | cut -d' ' -f1)
if [ $force = 0 ] && [ "$(docker image inspect -f '{{ index .Config.Labels "org.sandgate.binary" }}' "$tag" 2>/dev/null)" = "$sum" ]; then
	echo "image $tag is up to date"
	exit 0
fi
root=$(mktemp -d /var/tmp/sandgate-proxy.XXXXXX)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/usr/bin" "$root/etc/sandgate/policy.d" "$root/var/log/sandgate" \
	"$root/run/sandgate" "$root/tmp"
install -m 0755 "$bin" "$root/usr/bin/sandgate-proxy"
# Every library the binary needs, at the same path, plus the loader.
ldd "$bin" | awk '/=> \// { print $3 } /^\t\/lib/ { print $1 }' | sort -u |
while read -r lib; do
	mkdir -p "$root$(dirname "$lib")"
	cp -L "$lib" "$root$lib"
done
# The public suffix list's text: the policy validator reads it to refuse
# wildcards with public suffixes under them (egress-proxy/core/policy_psl.c).
psl=/usr/share/publicsuffix/public_suffix_list.dat
[ -f "$psl" ] && install -D -m 0644 "$psl" "$root$psl"
printf 'root:x:0:0::/:/nonexistent\nsandgate-proxy:x:65532:65532::/:/nonexistent\n' > "$root/etc/passwd"
printf 'root:x:0:\nsandgate-proxy:x:65532:\n' > "$root/etc/group"
printf 'hosts: files dns\n' > "$root/etc/nsswitch.conf"
: > "$root/etc/hosts"
: > "$root/etc/resolv.conf"
img_import "$root" "$tag" --change 'USER 65532:65532' \
	--change 'ENTRYPOINT ["/usr/bin/sandgate-proxy"]' \
	--change "LABEL org.sandgate.binary=$sum"
echo "built $tag"
