#!/usr/bin/env bash
# lib.sh: shared by the image builders. Sourced, not run.

# The Debian mirror this machine's apt already uses (never hard-coded, so
# the images come from wherever the host's packages come from).
img_debian_mirror() {
	local m
	m=$(sed -n 's/^URIs:[[:space:]]*//p' /etc/apt/sources.list.d/*.sources 2>/dev/null |
		grep -v security | head -n 1)
	[ -n "$m" ] || m=$(awk '$1 == "deb" && $0 !~ /security/ { print $2; exit }' \
		/etc/apt/sources.list 2>/dev/null)
	[ -n "$m" ] || { echo "cannot find the Debian mirror in apt's sources" >&2; return 1; }
	echo "${m%% *}"
}

# docker import a root filesystem folder as NAME with the given CMD/USER.
img_import() {
	local dir=$1 name=$2; shift 2
	tar -C "$dir" --numeric-owner -c . | docker import "$@" - "$name" >/dev/null
}
