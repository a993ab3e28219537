#!/usr/bin/env bash
# Fuzzes with libFuzzer: configures build-fuzz/ with clang, TB_FUZZ=ON and the sanitizers
# (AddressSanitizer + UndefinedBehaviorSanitizer; our sources instrumented for coverage), builds
# the CMake fuzz targets and runs each for a bounded time from the seed inputs in fuzz/seeds-*.
# Crashes land in build-fuzz/ as crash-* files; each one found becomes a regression test.
# (Every ordinary build also links the same targets on a standalone driver, and ctest runs them
# over their seeds: Fuzz.*.)
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET]   (default 60)
# Example: scripts/fuzz.sh 30
source "$(dirname "$0")/usage.sh"
tb_help "$0" "$@"
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
[[ "$seconds" =~ ^[1-9][0-9]*$ ]] || { echo "fuzz.sh: SECONDS '$seconds': use a whole number >= 1" >&2; exit 2; }
command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ is missing (apt-get install clang)" >&2; exit 2; }
bash scripts/install_deps.sh
out=build-fuzz
cmake -S . -B "$out" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
  -DTB_FUZZ=ON -DTB_BUILD_TESTS=OFF \
  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer" \
  >/dev/null
cmake --build "$out" -j "$(nproc)" --target fuzz_zip fuzz_cli
status=0
for target in zip cli; do
  mkdir -p "$out/corpus-$target"
  echo "== fuzz_$target for ${seconds}s" >&2
  (cd "$out" && ASAN_OPTIONS=detect_leaks=0 ./fuzz/"fuzz_$target" -max_total_time="$seconds" \
      -max_len=4096 -timeout=10 "corpus-$target" "../fuzz/seeds-$target" 2>&1 | tail -n 3) || status=1
done
ls "$out"/crash-* 2>/dev/null && { echo "crashes found (see above)" >&2; status=1; }
exit $status
