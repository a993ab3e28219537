#!/usr/bin/env bash
# The reference matrix: model x dtype x compile x flash, one run after another, then the
# report (report.md, report.csv, report.json) and the plots. Combinations this machine or
# build cannot run are skipped with bench's own one-line reason (its validation, exit 2).
# Usage: scripts/sweep.sh OUT_DIR [--preset quick|reference] [--device cpu|cuda] [bench flags...]
# Example: scripts/sweep.sh runs/sweep --preset quick --device cpu --steps 100
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: $0 OUT_DIR [bench flags...]" >&2; exit 2; }
out=$1; shift
BENCH=${BENCH:-./build/bench}
mkdir -p "$out"
dirs=()
i=0
for model in handcraft torch; do
  for dtype in float32 float16 bfloat16; do
    for compile in 0 1; do
      for flash in 0 1; do
        i=$((i + 1))
        name="$model $dtype compile=$compile flash=$flash"
        code=0
        err=$("$BENCH" --model "$model" --dtype "$dtype" --compile "$compile" --flash "$flash" \
            --save_dir "$out/$i" "$@" 2>&1 >/dev/null) || code=$?
        reason=$(printf '%s\n' "$err" | grep -E '^bench: (error|failed):' | tail -n 1 || true)
        case $code in
          0) echo "done: $name" >&2
             for d in "$out/${i}"_*; do [ -d "$d" ] && dirs+=("$d"); done ;;
          2) echo "skipped: $name: ${reason#bench: error: }" >&2 ;;
          *) echo "failed: $name: ${reason:-exit $code}" >&2 ;;
        esac
      done
    done
  done
done
[ ${#dirs[@]} -gt 0 ] || { echo "sweep: no run finished" >&2; exit 1; }
"$BENCH" report "${dirs[@]}" | tee "$out/report.md"
"$BENCH" report --csv "${dirs[@]}" > "$out/report.csv"
"$BENCH" report --json "${dirs[@]}" > "$out/report.json"
"${PYTHON:-.venv/bin/python}" scripts/plot_runs.py --out "$out" "${dirs[@]}"
