#!/usr/bin/env bash
# A/B of the dropout kernel (--dropout_impl native vs parallel) for the eager handcraft model,
# float32 and bfloat16, runs alternating one at a time; prints the median step times.
# Usage: scripts/dropout_ab.sh OUT_DIR [bench flags...]
set -euo pipefail
cd "$(dirname "$0")/.."
out=$1; shift
BENCH=${BENCH:-./build/bench}
for dtype in float32 bfloat16; do
  for impl in native parallel; do
    "$BENCH" --dtype "$dtype" --dropout_impl "$impl" --save_dir "$out/$impl" --overwrite 1 \
      "$@" >/dev/null
  done
  python3 scripts/ab_medians.py "$out" "$dtype" native:native parallel:parallel
done
