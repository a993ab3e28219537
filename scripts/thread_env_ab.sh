#!/usr/bin/env bash
# A/B of bench's threading environment: the default (bench sets OMP_WAIT_POLICY=PASSIVE and
# OPENBLAS_THREAD_TIMEOUT=4 and re-executes itself) against the runtimes' own defaults
# (TRAINBENCH_THREAD_ENV=1 skips the set-up). Runs alternate, one at a time.
# Usage: scripts/thread_env_ab.sh OUT_DIR [bench flags...]
set -euo pipefail
cd "$(dirname "$0")/.."
out=$1; shift
BENCH=${BENCH:-./build/bench}
for dtype in float32 bfloat16; do
  for mode in tuned default; do
    if [ "$mode" = default ]; then
      env TRAINBENCH_THREAD_ENV=1 "$BENCH" --dtype "$dtype" --save_dir "$out/$mode" "$@" >/dev/null 2>&1
    else
      "$BENCH" --dtype "$dtype" --save_dir "$out/$mode" "$@" >/dev/null 2>&1
    fi
  done
  echo "$dtype: $(python3 -c "
import json,sys
t=json.load(open('$out/tuned_handcraft_layer8_$dtype/summary.json'))['step_time_ms']['median']
d=json.load(open('$out/default_handcraft_layer8_$dtype/summary.json'))['step_time_ms']['median']
print(f'median step ms: set-up {t:.0f}, runtime defaults {d:.0f}, speed-up {d/t:.2f}x')")"
done
