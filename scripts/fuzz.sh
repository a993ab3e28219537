#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, AddressSanitizer + UndefinedBehaviorSanitizer) and runs
# each for a bounded time from the seed inputs in fuzz/seeds-*. Crashes land in build-fuzz/
# as crash-* files; each one found becomes a regression test in tests/test_fuzz_regressions.cpp.
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET]   (default 60)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
out=build-fuzz
mkdir -p "$out"
torch=$(.venv/bin/python -c 'import os, torch; print(os.path.dirname(torch.__file__))')
flags=(-std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
       -Iinclude -isystem "$torch/include" -isystem "$torch/include/torch/csrc/api/include"
       -L"$torch/lib" -Wl,-rpath,"$torch/lib")
clang++ "${flags[@]}" fuzz/fuzz_zip.cpp src/zip_reader.cpp -lz -o "$out/fuzz_zip"
clang++ "${flags[@]}" fuzz/fuzz_cli.cpp src/cli.cpp src/config.cpp -ltorch_cpu -lc10 \
  -o "$out/fuzz_cli"
status=0
for target in zip cli; do
  mkdir -p "$out/corpus-$target"
  echo "== fuzz_$target for ${seconds}s" >&2
  (cd "$out" && ./"fuzz_$target" -max_total_time="$seconds" -max_len=4096 -timeout=10 \
      "corpus-$target" "../fuzz/seeds-$target" 2>&1 | tail -n 3) || status=1
done
ls "$out"/crash-* 2>/dev/null && { echo "crashes found (see above)" >&2; status=1; }
exit $status
