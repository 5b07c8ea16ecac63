# busybox-image.sh: build the local test image sandgate-test/busybox:latest
# from Debian's busybox-static, without any registry. Source this file and
# call sg_busybox_image; it does nothing when the image already exists.
# The image holds /bin/busybox, one symlink per applet, /etc/passwd with
# root, user (1000) and nobody, and empty /tmp, /workspace and /.sandgate.

SG_BUSYBOX_IMAGE=${SG_BUSYBOX_IMAGE:-sandgate-test/busybox:latest}

sg_busybox_image() {
	local bb root rc
	if docker image inspect "$SG_BUSYBOX_IMAGE" >/dev/null 2>&1; then
		return 0
	fi
	bb=$(command -v busybox || true)
	if [ -z "$bb" ] || ! file -L "$bb" 2>/dev/null | grep -q 'statically linked'; then
		echo "sg_busybox_image: a static busybox is needed (apt-get install busybox-static)" >&2
		return 1
	fi
	root=$(mktemp -d /tmp/sg-busybox.XXXXXX) || return 1
	mkdir -p "$root/bin" "$root/etc" "$root/tmp" "$root/workspace" \
	    "$root/.sandgate" "$root/proc" "$root/sys" "$root/dev"
	chmod 1777 "$root/tmp"
	cp "$bb" "$root/bin/busybox"
	for applet in $("$bb" --list); do
		[ "$applet" = busybox ] || ln -sf busybox "$root/bin/$applet"
	done
	printf 'root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000:user:/workspace:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' >"$root/etc/passwd"
	printf 'root:x:0:\nuser:x:1000:\nnogroup:x:65534:\n' >"$root/etc/group"
	# flock: two test scripts may build at the same time.
	(
		flock 9
		docker image inspect "$SG_BUSYBOX_IMAGE" >/dev/null 2>&1 ||
		    tar -C "$root" -c . | docker import \
		    --change 'ENV PATH=/bin' --change 'CMD ["/bin/sh"]' \
		    - "$SG_BUSYBOX_IMAGE" >/dev/null
	) 9>/tmp/sg-busybox-image.lock
	rc=$?
	rm -rf "$root"
	return $rc
}
