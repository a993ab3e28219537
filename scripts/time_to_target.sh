#!/usr/bin/env bash
# Does the faster configuration reach the same model sooner? Every configuration runs to a
# target quality (the common flags must hold --target_bpb; add --stop_at_target 1 to end each
# run there) with --seed 1 .. SEEDS (default 5), interleaved: seed 1 of every configuration, then
# seed 2, ..., so a slow drift of the machine spreads over all of them. Then `bench report` over
# every run (report.md: its speed table and its time-to-target table, reached/total, the median
# time with its range, a run that did not reach the target counted as never, the ratio of times
# with the U-test beside the ratio of seq/s) and scripts/plot_runs.py (valid_bpb.png: held-out
# bits per byte against training seconds and against tokens, the median over seeds with its
# band, the target dotted).
# CONFIGS: bench's configurations, entries as sweep.sh's MATRIX (default: the torch model and the
# handcrafted one eager, and the handcrafted one fused with fused Adam), each in every dtype of
# DTYPES (default: float32 bfloat16 float16) unless the entry names its own --dtype. PEERS
# (default: "pytorch jax"; "" for none): the peers' handcrafted model (PyTorch eager, JAX's
# jax.jit), a name in every dtype of DTYPES, name:dtype in that one (e.g. "jax:bfloat16": where
# a dtype's eager GEMM is too slow to wait for, as 16-bit on a CPU without AVX512-BF16/FP16,
# list only what can finish). Seed K of a bench
# configuration runs into OUT_DIR/seed-K/bench (through scripts/sweep.sh), a peer's into
# OUT_DIR/seed-K/<peer>_<dtype>_...; a run that fails is a row of OUT_DIR/failed.tsv with its
# one-line reason, and the others still report and plot.
# OUT_DIR/command.txt: this command line as run, which `scripts/record_results.sh OUT_DIR NAME -`
# keeps. Without --data, bench's embedded corpus is exported to OUT_DIR/corpus.bin for all.
# Usage: scripts/time_to_target.sh OUT_DIR --target_bpb T [flags for every run]
# Example: SEEDS=5 scripts/time_to_target.sh runs/ttt --preset quick --target_bpb 3.0 --stop_at_target 1 --eval_every 20
source "$(dirname "$0")/usage.sh"
tb_start "$0" "--target_bpb T [flags...]" "$@"
command_line=$(tb_command_line "BENCH PYTHON SEEDS CONFIGS DTYPES PEERS" "$@")
shift  # OUT_DIR, now $out
BENCH=${BENCH:-./build/bench}
PYTHON=${PYTHON:-.venv/bin/python}
seeds=${SEEDS:-5}
[[ "$seeds" =~ ^[1-9][0-9]{0,2}$ ]] ||
  { echo "time_to_target.sh: SEEDS: '$seeds' is not allowed; use an integer in [1, 999]" >&2
    exit 2; }
case " $* " in
  *" --target_bpb "*) ;;
  *) echo "time_to_target.sh: --target_bpb: missing; give the target among the flags, e.g." \
          "--target_bpb 3.0 (held-out bits per byte, in (0, 8])" >&2
     exit 2 ;;
esac
case " $* " in
  *" --seed "*) echo "time_to_target.sh: --seed: set by SEEDS (1 .. N), not allowed among the" \
                     "common flags" >&2
                exit 2 ;;
esac
read -r -a dtypes <<<"${DTYPES:-float32 bfloat16 float16}"
# The peers' runs, "name dtype" each.
peer_runs=()
for p in ${PEERS-pytorch jax}; do
  [ -f "scripts/peers/${p%%:*}_run.py" ] ||
    { echo "time_to_target.sh: PEERS: '$p' is not allowed; use pytorch, jax or both (name or" \
           "name:dtype)" >&2
      exit 2; }
  if [[ "$p" == *:* ]]; then peer_runs+=("${p%%:*} ${p#*:}")
  else for d in "${dtypes[@]}"; do peer_runs+=("$p $d"); done; fi
done
configs=${CONFIGS:-"--model torch --compile none; --model handcraft --compile none; --model handcraft --compile fused --fused_adam 1"}
tb_runs_out "$command_line" "$@"
entries=()
IFS=';' read -r -a cs <<<"$configs"
for c in "${cs[@]}"; do
  [ -n "${c// /}" ] || continue
  case " $c " in
    *" --dtype "*) entries+=("$c") ;;
    *) for d in "${dtypes[@]}"; do entries+=("$c --dtype $d"); done ;;
  esac
done
printf -v matrix '%s; ' "${entries[@]}"
: >"$out/failed.tsv"
for ((s = 1; s <= seeds; s++)); do
  echo "== seed $s of $seeds" >&2
  MATRIX="${matrix%; }" BENCH="$BENCH" PYTHON="$PYTHON" \
    bash scripts/sweep.sh "$out/seed-$s/bench" "${args[@]}" --seed "$s" >/dev/null 2>"$out/seed-$s.log" ||
    true
  # sweep.sh's failures, seed by seed; its refusals (a combination bench cannot run) say why
  grep -E '^(failed|skipped):' "$out/seed-$s.log" >&2 || true
  [ ! -s "$out/seed-$s/bench/failed.tsv" ] ||
    sed "s/^/seed $s: /" "$out/seed-$s/bench/failed.tsv" >>"$out/failed.tsv"
  for pd in "${peer_runs[@]}"; do
    read -r p d <<<"$pd"
    log="$out/seed-$s/${p}_$d.log"
    echo "   $p $d" >&2
    "$PYTHON" "scripts/peers/${p}_run.py" --model handcraft --dtype "$d" --seed "$s" \
      --save_dir "$out/seed-$s/${p}_$d" "${args[@]}" >/dev/null 2>"$log" ||
      printf 'seed %s: %s --dtype %s\t%s\n' "$s" "$p" "$d" "$(grep -v '^\[' "$log" | tail -n 1)" \
        >>"$out/failed.tsv"
  done
done
[ -s "$out/failed.tsv" ] || rm -f "$out/failed.tsv"
"$BENCH" report "$out" | tee "$out/report.md"
if [ -f "$out/failed.tsv" ]; then
  { echo; echo "| failed run | its line |"; echo "|---|---|"
    sed 's/\t/ | /; s/^/| /; s/$/ |/' "$out/failed.tsv"; } | tee -a "$out/report.md"
fi
"$BENCH" report --csv "$out" >"$out/report.csv"
"$BENCH" report --json "$out" >"$out/report.json"
"$PYTHON" scripts/plot_runs.py --bench "$BENCH" --out "$out" "$out"
