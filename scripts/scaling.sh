#!/usr/bin/env bash
# How each configuration's cost grows with one dimension of its work: bench's configurations
# (CONFIGS, entries as sweep.sh's MATRIX; default eager, eager + flash, fused + fused Adam, the
# same + flash) at each value of DIM (seq_len, num_layer, batch_size or threads; VALUES, default
# per DIM below), one run after another through scripts/sweep.sh (REPEAT=N interleaves them),
# PyTorch eager beside them (PEER=0 leaves it out; its MFU on bench's measured peak), then
# scripts/scaling_table.py: scaling.md
# (step time, tokens/s and MFU at each value; each configuration's growth exponent against the
# ideal one: 1 in num_layer and batch_size, between 1 and 2 in seq_len (the attention's
# quadratic term), -1 in threads, with the threads' efficiency; where flash overtakes naive
# attention) and scaling.png (log-log, the ideal slopes dashed). A point that fails (out of
# memory, an error) is a row with bench's one-line reason; the other points still print and
# plot.
# Defaults of VALUES: seq_len "128 256 512 1024 2048", num_layer "1 2 4 8 16 24", batch_size
# "1 2 4 8 16 32 64 128", threads "1 2 ... all cores".
# Usage: DIM=seq_len scripts/scaling.sh OUT_DIR [bench flags common to every run]
# Example: DIM=seq_len VALUES="128 256 512" scripts/scaling.sh runs/scale --num_layer 2 --d_model 128 --batch_size 8 --steps 8 --warmup_steps 3 --eval_every 0 --eval_batches 1
source "$(dirname "$0")/usage.sh"
tb_start "$0" "[bench flags...]" "$@"
command_line=$(tb_command_line "BENCH PYTHON DIM VALUES CONFIGS REPEAT PEER" "$@")
shift  # OUT_DIR, now $out
BENCH=${BENCH:-./build/bench}
PYTHON=${PYTHON:-.venv/bin/python}
dim=${DIM:-}
case "$dim" in
  seq_len) default="128 256 512 1024 2048" ;;
  num_layer) default="1 2 4 8 16 24" ;;
  batch_size) default="1 2 4 8 16 32 64 128" ;;
  threads) default=$(seq -s ' ' 1 "$(nproc)") ;;
  *) echo "scaling.sh: DIM: '$dim' is not allowed; use seq_len, num_layer, batch_size or threads" >&2
     exit 2 ;;
esac
read -r -a values <<<"${VALUES:-$default}"
for v in "${values[@]}"; do
  [[ "$v" =~ ^[1-9][0-9]*$ ]] ||
    { echo "scaling.sh: VALUES: '$v' is not allowed; give positive integers" >&2; exit 2; }
done
[ ${#values[@]} -ge 2 ] || { echo "scaling.sh: VALUES: give two values or more" >&2; exit 2; }
case " $* " in
  *" --$dim "*) echo "scaling.sh: --$dim: set by DIM, not allowed among the common flags" >&2
                exit 2 ;;
esac
configs=${CONFIGS:-"--model handcraft --compile none --flash 0; --model handcraft --compile none --flash 1; --model handcraft --compile fused --flash 0 --fused_adam 1; --model handcraft --compile fused --flash 1 --fused_adam 1"}
tb_runs_out "$command_line" "$@"
# One sweep entry per configuration and value.
entries=()
IFS=';' read -r -a cs <<<"$configs"
for v in "${values[@]}"; do
  for c in "${cs[@]}"; do
    [ -n "${c// /}" ] && entries+=("$c --$dim $v")
  done
done
printf -v matrix '%s; ' "${entries[@]}"
MATRIX="${matrix%; }" BENCH="$BENCH" PYTHON="$PYTHON" \
  bash scripts/sweep.sh "$out/bench" "${args[@]}" >/dev/null ||
  echo "   (no bench run finished; see $out/bench/*.log)" >&2
# PyTorch eager at each value (its own process per run, as compare.sh runs the peers), its MFU
# on the peak bench's probe measured for these runs (the first bench summary that has one).
if [ "${PEER:-1}" = 1 ]; then
  peak=()
  case " $* " in
    *" --peak_tflops "*) ;;
    *) tflops=$("$PYTHON" -c 'import glob, json, sys
for f in sorted(glob.glob(sys.argv[1] + "/*/summary.json") + glob.glob(sys.argv[1] + "/*/rep-*/summary.json")):
    try:
        s = json.load(open(f))
    except (OSError, ValueError):
        continue
    if s.get("peak_flops"):
        print(repr(s["peak_flops"] / 1e12)); break' "$out/bench")
       [ -z "$tflops" ] || peak=(--peak_tflops "$tflops") ;;
  esac
  for v in "${values[@]}"; do
    log="$out/py_$v.log"
    echo "== pytorch eager --$dim $v" >&2
    "$PYTHON" scripts/peers/pytorch_run.py --model handcraft --"$dim" "$v" \
      --save_dir "$out/py_$v" "${args[@]}" "${peak[@]}" >/dev/null 2>"$log" ||
      printf 'pytorch eager --%s %s\t%s\n' "$dim" "$v" "$(grep -v '^\[' "$log" | tail -n 1)" \
        >>"$out/bench/failed.tsv"
  done
fi
"$PYTHON" scripts/scaling_table.py --dim "$dim" --out "$out" "$out"
