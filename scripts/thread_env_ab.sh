#!/usr/bin/env bash
# A/B of bench's threading environment: the default (bench sets OPENBLAS_THREAD_TIMEOUT=4, and
# OMP_WAIT_POLICY=PASSIVE for float32, then re-executes itself) against the runtimes' own
# defaults (TRAINBENCH_THREAD_ENV=1 skips the set-up). Runs alternate, one at a time.
# Usage: scripts/thread_env_ab.sh OUT_DIR [bench flags...]
set -euo pipefail
cd "$(dirname "$0")/.."
out=$1; shift
BENCH=${BENCH:-./build/bench}
for dtype in float32 bfloat16; do
  "$BENCH" --dtype "$dtype" --save_dir "$out/tuned" --overwrite 1 "$@" >/dev/null
  env TRAINBENCH_THREAD_ENV=1 "$BENCH" --dtype "$dtype" --save_dir "$out/default" \
    --overwrite 1 "$@" >/dev/null
  python3 scripts/ab_medians.py "$out" "$dtype" "default:runtime defaults" "tuned:set-up"
done
