# common.sh: shared helpers for the integration tests (source it).
#
#   sg_require_docker       skip (exit 77) unless Docker answers and we are root
#   sg_test_image           build sandgate-test/busybox:latest if missing
#   sg_base_image           build sandgate's base image, or fail and exit
#   sg_demo_registry NET DIR  the demo registry on the --internal network
#                           NET serving DIR (DIR/hosts names it), or fail
#                           and exit
#   sg_setup                temp state/log/record folders ($SG_TMP), $SG
#                           (the binary)
#   sg_test_sandbox         a sandbox of the test image (--network none,
#                           one file in $SG_TMP/src) as $SBX, discarded at
#                           exit; a create that fails ends the test
#   sg_run VAR_PREFIX CMD.. run CMD, keep stdout/stderr/rc in
#                           ${PREFIX}_out, ${PREFIX}_err, ${PREFIX}_rc
#   ok / fail NAME [WHY]    record one result
#   assert_eq NAME WANT GOT, assert_contains NAME HAYSTACK NEEDLE,
#   assert_not_contains NAME HAYSTACK NEEDLE
#   sg_summary              print "N passed, N failed"; exit 1 on failure
#
# Tests never pull: the image is built from Debian's busybox-static.

SG_TEST_IMAGE=${SG_TEST_IMAGE:-sandgate-test/busybox}
SG_PASSED=0
SG_FAILED=0
SG_CLEANUP_CMDS=()

sg_require_docker() {
	if [ "$(id -u)" != 0 ]; then
		echo "skip: needs root (loop mounts, cgroups)"
		exit 77
	fi
	if ! docker info >/dev/null 2>&1; then
		echo "skip: Docker is not reachable"
		exit 77
	fi
}

# Docker with gVisor's runsc registered with dockerd, else skip (77).
sg_require_runsc() {
	sg_require_docker
	if ! docker info --format '{{json .Runtimes}}' | grep -q '"runsc"'; then
		echo "skip: gVisor (runsc) is not registered with dockerd here"
		exit 77
	fi
}

sg_base_image() {
	"$SG" image build >/dev/null 2>"$SG_TMP/image.err" && return 0
	cat "$SG_TMP/image.err"
	fail "base image builds"
	sg_summary
	exit 1
}

# sg_proxy_up TAG: `sandgate proxy start` with the repository's policy.d,
# its upstream side an --internal network of its own (sgtest-TAG-PID);
# both go at exit. A proxy that does not start ends the test.
sg_proxy_up() {
	EGRESS=sgtest-$1-$$
	docker network create --internal "$EGRESS" >/dev/null ||
		{ fail "egress network created"; sg_summary; exit 1; }
	sg_on_exit "'$SG' proxy stop; docker network rm $EGRESS"
	sg_run r "$SG" proxy start --egress-network "$EGRESS" \
		--policy-dir "$SRC/policy.d" --log-dir "$SANDGATE_LOG_DIR"
	assert_eq "proxy start" 0 "$r_rc"
	[ "$r_rc" = 0 ] || { echo "$r_err"; sg_summary; exit 1; }
}

sg_demo_registry() {
	local root
	root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
	bash "$root/images/demo-registry/start.sh" "$1" "$2" >/dev/null &&
		return 0
	fail "demo registry starts"
	sg_summary
	exit 1
}

# A tiny image: /bin/busybox, its applets as symlinks, a sandbox user.
sg_test_image() {
	local dir bb
	if docker image inspect "$SG_TEST_IMAGE:latest" >/dev/null 2>&1; then
		return 0
	fi
	bb=/bin/busybox
	if [ ! -x "$bb" ] || ! file -L "$bb" 2>/dev/null | grep -q static; then
		bb=$(command -v busybox || true)
	fi
	if [ -z "$bb" ] || [ ! -x "$bb" ]; then
		echo "cannot build $SG_TEST_IMAGE: install busybox-static" >&2
		return 1
	fi
	dir=$(mktemp -d)
	mkdir -p "$dir/bin" "$dir/etc" "$dir/tmp" "$dir/home/sandbox" \
	    "$dir/workspace" "$dir/proc" "$dir/sys" "$dir/dev"
	cp "$bb" "$dir/bin/busybox"
	for app in $("$dir/bin/busybox" --list); do
		[ "$app" = busybox ] || ln -sf busybox "$dir/bin/$app"
	done
	printf 'root:x:0:0:root:/root:/bin/sh\nsandbox:x:1000:1000:sandbox:/home/sandbox:/bin/sh\n' \
	    >"$dir/etc/passwd"
	printf 'root:x:0:\nsandbox:x:1000:\n' >"$dir/etc/group"
	chmod 1777 "$dir/tmp"
	tar -C "$dir" -cf - . | docker import \
	    -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
	    - "$SG_TEST_IMAGE:latest" >/dev/null
	local rc=$?
	rm -rf "$dir"
	return $rc
}

