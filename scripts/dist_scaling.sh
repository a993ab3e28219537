#!/usr/bin/env bash
# Data-parallel scaling on this machine: one process against two (scripts/launch.sh, Gloo),
# each with one thread and the same per-rank batch (weak scaling), plus one process with two
# threads and the global batch (the same cores used without communication), and two processes
# with the all-reduce after backward instead of overlapped (its full cost). Runs one at a time.
# Usage: scripts/dist_scaling.sh OUT_DIR [bench flags...]   (e.g. --num_layer 8 --batch_size 4)
# Prints a markdown table: global seq/s, scaling efficiency against ideal, exposed
# communication per step and its share of the step.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: scripts/dist_scaling.sh OUT_DIR [bench flags...]" >&2; exit 2; }
out=$1; shift
BENCH=${BENCH:-./build/bench}
batch=4
args=()  # the flags given, without --batch_size (set per run below: bench refuses a flag twice)
while [ $# -gt 0 ]; do
  case "$1" in
    --batch_size) batch=$2; shift 2 ;;
    --threads) echo "dist_scaling.sh: --threads is set per run (1, or 2 for the one-process run)" >&2; exit 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
common=(--overwrite 1 "${args[@]}")
port=$((29600 + RANDOM % 300))
"$BENCH" "${common[@]}" --threads 1 --batch_size "$batch" --save_dir "$out/p1" >/dev/null
bash scripts/launch.sh --port "$port" 2 "$BENCH" "${common[@]}" --threads 1 --batch_size "$batch" \
  --save_dir "$out/p2" >/dev/null
"$BENCH" "${common[@]}" --threads 2 --batch_size $((2 * batch)) --save_dir "$out/t2" >/dev/null
bash scripts/launch.sh --port $((port + 1)) 2 "$BENCH" "${common[@]}" --threads 1 \
  --batch_size "$batch" --dist_overlap 0 --save_dir "$out/p2seq" >/dev/null
"${PYTHON:-.venv/bin/python}" - "$out" <<'PY'
import glob, json, sys
out = sys.argv[1]
def load(prefix):
    d = glob.glob(f"{out}/{prefix}_*")[0]
    return json.load(open(d + "/summary.json"))
rows = [("p1", "1 process x 1 thread"), ("p2", "2 processes x 1 thread, overlapped all-reduce"),
        ("p2seq", "2 processes x 1 thread, all-reduce after backward"),
        ("t2", "1 process x 2 threads, global batch")]
base = load("p1")
print("| run | global batch | step ms (median) | global seq/s | vs 1 process | comm ms/step | comm share |")
print("|---|---|---|---|---|---|---|")
for prefix, label in rows:
    s = load(prefix)
    comm = s.get("communication_ms")
    share = s.get("communication_share")
    print(f"| {label} | {s['global_batch_size']} | {s['step_time_ms']['median']:.0f} | "
          f"{s['sequences_per_s']:.2f} | {s['sequences_per_s'] / base['sequences_per_s']:.2f}x | "
          f"{'-' if comm is None else f'{comm:.1f}'} | "
          f"{'-' if share is None else f'{100 * share:.1f}%'} |")
PY
