#!/usr/bin/env bash
# The GPU benchmark in one command, on a CUDA machine without network: unpacks our Debian
# dependencies (scripts/gpu_deps.sh; gpu-deps/ must come along with the tree), configures
# against the Python install's LibTorch with Ninja, builds, runs the tests (CUDA cases
# included), trains the reference shape (8 layers, d_model 512, batch 100, seq 256) for a few
# hundred steps in each configuration below, one after another, and prints the reference-style
# table with `bench report` through scripts/sweep.sh (seq/s, speed-up ratios, tokens/s, MFU,
# peak memory). Build logs stay in OUT_DIR/logs, run folders, their logs and report.md/.json in
# OUT_DIR/runs. Sized to finish in about 8 minutes on one H200.
# Usage: scripts/gpu_bench.sh OUT_DIR
# Environment: STEPS (150), WARMUP (20), PYTHON (python3), BUILD_DIR (build-gpu), JOBS (nproc),
#   SKIP_TESTS=1 (reruns), MATRIX (space-separated names of configurations: naive flash compiled
#   compiled_flash torch flash_fused_adam graph; each is a set of bench flags, see matrix_entry
#   below, run in float32, float16 and bfloat16 as scripts/sweep.sh MATRIX entries; "fused" is
#   kept for --compile fused, so flash + fused Adam is flash_fused_adam).
#   REHEARSAL=1 (scripts/gpu_rehearse.sh sets it): the same script on a CPU machine, in an
#   environment hiding our Debian packages: no GPU check; builds TARGETS (default bench), then
#   trains one tiny CPU run of the quick preset instead of the tests and the matrix.
# Example: STEPS=100 scripts/gpu_bench.sh runs/h200
source "$(dirname "$0")/usage.sh"
tb_start "$0" "" "$@"
shift  # OUT_DIR, now $out
die() { echo "gpu_bench.sh: $*" >&2; exit 1; }
usage_error() { echo "gpu_bench.sh: $*" >&2; exit 2; }
[ $# -eq 0 ] || usage_error "'$1' is not allowed after OUT_DIR; it takes only OUT_DIR" \
  "(settings in the environment, see --help)"
PYTHON=${PYTHON:-python3}
STEPS=${STEPS:-150}
WARMUP=${WARMUP:-20}
BUILD_DIR=${BUILD_DIR:-build-gpu}
JOBS=${JOBS:-$(nproc)}
[[ "$STEPS" =~ ^[0-9]+$ && "$WARMUP" =~ ^[0-9]+$ && STEPS -gt WARMUP && WARMUP -ge 3 ]] ||
  usage_error "STEPS ($STEPS) and WARMUP ($WARMUP) must be integers with STEPS > WARMUP >= 3"

# --- the training matrix (checked before anything is built) --------------------------------------
# name -> bench flags; each runs for float32, float16 and bfloat16 through scripts/sweep.sh
# (one run after another; report and plots in OUT_DIR/runs/).
matrix_entry() {
  case $1 in
    torch) echo "--model torch --compile none --flash 0" ;;
    naive) echo "--model handcraft --compile none --flash 0" ;;
    flash) echo "--model handcraft --compile none --flash 1" ;;
    compiled) echo "--model handcraft --compile torchscript --flash 0" ;;
    compiled_flash) echo "--model handcraft --compile torchscript --flash 1" ;;
    flash_fused_adam) echo "--model handcraft --compile none --flash 1 --fused_adam 1" ;;
    graph) echo "--model handcraft --compile none --flash 1 --fused_adam 1 --cuda_graph 1" ;;
    *) usage_error "MATRIX: unknown name '$1'; use some of: $all_names" ;;
  esac
}
all_names="naive flash compiled compiled_flash torch flash_fused_adam graph"
read -r -a names <<<"${MATRIX:-$all_names}"
[ ${#names[@]} -gt 0 ] ||
  usage_error "MATRIX: '$MATRIX' names no configuration; use some of: $all_names"
for name in "${names[@]}"; do matrix_entry "$name" >/dev/null; done

# --- preconditions, each a one-line reason ---------------------------------------------------
REHEARSAL=${REHEARSAL:-0}
if [ "$REHEARSAL" != 1 ] && ! { nvidia-smi -L >/dev/null 2>&1 &&
       "$PYTHON" -c 'import sys, torch; sys.exit(not torch.cuda.is_available())' 2>/dev/null; }; then
  die "no CUDA device (nvidia-smi/torch.cuda.is_available false)"
fi
compgen -G "gpu-deps/*.deb" >/dev/null ||
  die "gpu-deps/ holds no .deb files: run 'scripts/gpu_deps.sh download' on Debian 12 and bring gpu-deps/ along"
read -r torch_version torch_prefix abi < <("$PYTHON" scripts/torch_build_info.py)
[ "$abi" = 1 ] || die "torch $torch_version uses the pre-C++11 ABI; Debian's spdlog and gtest need _GLIBCXX_USE_CXX11_ABI=1 (torch >= 2.7 wheels)"
# The venv's own tools (ninja, cmake from pip) and the CUDA toolkit that LibTorch's CMake wants.
PATH="$("$PYTHON" -c 'import os, sys; print(os.path.dirname(sys.executable))'):$PATH"
[ -x /usr/local/cuda/bin/nvcc ] && PATH="$PATH:/usr/local/cuda/bin"
for tool in cmake ninja c++; do command -v $tool >/dev/null || die "$tool is not on PATH"; done
mkdir -p "$out/logs"
out=$(cd "$out" && pwd)
{ if [ "$REHEARSAL" = 1 ]; then lscpu; else nvidia-smi; fi
  echo "torch $torch_version at $torch_prefix"; } >"$out/machine.txt" 2>&1

# --- dependencies, configure, build ----------------------------------------------------------
echo "== dependencies ($BUILD_DIR/deps)" >&2
bash scripts/gpu_deps.sh unpack "$BUILD_DIR/deps" >"$out/logs/deps.log"
# shellcheck disable=SC1091
source "$BUILD_DIR/deps/env.sh"
mapfile -t dep_args <"$BUILD_DIR/deps/cmake-args.txt"
echo "== configure against torch $torch_version" >&2
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DTB_PYTHON="$(command -v "$PYTHON")" "${dep_args[@]}" >"$out/logs/configure.log" 2>&1 || {
  tail -n 20 "$out/logs/configure.log" >&2
  die "cmake configure failed (log: $out/logs/configure.log; LibTorch's CMake config needs the CUDA toolkit: nvcc on PATH or CUDAToolkit_ROOT)"
}
grep -q "CUDA code: ON" "$out/logs/configure.log" || die "the LibTorch at $torch_prefix has no CUDA"
targets=()
if [ "$REHEARSAL" = 1 ]; then read -r -a targets <<<"${TARGETS:-bench}"; fi
echo "== build (-j $JOBS${targets[*]:+: ${targets[*]}})" >&2
cmake --build "$BUILD_DIR" -j "$JOBS" ${targets[@]:+--target "${targets[@]}"} \
  >"$out/logs/build.log" 2>&1 || {
  grep -m 20 -E "error|Error" "$out/logs/build.log" >&2 || true
  die "build failed (log: $out/logs/build.log)"
}
warnings=$(grep -c "warning:" "$out/logs/build.log" || true)
echo "   build warnings: $warnings" >&2
if [ "$REHEARSAL" = 1 ]; then
  if [ -x "$BUILD_DIR/bench" ]; then
    echo "== one tiny CPU run (rehearsal)" >&2
    "$BUILD_DIR/bench" --preset quick --steps 5 --warmup_steps 2 --log_every 1 --eval_every 0 \
      --eval_batches 1 --device cpu --save_dir "$out/runs/rehearsal" >"$out/logs/run.log" 2>&1 ||
      die "the rehearsal's run failed (log: $out/logs/run.log)"
  fi
  echo "rehearsal: configure and build of ${targets[*]} passed without our Debian packages" >&2
  exit 0
fi

# --- tests ------------------------------------------------------------------------------------
tests_ok=1
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  echo "== tests (CUDA cases included)" >&2
  if (cd "$BUILD_DIR" && ctest --output-on-failure -j "$JOBS") >"$out/logs/tests.log" 2>&1; then
    grep -E "tests passed|tests failed" "$out/logs/tests.log" >&2 || true
  else
    tests_ok=0
    grep -E "tests passed|tests failed|\(Failed\)|\(Timeout\)" "$out/logs/tests.log" >&2 || true
    echo "   tests failed (log: $out/logs/tests.log); the benchmark runs anyway" >&2
  fi
  grep -E "Skipped|SKIPPED" "$out/logs/tests.log" | head -n 5 >&2 || true
fi

# --- the runs, one after another, through the matrix runner -----------------------------------
common=(--num_layer 8 --d_model 512 --num_heads 8 --ff_dim 2048 --seq_len 256 --batch_size 100
        --steps "$STEPS" --warmup_steps "$WARMUP" --log_every 10 --eval_every 0 --eval_batches 2
        --device cuda --overwrite 1)
sweep_matrix=""
for name in "${names[@]}"; do
  for dtype in float32 float16 bfloat16; do
    sweep_matrix+="$(matrix_entry "$name") --dtype $dtype"$'\n'
  done
done
MATRIX="$sweep_matrix" BENCH="$BUILD_DIR/bench" PYTHON="$PYTHON" bash scripts/sweep.sh "$out/runs" \
  "${common[@]}" || die "no run completed (logs: $out/runs/*.log)"
echo "results: $out/runs (report.md, report.json; build warnings: $warnings, tests: $([ $tests_ok = 1 ] && echo ok || echo FAILED))" >&2
[ $tests_ok = 1 ]
