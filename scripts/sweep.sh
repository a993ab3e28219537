#!/usr/bin/env bash
# The matrix runner: bench over a list of configurations, one run after another (never in
# parallel, so the timings are comparable), then the report (report.md, report.csv,
# report.json, through `bench report`) and the plots. Combinations this machine or build cannot
# run are skipped with bench's own one-line reason (its validation, exit 2).
# Usage: scripts/sweep.sh OUT_DIR [bench flags common to every run...]
# MATRIX: "model:dtype:compile:flash[:fused_adam:cuda_graph] ..." (default: the reference
# matrix, torch|handcraft x float32|float16|bfloat16 x compile 0|1 x flash 0|1). Each run's
# stderr goes to OUT_DIR/N.log.
# Examples: scripts/sweep.sh runs/sweep --preset quick --device cpu --steps 100
#   MATRIX="handcraft:float32:0:0 handcraft:float32:0:1 handcraft:bfloat16:0:0 torch:float32:0:0" \
#     scripts/sweep.sh runs/cpu8 --num_layer 8 --batch_size 8 --steps 12 --warmup_steps 2
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: $0 OUT_DIR [bench flags...]" >&2; exit 2; }
out=$1; shift
BENCH=${BENCH:-./build/bench}
if [ -z "${MATRIX:-}" ]; then
  MATRIX=""
  for model in handcraft torch; do
    for dtype in float32 float16 bfloat16; do
      for compile in 0 1; do
        for flash in 0 1; do MATRIX+="$model:$dtype:$compile:$flash "; done
      done
    done
  done
fi
for entry in $MATRIX; do
  [[ "$entry" =~ ^[a-z]+:[a-z0-9]+:[01]:[01](:[01]:[01])?$ ]] ||
    { echo "sweep.sh: MATRIX entry '$entry': use model:dtype:compile:flash[:fused_adam:cuda_graph]" >&2; exit 2; }
done
mkdir -p "$out"
dirs=()
i=0
for entry in $MATRIX; do
  IFS=: read -r model dtype compile flash fused graph <<<"$entry"
  fused=${fused:-0} graph=${graph:-0}
  i=$((i + 1))
  name="$model $dtype compile=$compile flash=$flash"
  [ "$fused$graph" = 00 ] || name+=" fused_adam=$fused cuda_graph=$graph"
  code=0
  "$BENCH" --model "$model" --dtype "$dtype" --compile "$compile" --flash "$flash" \
    --fused_adam "$fused" --cuda_graph "$graph" --save_dir "$out/$i" "$@" \
    2>"$out/$i.log" >/dev/null || code=$?
  reason=$(grep -E '^bench: (error|failed):' "$out/$i.log" | tail -n 1 || true)
  case $code in
    0) echo "done: $name" >&2
       for d in "$out/${i}"_*; do [ -d "$d" ] && dirs+=("$d"); done ;;
    2) echo "skipped: $name: ${reason#bench: error: }" >&2 ;;
    *) echo "failed: $name: ${reason:-exit $code}" >&2 ;;
  esac
done
[ ${#dirs[@]} -gt 0 ] || { echo "sweep: no run finished" >&2; exit 1; }
"$BENCH" report "${dirs[@]}" | tee "$out/report.md"
"$BENCH" report --csv "${dirs[@]}" > "$out/report.csv"
"$BENCH" report --json "${dirs[@]}" > "$out/report.json"
python=${PYTHON:-.venv/bin/python}
if "$python" -c 'import matplotlib' 2>/dev/null; then
  "$python" scripts/plot_runs.py --bench "$BENCH" --out "$out" "${dirs[@]}"
else
  echo "sweep.sh: $python has no matplotlib; plots skipped (scripts/install_deps.sh installs it)" >&2
fi
