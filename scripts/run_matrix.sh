#!/usr/bin/env bash
# Runs bench over model x dtype x attention, one configuration after another (never in
# parallel, so the timings are comparable), then prints one table of all of them.
# Usage: scripts/run_matrix.sh OUT_DIR [bench flags common to every run...]
# Example (CPU, reference shape, batch 8):
#   scripts/run_matrix.sh runs/cpu8 --num_layer 8 --batch_size 8 --steps 12 --warmup_steps 2
# MATRIX overrides the list: "model:dtype:flash[:compile] ..." (default: six CPU-runnable ones).
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: $0 OUT_DIR [bench flags...]" >&2; exit 2; }
out=$1; shift
BENCH=${BENCH:-./build/bench}
matrix=${MATRIX:-"handcraft:float32:0 handcraft:float32:1 handcraft:bfloat16:0 handcraft:bfloat16:1 torch:float32:0 torch:bfloat16:0"}
mkdir -p "$out"
dirs=()
i=0
for entry in $matrix; do
  IFS=: read -r model dtype flash compile <<<"$entry"
  compile=${compile:-0}
  i=$((i + 1))
  echo "== $model $dtype flash=$flash compile=$compile" >&2
  if "$BENCH" --model "$model" --dtype "$dtype" --flash "$flash" --compile "$compile" \
      --save_dir "$out/$i" --eval_batches 2 "$@" >/dev/null; then
    for d in "$out/${i}"_*; do [ -d "$d" ] && dirs+=("$d"); done
  else
    echo "   (bench failed; see above; its folder is left out of the table)" >&2
  fi
done
"${PYTHON:-.venv/bin/python}" scripts/summarize_runs.py "${dirs[@]}"
