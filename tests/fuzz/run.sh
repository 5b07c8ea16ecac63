#!/usr/bin/env bash
# run.sh: build every tests/fuzz/fuzz_*.c with clang and libFuzzer, then run
# each for SECONDS (default 60) on a copy of its seed corpus.
#   tests/fuzz/run.sh [SECONDS] [TARGET...]
# A crash fails the run and leaves the input in build-fuzz/findings/.
# For a long local run: tests/fuzz/run.sh 600 fuzz_http
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
secs=${1:-60}; shift || true
build=$root/build-fuzz

# The toolchain, before any target: clang and the compiler-rt runtimes that
# libFuzzer, ASan and UBSan link against (Debian's clang only recommends
# them). Says what is missing in one line rather than a linker error per
# target.
fuzz_toolchain() {
	local major dir lib arch missing=()
	if ! command -v clang >/dev/null 2>&1; then
		echo "fuzz: clang is not installed (Debian 12: apt-get install clang libclang-rt-14-dev)" >&2
		return 1
	fi
	major=$(clang -dumpversion | cut -d. -f1)
	dir=$(clang --print-runtime-dir)
	arch=$(uname -m)
	for lib in fuzzer asan ubsan_standalone; do
		[ -e "$dir/libclang_rt.$lib-$arch.a" ] || [ -e "$dir/libclang_rt.$lib.a" ] ||
			missing+=("libclang_rt.$lib")
	done
	if [ ${#missing[@]} -gt 0 ]; then
		echo "fuzz: clang $major lacks its compiler-rt runtimes (${missing[*]} not in $dir): install libclang-rt-$major-dev" >&2
		return 1
	fi
}
fuzz_toolchain || exit 1
cmake -S "$root" -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug \
	-DSANDGATE_FUZZ=ON -DBUILD_TESTING=ON >/dev/null
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
	for f in "$root"/tests/fuzz/fuzz_*.c; do targets+=("$(basename "$f" .c)"); done
fi
cmake --build "$build" -j"$(nproc)" --target "${targets[@]}" >/dev/null
mkdir -p "$build/findings"
jobs_max=${SANDGATE_FUZZ_JOBS:-$(nproc)}

# One target: its seeds copied to a scratch corpus, libFuzzer for $secs.
run_one() {
	local t=$1 name=${1#fuzz_} work
	work=$build/corpus/$name
	mkdir -p "$work"
	[ -d "$root/tests/fuzz/corpus/$name" ] && cp -r "$root/tests/fuzz/corpus/$name/." "$work/"
	if "$build/fuzz/$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
		-artifact_prefix="$build/findings/$t-" -print_final_stats=1 "$work" \
		>"$build/findings/$t.log" 2>&1; then
		echo ok >"$build/findings/$t.status"
	else
		echo failed >"$build/findings/$t.status"
	fi
}

for t in "${targets[@]}"; do
	rm -f "$build/findings/$t.status"
	run_one "$t" &
	while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n || true; done
done
wait
fail=0
for t in "${targets[@]}"; do
	if [ "$(cat "$build/findings/$t.status" 2>/dev/null)" = ok ]; then
		runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$build/findings/$t.log" | grep -o '[0-9]*$' || echo '?')
		echo "[fuzz] $t: ok, $runs runs in ${secs}s"
	else
		echo "[fuzz] $t: FAILED; see $build/findings/$t.log"
		tail -n 30 "$build/findings/$t.log"
		fail=1
	fi
done
exit $fail