# Temp state and logs; the binary under test.
sg_setup() {
	SG_BIN=${SANDGATE_BIN:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build/bin}
	SG="$SG_BIN/sandgate"
	if [ ! -x "$SG" ]; then
		echo "no sandgate binary at $SG (set SANDGATE_BIN)" >&2
		exit 1
	fi
	if [ -z "${SANDGATE_PROBE:-}" ] && [ -x "$SG_BIN/sandgate-probe" ]; then
		export SANDGATE_PROBE="$SG_BIN/sandgate-probe"
	fi
	SG_TMP=$(mktemp -d /tmp/sandgate-test.XXXXXX)
	export SANDGATE_STATE="$SG_TMP/state"
	export SANDGATE_LOG_DIR="$SG_TMP/logs"
	export SANDGATE_RECORD_DIR="$SG_TMP/records"
	mkdir -p "$SANDGATE_STATE" "$SANDGATE_LOG_DIR" "$SANDGATE_RECORD_DIR"
	trap sg_teardown EXIT
}

sg_test_sandbox() {
	mkdir -p "$SG_TMP/src"
	echo test >"$SG_TMP/src/a.txt"
	sg_run r "$SG" create "$SG_TMP/src" --image "$SG_TEST_IMAGE" \
	    --network none
	assert_eq "create" 0 "$r_rc"
	[ "$r_rc" = 0 ] || { echo "$r_err"; sg_summary; }
	SBX=$r_out
	sg_on_exit "'$SG' discard $SBX"
}

# Run at exit: registered cleanups, then the temp folder.
sg_teardown() {
	local c
	for c in "${SG_CLEANUP_CMDS[@]}"; do
		eval "$c" >/dev/null 2>&1 || true
	done
	if [ -n "${SG_TMP:-}" ] && [ -d "$SG_TMP" ]; then
		# a sandbox left mounted must not be deleted through its mount
		grep -q " $SG_TMP/" /proc/self/mounts && \
		    awk -v p="$SG_TMP/" 'index($2, p) == 1 { print $2 }' /proc/self/mounts |
		    sort -r | xargs -r -n1 umount -l
		rm -rf "$SG_TMP"
	fi
}

sg_on_exit() {
	SG_CLEANUP_CMDS+=("$1")
}

# sg_run PREFIX CMD...: capture stdout, stderr and the exit code.
sg_run() {
	local p=$1
	shift
	"$@" >"$SG_TMP/.out" 2>"$SG_TMP/.err"
	printf -v "${p}_rc" '%s' "$?"
	printf -v "${p}_out" '%s' "$(cat "$SG_TMP/.out")"
	printf -v "${p}_err" '%s' "$(cat "$SG_TMP/.err")"
}

ok() {
	SG_PASSED=$((SG_PASSED + 1))
	echo "ok - $1"
}

fail() {
	SG_FAILED=$((SG_FAILED + 1))
	echo "FAIL - $1${2:+: $2}"
}

assert_eq() {
	if [ "$2" = "$3" ]; then ok "$1"; else fail "$1" "want '$2', got '$3'"; fi
}

assert_contains() {
	case "$2" in
	*"$3"*) ok "$1" ;;
	*) fail "$1" "'$3' not in '$(printf %.400s "$2")'" ;;
	esac
}

assert_not_contains() {
	case "$2" in
	*"$3"*) fail "$1" "'$3' found in '$(printf %.400s "$2")'" ;;
	*) ok "$1" ;;
	esac
}

sg_summary() {
	echo "$SG_PASSED passed, $SG_FAILED failed"
	[ "$SG_FAILED" -eq 0 ]
}
