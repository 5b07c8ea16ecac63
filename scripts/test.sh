#!/usr/bin/env bash
# test.sh: every test, on a fresh Debian 12 machine as root.
#   1. installs packages, builds, starts dockerd (setup.sh);
#   2. builds with ASan+UBSan and runs the unit tests under them, then the
#      integration tests but the attack suite (which runs on the normal
#      build in step 4; it passes under ASan too, ~2 min more);
#   3. builds every target with clang (-Werror), then the fuzz targets, and
#      runs each for SANDGATE_FUZZ_SECONDS (60);
#   4. registers gVisor (Debian's runsc) with dockerd and runs all tests,
#      unit and integration, on the normal build; the attack suite runs
#      twice, under runc and under runsc.
# ctest runs two tests at a time: the tests that use Docker take turns (a
# RESOURCE_LOCK), the tests of proxies on loopback only run beside any
# other, and the attack suite runs alone (tests/CMakeLists.txt).
# Exits non-zero when anything fails, and then the last lines are ctest's
# summary; when all pass, the attack tables (runc and runsc) follow it.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

sg_install_packages "${SG_TEST_PACKAGES[@]}"
sg_start_docker

sg_log "sanitizer build (ASan+UBSan) and unit tests"
sg_build "$SG_ROOT/build-asan" -DCMAKE_BUILD_TYPE=Debug -DSANDGATE_SANITIZE=ON
ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:abort_on_error=1 \
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	ctest --test-dir "$SG_ROOT/build-asan" -L unit --output-on-failure -j2 |
	tail -n 5
sg_log "integration tests on the sanitizer build"
ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:abort_on_error=1 \
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	ctest --test-dir "$SG_ROOT/build-asan" -L integration -E test_attacks \
	--output-on-failure -j2

sg_log "clang build of every target (warnings are errors there too)"
sg_build "$SG_ROOT/build-clang" -DCMAKE_C_COMPILER=clang

if [ -d "$SG_ROOT/tests/fuzz" ] && ls "$SG_ROOT"/tests/fuzz/fuzz_*.c >/dev/null 2>&1; then
	sg_log "fuzz targets, ${SANDGATE_FUZZ_SECONDS:-60} s each"
	bash "$SG_ROOT/tests/fuzz/run.sh" "${SANDGATE_FUZZ_SECONDS:-60}"
fi

sg_log "build and all tests"
sg_build "$SG_BUILD"
# gVisor, so that the attack suite also runs under --runtime runsc
sg_install_gvisor ||
	sg_log "runsc is not registered: integration.test_attacks_runsc will skip"
ctest --test-dir "$SG_BUILD" --output-on-failure -j2
# ctest shows a passing test's output only in its log: the attack tables
awk '/^sandgate attack suite \(/ { on = 1 } on { print }
    on && /^runtime |^gVisor / { on = 0; print "" }' \
	"$SG_BUILD/Testing/Temporary/LastTest.log" 2>/dev/null || true
