#!/usr/bin/env bash
# What LibTorch 1.13 made bench do, re-measured on the current LibTorch in one run: for each
# dtype, bench's default eager handcraft run against one knob changed at a time, runs one after
# another on the same bytes, medians and speed-ups printed (B over the default):
#   native    --dropout_impl native   (torch::dropout instead of bench's parallel mask kernel)
#   passive   OMP_WAIT_POLICY=PASSIVE (what bench's 1.13-era re-exec set for float32)
#   fadam     --fused_adam 1          (bench's one-pass Adam kernel)
#   flash     --flash 1               (scaled_dot_product_attention: the CPU flash kernel)
# Usage: scripts/libtorch_ab.sh OUT_DIR [bench flags...]   (DTYPES="float32 bfloat16")
# Example: DTYPES=float32 scripts/libtorch_ab.sh runs/ab --num_layer 2 --steps 20
source "$(dirname "$0")/usage.sh"
tb_start "$0" "[bench flags...]" "$@"
shift  # OUT_DIR, now $out
BENCH=${BENCH:-./build/bench}
PY=${PYTHON:-.venv/bin/python}
for dtype in ${DTYPES:-float32 bfloat16}; do
  run() {  # run NAME [env...] -- [flags...]
    local name=$1; shift
    local envs=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
    echo "== $dtype $name" >&2
    env "${envs[@]}" "$BENCH" --dtype "$dtype" --save_dir "$out/$name" --overwrite 1 "$@" \
      "${args[@]}" >/dev/null
  }
  args=("$@")
  run default --
  run native -- --dropout_impl native
  run passive OMP_WAIT_POLICY=PASSIVE --
  run fadam -- --fused_adam 1
  run flash -- --flash 1
  for b in native:torch::dropout passive:OMP_WAIT_POLICY=PASSIVE fadam:fused-Adam flash:flash; do
    "$PY" scripts/ab_medians.py "$out" "$dtype" default:default "$b"
  done
  "$PY" scripts/flash_backend_used.py "$out" "$dtype"
done
