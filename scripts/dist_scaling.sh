#!/usr/bin/env bash
# Data-parallel scaling on this machine: one process against two (scripts/launch.sh, Gloo),
# each with one thread and the same per-rank batch (weak scaling), plus one process with two
# threads and the global batch (the same cores used without communication), and two processes
# with the all-reduce after backward instead of overlapped (its full cost). Each run goes
# through scripts/sweep.sh (PROCS=2 for the two-process ones; one after another), each into a
# folder of its own in OUT_DIR (p1, p2, p2seq, t2, with their logs).
# Usage: scripts/dist_scaling.sh OUT_DIR [bench flags...]   (e.g. --num_layer 8 --batch_size 4)
# --model and --dtype (default handcraft, float32) become the sweep's MATRIX entry (bench flags,
# see sweep.sh), the other flags go to every run; --batch_size (default 4) is per rank.
# MASTER_PORT: the first two-process run's port (default: random), the second takes the next.
# Prints the four through `bench report` (also OUT_DIR/report.md, .csv, .json): global seq/s,
# the ratios against one process, and for two processes the exposed communication per step
# (comm ms/step) and its share of the step. The one-process runs differ in their batch, which
# the report puts in their labels: batch B is one thread, batch 2B two.
# Example: scripts/dist_scaling.sh runs/dp --num_layer 2 --steps 20
source "$(dirname "$0")/usage.sh"
tb_start "$0" "[bench flags...]" "$@"
shift  # OUT_DIR, now $out
BENCH=${BENCH:-./build/bench}
batch=4 model=handcraft dtype=float32
args=()  # the other flags; those above are set per run (bench refuses a flag given twice)
while [ $# -gt 0 ]; do
  flag=${1%%=*}
  if [[ "$1" == *=* ]]; then value=${1#*=}; n=1; else value=${2-}; n=2; fi
  case "$flag" in
    --batch_size|--model|--dtype)
      [ "$n" = 1 ] || [ $# -ge 2 ] ||
        { echo "dist_scaling.sh: $flag: a value is needed" >&2; exit 2; }
      case "$flag" in
        --batch_size) batch=$value ;; --model) model=$value ;; --dtype) dtype=$value ;;
      esac
      shift "$n" ;;
    --threads|--dist_overlap|--save_dir)
      echo "dist_scaling.sh: $flag is set per run; leave it out" >&2; exit 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
if ! [[ "$batch" =~ ^[1-9][0-9]{0,6}$ ]]; then
  echo "dist_scaling.sh: --batch_size: '$batch' is not allowed; use an integer >= 1" >&2; exit 2
fi
entry="--model $model --dtype $dtype"
port=${MASTER_PORT:-$((29600 + RANDOM % 300))}
if ! { [[ "$port" =~ ^[1-9][0-9]{0,4}$ ]] && [ "$port" -lt 65535 ]; }; then
  echo "dist_scaling.sh: MASTER_PORT: '$port' is not allowed; use a TCP port in [1, 65534]" >&2
  exit 2
fi
common=(--overwrite 1 ${args[@]+"${args[@]}"})

# sweep NAME WHAT PROCS PORT [bench flags...]: one run through sweep.sh into OUT_DIR/NAME (its
# own table is left out: the one below has all four). A bad MATRIX entry (exit 2) stops here; a
# run that did not finish (exit 1: skipped or failed, its reason on stderr) leaves a gap.
finished=()
sweep() {
  local name=$1 procs=$3 mport=$4 code=0
  echo "== $2" >&2
  shift 4
  MATRIX="$entry" PROCS="$procs" MASTER_PORT="$mport" BENCH="$BENCH" \
    bash scripts/sweep.sh "$out/$name" "${common[@]}" "$@" >/dev/null || code=$?
  [ "$code" -le 1 ] || exit "$code"
  [ "$code" -ne 0 ] || finished+=("$name")
}
sweep p1 "1 process x 1 thread" 1 "$port" --threads 1 --batch_size "$batch"
sweep p2 "2 processes x 1 thread, overlapped all-reduce" 2 "$port" --threads 1 \
  --batch_size "$batch"
sweep t2 "1 process x 2 threads, global batch" 1 "$port" --threads 2 --batch_size $((2 * batch))
sweep p2seq "2 processes x 1 thread, all-reduce after backward" 2 $((port + 1)) --threads 1 \
  --batch_size "$batch" --dist_overlap 0

# In the table's order, each finished run's folder: the newest in its sweep's folder (an older
# one may be left there by an earlier call with other flags).
dirs=()
for name in p1 p2 p2seq t2; do
  [[ " ${finished[*]-} " == *" $name "* ]] || continue
  newest=""
  for d in "$out/$name"/1_*/; do
    d=${d%/}
    if [ -z "$newest" ] || [ "$d/summary.json" -nt "$newest/summary.json" ]; then newest=$d; fi
  done
  dirs+=("$newest")
done
[ ${#dirs[@]} -gt 0 ] || { echo "dist_scaling.sh: no run finished" >&2; exit 1; }
"$BENCH" report "${dirs[@]}" | tee "$out/report.md"
"$BENCH" report --csv "${dirs[@]}" > "$out/report.csv"
"$BENCH" report --json "${dirs[@]}" > "$out/report.json"
