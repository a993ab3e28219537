#!/usr/bin/env bash
# The fused kernels' micro-benchmarks (benchmarks/kernel_bench.cpp, Google Benchmark) at the
# reference shapes on 2 threads: JSON in OUT_DIR/kernel_bench.json, then a table of each
# kernel's bandwidth against this machine's copy bandwidth and each fused op (forward +
# backward) against its eager composition.
# Usage: scripts/kernel_bench.sh OUT_DIR [extra Google Benchmark flags, e.g. --benchmark_filter=Op]
# Example: scripts/kernel_bench.sh runs/kernels --benchmark_filter=Op
source "$(dirname "$0")/usage.sh"
tb_start "$0" "[benchmark flags...]" "$@"
shift  # OUT_DIR, now $out
exe=${KERNEL_BENCH:-./build/kernel_bench}
[ -x "$exe" ] || { echo "kernel_bench.sh: $exe not found: run scripts/build.sh" >&2; exit 2; }
mkdir -p "$out"
"$exe" --benchmark_min_time="${MIN_TIME:-0.5}" --benchmark_repetitions="${REPS:-3}" \
  --benchmark_report_aggregates_only=true --benchmark_out="$out/kernel_bench.json" \
  --benchmark_out_format=json "$@" >&2
"${PYTHON:-.venv/bin/python}" scripts/kernel_bench_table.py "$out/kernel_bench.json"
