#!/usr/bin/env bash
# The original benchmark's comparison, on one machine in one run: for each dtype of DTYPES
# (default: float32 bfloat16) twelve columns, one run after another on the same bytes (bench's
# through scripts/sweep.sh):
#   LibTorch as shipped: eager | --compile torchscript | --flash 1 |
#   bench's replacements, a row each: on the CPU eager with bench's caching CPU allocator
#   (--keep_memory 1) | eager with its parallel dropout mask (--dropout_impl parallel); then
#   bench's fused kernels and fused Adam (--compile fused --fused_adam 1) with naive attention |
#   the same with --flash 1 |
#   PyTorch eager | PyTorch torch.compile (inductor, default mode) | torch.compile
#   mode="max-autotune" (its strongest: GEMM templates autotuned, CUDA graphs on a GPU) |
#   PyTorch --flash 1 | JAX (jax.jit)
# MFU on bench's peak for each dtype in every column (the peers get it as --peak_tflops),
# then `bench report` with ratios against the PyTorch eager column, each run's warm-up and
# compile seconds, and a check that every column ran under the same thread environment.
# Every column gets the same threading set-up: THREAD_ENV (default: none, the runtimes' own
# defaults, which bench also keeps; e.g. THREAD_ENV="OMP_WAIT_POLICY=PASSIVE") goes to all.
# Usage: scripts/compare.sh OUT_DIR [flags for every run, e.g. --num_layer 8 --batch_size 8]
# Without --data, bench's embedded corpus is exported to OUT_DIR/corpus.bin for all of them.
# REPEAT=N (default 1): every column N times (see sweep.sh), for medians and U-tests.
# OUT_DIR/command.txt: this command line as run (with the variables above where set), which
# `scripts/record_results.sh OUT_DIR NAME -` keeps.
# Example: scripts/compare.sh runs/cmp --num_layer 2 --batch_size 8 --steps 13 --warmup_steps 3
source "$(dirname "$0")/usage.sh"
tb_start "$0" "[flags...]" "$@"
command_line=$(tb_command_line "BENCH PYTHON DTYPES THREAD_ENV REPEAT PROCS" "$@")
shift  # OUT_DIR, now $out
BENCH=${BENCH:-./build/bench}
PYTHON=${PYTHON:-.venv/bin/python}
read -r -a dtypes <<<"${DTYPES:-float32 bfloat16}"
[ ${#dtypes[@]} -gt 0 ] || dtypes=("$DTYPES")  # blanks only: refused below
for dtype in "${dtypes[@]}"; do
  [[ "$dtype" =~ ^[a-z0-9]+$ ]] || {
    echo "compare.sh: DTYPES: '$dtype' is not allowed; use bench's --dtype names" \
         "(float32 float16 bfloat16)" >&2
    exit 2; }
done
"$PYTHON" -c 'import torch, jax, flax, optax' 2>/dev/null || {
  echo "compare.sh: $PYTHON lacks torch/jax/flax/optax: run scripts/install_deps.sh" >&2; exit 2; }
tb_runs_out "$command_line" "$@"
read -r -a thread_env <<< "${THREAD_ENV:-}"
dirs=() failed=()
run() {  # run NAME COMMAND...: one run, its folder collected (or its failure, a row of its own)
  local name=$1 log="$out/$1.log"; shift
  echo "== $name" >&2
  if env "${thread_env[@]}" "$@" --save_dir "$out/$name" "${args[@]}" >/dev/null 2>"$log"; then
    for d in "$out/$name"_*; do [ -d "$d" ] && dirs+=("$d"); done
  else
    local line
    line=$(grep -v '^\[' "$log" | tail -n 1 || true)
    echo "   ($name failed: ${line:-no message}; see $log)" >&2
    failed+=("$name: ${*:2}"$'\t'"${line:-no message}")
  fi
}
# bench's seven columns per dtype through the matrix runner (one run after another), as its
# MATRIX entries: bench flags, one entry per column. `bench report` names a run with any of
# bench's replacements "bench", LibTorch as shipped "libtorch".
# bench's CPU replacements (its allocator, its dropout mask) only where bench runs on the CPU.
on_cpu=1
case " $* " in
  *" --device cuda "*) on_cpu=0 ;;
  *" --device cpu "*) ;;
  *) "$PYTHON" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' &&
       on_cpu=0 ;;
esac
cpu_only=()
[ "$on_cpu" = 0 ] || cpu_only=("--compile none --flash 0 --keep_memory 1"
                               "--compile none --flash 0 --dropout_impl parallel")
