#!/usr/bin/env bash
# The matrix runner: bench over a list of configurations, one run after another (never in
# parallel, so the timings are comparable), then the report (report.md, report.csv,
# report.json, through `bench report`) and the plots. Combinations this machine or build cannot
# run are skipped with bench's own one-line reason (its validation, exit 2); one that fails
# (exit 1: an error, a divergence, a crash) is a row of OUT_DIR/failed.tsv (its flags, bench's
# one line) and of the "failed" table under the report, and the others' report still prints.
# OUT_DIR/dirs.txt lists the folders the report was made from, in MATRIX's order.
# Usage: scripts/sweep.sh OUT_DIR [bench flags common to every run...]
# MATRIX: the configurations, one entry per line or entries separated by ';' (blank ones are
# ignored); an entry is a set of bench flags as '--name value' pairs, each value one word of
# letters, digits and ._/:,+=@%~- (no spaces, quotes or '--name=value'), e.g.
#   MATRIX="--model handcraft --dtype bfloat16 --compile fused --flash 1; --model torch"
# Each run gets its entry's flags, then the common ones (a flag in both is given twice, which
# bench refuses). bench checks the values (a combination it refuses is skipped with its reason);
# an entry may not set --save_dir, --run_folder, --repeat or --repetition, which the sweep sets.
# Default: the reference matrix, torch|handcraft x float32|float16|bfloat16 x --compile
# none|torchscript x --flash 0|1 (24 entries). Entry i (from 1, in MATRIX's order) runs into
# OUT_DIR/i_<bench's folder name>, its stderr goes to OUT_DIR/i.log, and the progress lines name
# it by its flags ("done: model=handcraft dtype=float32 ...").
# PROCS=N (default 1) runs every entry as N data-parallel processes on this machine through
# scripts/launch.sh (speeds are then global; `bench report` labels them "xN processes"); run i
# rendezvouses on port MASTER_PORT + i - 1 (MASTER_PORT default: random in [29600, 29900)).
# REPEAT=N (default 1) runs every entry N times, each a fresh process, interleaved: repetition 1
# of every entry, then repetition 2 of every entry, ... (bench --repeat N --repetition K), so a
# slow drift of the machine spreads over all entries; `bench report` then gives each entry's
# median with n=, min-max, and a U-test's p-value against the baseline (3 or more a side).
# OUT_DIR/command.txt: this command line as run (with BENCH, PROCS, REPEAT, MASTER_PORT and
# MATRIX where set), which `scripts/record_results.sh OUT_DIR NAME -` keeps.
# Examples: scripts/sweep.sh runs/sweep --preset quick --device cpu --steps 100
#   REPEAT=5 MATRIX="--model handcraft --dtype float32; --model handcraft --dtype float32 \
#     --compile fused --flash 1" scripts/sweep.sh runs/ab --preset quick --steps 100
#   MATRIX="--model handcraft --flash 0
#     --model handcraft --flash 1
#     --model torch" scripts/sweep.sh runs/cpu8 --num_layer 8 --batch_size 8 --steps 12
#   PROCS=2 MATRIX="--model handcraft" scripts/sweep.sh runs/dp2 --num_layer 8 --threads 1
source "$(dirname "$0")/usage.sh"
tb_start "$0" "[bench flags...]" "$@"
command_line=$(tb_command_line "BENCH PROCS REPEAT MASTER_PORT MATRIX" "$@")
shift  # OUT_DIR, now $out
BENCH=${BENCH:-./build/bench}
procs=${PROCS:-1}
[[ "$procs" =~ ^[1-9][0-9]{0,3}$ ]] ||
  { echo "sweep.sh: PROCS: '$procs' is not allowed; use an integer in [1, 9999]" >&2; exit 2; }
reps=${REPEAT:-1}
[[ "$reps" =~ ^[1-9][0-9]{0,2}$ ]] ||
  { echo "sweep.sh: REPEAT: '$reps' is not allowed; use an integer in [1, 999]" >&2; exit 2; }
if [ "$reps" -gt 1 ] && [ "$procs" -gt 1 ]; then
  echo "sweep.sh: REPEAT: $reps is not allowed with PROCS=$procs (bench repeats one process); use REPEAT=1" >&2
  exit 2
fi
port=${MASTER_PORT:-$((29600 + RANDOM % 300))}
if [ "$procs" -gt 1 ] && ! { [[ "$port" =~ ^[1-9][0-9]{0,4}$ ]] && [ "$port" -le 65535 ]; }; then
  echo "sweep.sh: MASTER_PORT: '$port' is not allowed; use a TCP port in [1, 65535]" >&2; exit 2
fi
if [ -z "${MATRIX:-}" ]; then
  MATRIX=""
  for model in handcraft torch; do
    for dtype in float32 float16 bfloat16; do
      for compile in none torchscript; do
        for flash in 0 1; do
          MATRIX+="--model $model --dtype $dtype --compile $compile --flash $flash;"
        done
      done
    done
  done
