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
  python3 - "$out" "$dtype" <<'PY'
import json, sys, glob
out, dtype = sys.argv[1], sys.argv[2]
ms = {impl: json.load(open(glob.glob(f"{out}/{impl}_handcraft_layer*_{dtype}/summary.json")[0]))
      ["step_time_ms"]["median"] for impl in ("native", "parallel")}
print(f"{dtype}: median step ms native {ms['native']:.0f}, parallel {ms['parallel']:.0f}, "
      f"speed-up {ms['native'] / ms['parallel']:.2f}x")
PY
done