entries=()
for dtype in "${dtypes[@]}"; do
  for flags in "--compile none --flash 0" "--compile torchscript --flash 0" \
               "--compile none --flash 1" "${cpu_only[@]}" \
               "--compile fused --flash 0 --fused_adam 1" \
               "--compile fused --flash 1 --fused_adam 1"; do
    entries+=("--model handcraft --dtype $dtype $flags")
  done
done
printf -v matrix '%s; ' "${entries[@]}"
matrix=${matrix%; }
echo "== bench: $matrix" >&2
env "${thread_env[@]}" MATRIX="$matrix" BENCH="$BENCH" PYTHON="$PYTHON" \
  bash scripts/sweep.sh "$out/bench" "${args[@]}" >/dev/null ||
  echo "   (no bench run finished; see $out/bench/*.log)" >&2
# The folders sweep.sh reported, in the matrix's order; its failures, a row each.
[ ! -s "$out/bench/dirs.txt" ] || mapfile -t -O "${#dirs[@]}" dirs < "$out/bench/dirs.txt"
[ ! -s "$out/bench/failed.tsv" ] || mapfile -t -O "${#failed[@]}" failed < "$out/bench/failed.tsv"
# MFU on one peak for every column: the peers get bench's peak for each dtype (what its probe
# measured on this machine, from the summary of bench's first run of that dtype); without a
# bench run of that dtype they show '-'.
peak_tflops() {  # peak_tflops DTYPE: bench's MFU peak in TFLOP/s, 0 where none ran
  "$PYTHON" -c 'import json, sys
import glob
# A folder of repetitions (REPEAT=N) stands for its rep-K folders, which hold the peak.
for d in [r for d in sys.argv[2:] for r in sorted(glob.glob(d + "/rep-*")) or [d]]:
    try:
        c, s = (json.load(open(f"{d}/{n}.json")) for n in ("config", "summary"))
    except (OSError, ValueError):
        continue
    if c.get("dtype") == sys.argv[1] and s.get("peak_flops"):
        print(repr(s["peak_flops"] / 1e12)); break
else:
    print(0)' "$1" "${dirs[@]}"
}
py=("$PYTHON" scripts/peers/pytorch_run.py)
# REPEAT=N: bench's columns N times each (sweep.sh interleaves them), the peers' as N runs of
# each column in turn; bench report aggregates them (median, n=, U-test p against the baseline).
reps=${REPEAT:-1}
for ((k = 1; k <= reps; k++)); do
  r=""
  [ "$reps" -eq 1 ] || r="_r$k"
  for dtype in "${dtypes[@]}"; do
    peak=(--peak_tflops "$(peak_tflops "$dtype")")
    run "py_$dtype$r" "${py[@]}" --dtype "$dtype" "${peak[@]}"
    run "pyc_$dtype$r" "${py[@]}" --dtype "$dtype" --compile 1 "${peak[@]}"
    run "pyca_$dtype$r" "${py[@]}" --dtype "$dtype" --compile 1 --compile_mode max-autotune \
      "${peak[@]}"
    run "pyf_$dtype$r" "${py[@]}" --dtype "$dtype" --flash 1 "${peak[@]}"
    run "jax_$dtype$r" "$PYTHON" scripts/peers/jax_run.py --dtype "$dtype" "${peak[@]}"
  done
done
# First the table a person reads (one row per configuration, in the matrix's order), then the
# wide one with every column, which goes to report.md only.
# Every configuration that failed is a row with its one line ('failed: ...'), under the others.
if [ ${#failed[@]} -gt 0 ]; then
  printf '%s\n' "${failed[@]}" > "$out/failed.tsv"
else
  rm -f "$out/failed.tsv"
fi
# Ratios against PyTorch eager where it ran; without it (every such run failed), none.
base=(--baseline "pytorch handcraft")
if [ ${#dirs[@]} -eq 0 ]; then
  echo '{"runs": []}' > "$out/report.json"
elif ! "$BENCH" report --json "${base[@]}" "${dirs[@]}" > "$out/report.json" 2>/dev/null; then
  base=()
  "$BENCH" report --json "${dirs[@]}" > "$out/report.json"
fi
"$PYTHON" scripts/compare_table.py ${failed[0]:+--failed "$out/failed.tsv"} < "$out/report.json" |
  tee "$out/report.md"
[ ${#dirs[@]} -gt 0 ] || { echo "compare.sh: no run finished" >&2; exit 1; }
{ echo; "$BENCH" report "${base[@]}" "${dirs[@]}"; } >> "$out/report.md"
echo "every column, ratios against PyTorch eager: $out/report.md" >&2
echo "every run's curves side by side: $PYTHON -m tensorboard.main --logdir $out" >&2
# One thread environment for every column, or say which differ.
"$PYTHON" scripts/thread_env_check.py "${dirs[@]}" | tee -a "$out/report.md"
