#!/usr/bin/env bash
# The fused kernels' micro-benchmarks (benchmarks/kernel_bench.cpp, Google Benchmark) at the
# reference shapes on 2 threads: JSON in OUT_DIR/kernel_bench.json, then a table of each
# kernel's bandwidth against this machine's copy bandwidth and each fused op (forward +
# backward) against its eager composition.
# Usage: scripts/kernel_bench.sh OUT_DIR [extra Google Benchmark flags, e.g. --benchmark_filter=Op]
# Example: scripts/kernel_bench.sh runs/kernels --benchmark_filter=Op
source "$(dirname "$0")/usage.sh"
tb_help "$0" "$@"
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: $0 OUT_DIR [benchmark flags...]" >&2; exit 2; }
out=$(tb_out_dir "$1"); shift
exe=${KERNEL_BENCH:-./build/kernel_bench}
[ -x "$exe" ] || { echo "kernel_bench.sh: $exe not found: run scripts/build.sh" >&2; exit 2; }
mkdir -p "$out"
"$exe" --benchmark_min_time="${MIN_TIME:-0.5}" --benchmark_repetitions="${REPS:-3}" \
  --benchmark_report_aggregates_only=true --benchmark_out="$out/kernel_bench.json" \
  --benchmark_out_format=json "$@" >&2
"${PYTHON:-.venv/bin/python}" - "$out/kernel_bench.json" <<'PY'
import json, sys
runs = [b for b in json.load(open(sys.argv[1]))["benchmarks"] if b.get("aggregate_name") == "median"]
copy = next((b["bytes_per_second"] for b in runs if b["run_name"].startswith("BM_MemoryCopy")), None)
print("| kernel | dtype | time us (median) | GB/s | of copy bandwidth |\n|---|---|---|---|---|")
if copy:
    print(f"| memory copy | - | - | {copy / 1e9:.1f} | 100% |")
def us(b):  # real_time in microseconds, whatever unit the run reported
    return b["real_time"] * {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}[b.get("time_unit", "ns")]
for b in runs:
    if b["run_name"].startswith("BM_Kernel"):
        gbs = b.get("bytes_per_second", 0)
        share = f"{100 * gbs / copy:.0f}%" if copy else "-"
        print(f"| {b['run_name'].split('/')[0][9:]} | {b.get('label', '')} | {us(b):.0f} | {gbs / 1e9:.1f} | {share} |")
print("\n| op (forward + backward) | dtype | eager ms | fused ms | fused speed-up |\n|---|---|---|---|---|")
ops = {}
for b in runs:
    if b["run_name"].startswith("BM_Op"):
        name, dt, fused = b["run_name"].split("/")[0][5:], b["run_name"].split("/")[1], b["run_name"].split("/")[2]
        ops.setdefault((name, dt), {})[fused] = us(b) / 1e3
for (name, dt), t in ops.items():
    if "0" in t and "1" in t:
        print(f"| {name} | {'float32' if dt == '0' else 'bfloat16'} | {t['0']:.2f} | {t['1']:.2f} | {t['0'] / t['1']:.2f}x |")
PY
