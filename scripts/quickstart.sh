#!/usr/bin/env bash
# First command of the README: install what is missing, build bench alone (Release; the tests,
# fuzz targets and micro-benchmarks come with scripts/test.sh) and train the quick preset on the
# embedded corpus, saying what each stage does and how long it took. Extra arguments go to
# bench (e.g. --model torch).
set -euo pipefail
case "${1:-}" in
  -h|--help)
    cat <<'USAGE'
usage: bash scripts/quickstart.sh [BENCH_FLAGS...]
  Installs what is missing (scripts/install_deps.sh: Debian packages, the .venv with torch),
  builds bench (build/, Release) and trains the quick preset on the embedded corpus, then
  prints its result table and the TensorBoard command that shows its curves. BENCH_FLAGS go
  to bench, e.g. --model torch or --dtype bfloat16.
  Fresh machine: about 1-2 min of install (3 GB of wheels), 2.5 min of build, 30 s of training.
example: bash scripts/quickstart.sh --dtype bfloat16
USAGE
    exit 0 ;;
esac
cd "$(dirname "$0")/.."
t0=$SECONDS
echo "quickstart: [1/3] installing what is missing (a fresh machine downloads about 3 GB: 1-2 min)" >&2
bash scripts/install_deps.sh
t1=$SECONDS
echo "quickstart: [2/3] building bench alone (about 2.5 min on 2 cores the first time; the tests come with scripts/test.sh)" >&2
BUILD_TARGET=bench bash scripts/build.sh
t2=$SECONDS
echo "quickstart: [3/3] training the quick preset (2 layers, d_model 128, 400 steps: about 30 s)" >&2
status=0
./build/bench --preset quick --overwrite 1 "$@" || status=$?
echo "quickstart: install $((t1 - t0)) s, build $((t2 - t1)) s, run $((SECONDS - t2)) s" >&2
echo "quickstart: loss curves in TensorBoard: .venv/bin/tensorboard --logdir runs (then open http://localhost:6006)" >&2
exit $status
