#!/usr/bin/env bash
# One configuration in every framework: bench eager, bench --compile 1, the PyTorch-Python peer
# (eager, and torch.compile where the torch has it) and the JAX peer where JAX is installed,
# each dtype of DTYPES (default: float32 bfloat16), one run after another on the same bytes,
# then `bench report` with ratios against the Python eager column.
# Usage: scripts/compare.sh OUT_DIR [flags for every run, e.g. --num_layer 8 --batch_size 8]
# Without --data, bench's embedded corpus is exported to OUT_DIR/corpus.bin for all of them.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: $0 OUT_DIR [flags...]" >&2; exit 2; }
out=$1; shift
BENCH=${BENCH:-./build/bench}
if [ -z "${PYTHON:-}" ]; then
  PYTHON=python3
  /usr/bin/python3 -c 'import torch' 2>/dev/null && PYTHON=/usr/bin/python3
fi
mkdir -p "$out"
args=("$@")
case " $* " in
  *" --data "*) ;;
  *) "$BENCH" --export_corpus "$out/corpus.bin" >/dev/null; args+=(--data "$out/corpus.bin") ;;
esac
has_compile=$("$PYTHON" -c 'import torch; print(int(hasattr(torch, "compile")))' 2>/dev/null || echo 0)
has_jax=$("$PYTHON" -c 'import jax, flax, optax; print(1)' 2>/dev/null || echo 0)
dirs=()
run() {  # run NAME COMMAND...: one run, its folder collected
  local name=$1; shift
  echo "== $name" >&2
  if "$@" --save_dir "$out/$name" "${args[@]}" >/dev/null; then
    for d in "$out/$name"_*; do [ -d "$d" ] && dirs+=("$d"); done
  else
    echo "   ($name failed; left out of the table)" >&2
  fi
}
for dtype in ${DTYPES:-float32 bfloat16}; do
  run "cpp_$dtype" "$BENCH" --dtype "$dtype"
  run "cppc_$dtype" "$BENCH" --dtype "$dtype" --compile 1
  run "py_$dtype" "$PYTHON" scripts/peers/pytorch_run.py --dtype "$dtype"
  if [ "$has_compile" = 1 ]; then
    run "pyc_$dtype" "$PYTHON" scripts/peers/pytorch_run.py --dtype "$dtype" --compile 1
  else
    echo "== python torch.compile skipped: this torch has no torch.compile" >&2
  fi
  if [ "$has_jax" = 1 ]; then run "jax_$dtype" "$PYTHON" scripts/peers/jax_run.py --dtype "$dtype"
  else echo "== JAX skipped: jax/flax/optax are not installed for $PYTHON" >&2; fi
done
"$BENCH" report --baseline "pytorch handcraft" "${dirs[@]}" | tee "$out/report.md"