fi
# The entries: MATRIX split at ';' and new lines, each entry into words at blanks (read splits
# without globbing or expansion; nothing here is evaluated), checked for shape before any run.
shape="use bench flags as '--name value' pairs (values: one word of letters, digits and"
shape+=" ._/:,+=@%~-), e.g. '--model handcraft --compile fused --flash 1'; entries are split at"
shape+=" ';' and new lines"
name_re='^--[a-z][a-z0-9_]*$' value_re='^[A-Za-z0-9._/:,+=@%~-]+$'
entries=() labels=()
IFS=$';\n' read -r -d '' -a pieces <<<"$MATRIX" || true
for piece in "${pieces[@]}"; do
  read -r -a words <<<"$piece" || true
  [ ${#words[@]} -gt 0 ] || continue
  entry="${words[*]}" label=""
  [ $((${#words[@]} % 2)) -eq 0 ] ||
    { echo "sweep.sh: MATRIX entry '$entry': $shape" >&2; exit 2; }
  for ((k = 0; k < ${#words[@]}; k += 2)); do
    flag=${words[k]} value=${words[k + 1]}
    [[ "$flag" =~ $name_re && "$value" =~ $value_re && "$value" != --* ]] ||
      { echo "sweep.sh: MATRIX entry '$entry': $shape" >&2; exit 2; }
    case "$flag" in
      --save_dir|--run_folder|--repeat|--repetition)
        echo "sweep.sh: MATRIX entry '$entry': $flag is set by sweep.sh for every run" \
             "(OUT_DIR/i, REPEAT=N); leave it out" >&2
        exit 2 ;;
    esac
    label+="${flag#--}=$value "
  done
  entries+=("$entry") labels+=("${label% }")
done
[ ${#entries[@]} -gt 0 ] ||
  { echo "sweep.sh: MATRIX holds no entry; $shape" >&2; exit 2; }
mkdir -p "$out"
dirs=() failed=()
printf '%s\n' "$command_line" > "$out/command.txt"
declare -A skipped=() finished=()
for ((rep = 1; rep <= reps; rep++)); do
for ((i = 1; i <= ${#entries[@]}; i++)); do
  [ -z "${skipped[$i]:-}" ] || continue  # this machine or build cannot run it
  read -r -a flags <<<"${entries[i - 1]}"
  name=${labels[i - 1]}
  run=("$BENCH")
  if [ "$procs" -gt 1 ]; then
    name+=" x$procs processes"
    run=(bash scripts/launch.sh --port $((port + i - 1)) "$procs" "$BENCH")
  fi
  log="$out/$i.log" repeat=()
  if [ "$reps" -gt 1 ]; then
    log="$out/$i.rep$rep.log" repeat=(--repeat "$reps" --repetition "$rep")
    name+=" (repetition $rep of $reps)"
  fi
  # The log is written under a name of this sweep's own and moved into place after the run: a
  # second sweep into the same OUT_DIR (refused by bench: the folder is held) never writes into
  # the running one's log, and its refusal never replaces an earlier run's log.
  code=0 tmp="$log.$$.tmp"
  "${run[@]}" "${flags[@]}" --save_dir "$out/$i" "${repeat[@]}" "$@" \
    2>"$tmp" >/dev/null || code=$?
  reason=$(grep -E '^bench: (error|failed):' "$tmp" | tail -n 1 || true)
  # Several processes: every rank writes "bench: rank R: ..."; rank 0's speak for the run.
  if [ -z "$reason" ] && [ "$procs" -gt 1 ]; then
    reason=$({ grep -E '^bench: rank 0: (error|failed):' "$tmp" ||
               grep -E '^bench: rank [0-9]+: (error|failed):' "$tmp"; } |
             tail -n 1 | sed 's/^bench: rank 0: /bench: /' || true)
  fi
  if [ "$code" -eq 2 ] && [ -e "$log" ]; then
    rm -f "$tmp"
  else
    mv -f "$tmp" "$log"
  fi
  case $code in
    0) echo "done: $name" >&2
       if [ -z "${finished[$i]:-}" ]; then
         finished[$i]=1
         for d in "$out/${i}"_*; do [ -d "$d" ] && dirs+=("$d"); done
       fi ;;
    2) echo "skipped: $name: ${reason#bench: error: }" >&2; skipped[$i]=1 ;;
    *) echo "failed: $name: ${reason:-exit $code}" >&2
       failed+=("$name"$'\t'"${reason:-exit $code}") ;;
  esac
done
done
# The failures as rows: bench's one line each (tab-separated for scripts, a table for people).
failed_table() {
  echo
  echo "| failed configuration | bench's line |"
  echo "|---|---|"
  for f in "${failed[@]}"; do echo "| ${f%%$'\t'*} | ${f#*$'\t'} |"; done
}
if [ ${#failed[@]} -gt 0 ]; then
  printf '%s\n' "${failed[@]}" > "$out/failed.tsv"
else
  rm -f "$out/failed.tsv"
fi
{ [ ${#dirs[@]} -eq 0 ] || printf '%s\n' "${dirs[@]}"; } > "$out/dirs.txt"  # empty: no line
if [ ${#dirs[@]} -eq 0 ]; then
  [ ${#failed[@]} -eq 0 ] || failed_table | tee "$out/report.md"
  echo "sweep: no run finished" >&2
  exit 1
fi
{ "$BENCH" report "${dirs[@]}"; [ ${#failed[@]} -eq 0 ] || failed_table; } | tee "$out/report.md"
"$BENCH" report --csv "${dirs[@]}" > "$out/report.csv"
"$BENCH" report --json "${dirs[@]}" > "$out/report.json"
python=${PYTHON:-.venv/bin/python}
if "$python" -c 'import matplotlib' 2>/dev/null; then
  "$python" scripts/plot_runs.py --bench "$BENCH" --out "$out" "${dirs[@]}"
else
  echo "sweep.sh: $python has no matplotlib; plots skipped (scripts/install_deps.sh installs it)" >&2
fi
