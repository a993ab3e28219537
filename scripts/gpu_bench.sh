#!/usr/bin/env bash
# The GPU call: one command on a CUDA machine without network that leaves the whole table in
# OUT_DIR, stage by stage, inside a time budget. Each stage writes its files into OUT_DIR when it
# ends and one line to OUT_DIR/stages.tsv (stage, status, seconds), so a call that runs out of
# time still returns what the stages before it did:
#   machine  machine.txt: nvidia-smi (lscpu in a rehearsal), torch, and the estimated seconds of
#            each stage
#   build    build.txt: the binaries carried in gpu-deps/bin (bench and trainbench_tests, built
#            on Debian 12 against the same torch 2.11 wheel, CUDA code for sm_90 + PTX) when
#            they start there, else configure and build (TARGETS) with the libraries of
#            gpu-deps/ and the machine's torch
#   tests    tests.txt: the GPU tests that matter most (the kernel table on CUDA against the
#            CPU, the fused model against eager, fused Adam, CUDA graph replay, the loss scaler
#            on device, the device profile)
#   profile  profile.md: bfloat16 fused + fused Adam at the reference shape with and without
#            flash, and with flash and --adam_kernel multi, and (on a GPU) --gpu_kernels v2,
#            `--profile_steps 3` (on CUDA the GPU's kernels by the op that launched
#            them, each category beside its bound; untraced: the GPU idle), `bench report` of both
#   runs     for each of DTYPES in turn: scripts/compare.sh at the reference shape (8 layers,
#            d_model 512, batch 100, seq 256): bench eager, TorchScript, flash, fused, fused +
#            flash, PyTorch eager, torch.compile (default and max-autotune: CUDA graphs) and
#            flash, JAX; then bench's torch model, flash + fused Adam + CUDA graph, and fused +
#            flash + fused Adam with each new item (scripts/gpu_items.py: --cuda_graph 1,
#            --adam_kernel multi, --gpu_kernels v2) whose GPU tests passed, one that failed named in tests.txt and
#            left out; after each dtype report.md and report.json
#            (`bench report`, MFU on bench's peak for the dtype: the GPU's datasheet figure,
#            which the peers are given too) and runs.tar.gz (the run folders' small files)
# 8 files in all, none in a folder (kept small so that it travels back from an offline GPU machine whole).
# Usage: scripts/gpu_bench.sh OUT_DIR
# Environment: BUDGET (seconds for the whole call, 530), STEPS (60), WARMUP (10), DTYPES
#   (bfloat16 float16 float32), PYTHON (python3), BUILD_DIR (build-gpu: the build and the
#   runs' folders), JOBS (nproc), TARGETS (bench trainbench_tests), RESUME (a folder holding an
#   earlier call's files: its finished stages and dtypes are kept, not run again).
#   REHEARSAL=1 (scripts/gpu_rehearse.sh sets it): the same stages on a CPU machine with tiny
#   shapes and --device cpu, no GPU check.
# Refused before anything is built, one line and exit 2 each: no CUDA device, no gpu-deps/ (the
# carried folder), carried binaries built from other sources than the tree (gpu-deps/bin/SOURCES
# against scripts/gpu_deps.sh sources), a torch that is not 2.11 or has no CUDA.
# Example: BUDGET=540 scripts/gpu_bench.sh "$OUT"
source "$(dirname "$0")/usage.sh"
tb_start "$0" "" "$@"
shift  # OUT_DIR, now $out
refuse() { echo "gpu_bench.sh: $*" >&2; exit 2; }
[ $# -eq 0 ] || refuse "'$1' is not allowed after OUT_DIR; it takes only OUT_DIR (settings in the environment, see --help)"
PYTHON=${PYTHON:-python3}
BUDGET=${BUDGET:-530}
STEPS=${STEPS:-60}
WARMUP=${WARMUP:-10}
BUILD_DIR=${BUILD_DIR:-build-gpu}
JOBS=${JOBS:-$(nproc)}
REHEARSAL=${REHEARSAL:-0}
read -r -a dtypes <<<"${DTYPES:-bfloat16 float16 float32}"
read -r -a targets <<<"${TARGETS:-bench trainbench_tests}"
for v in BUDGET STEPS WARMUP; do
  [[ "${!v}" =~ ^[0-9]+$ ]] || refuse "$v: '${!v}' is not allowed; use a whole number"
done
[ "$BUDGET" -ge 60 ] || refuse "BUDGET: $BUDGET is not allowed; use 60 seconds or more"
[ "$STEPS" -gt "$WARMUP" ] && [ "$WARMUP" -ge 3 ] ||
  refuse "STEPS ($STEPS) and WARMUP ($WARMUP): use STEPS > WARMUP >= 3"
for d in "${dtypes[@]}"; do
  case $d in float32 | float16 | bfloat16) ;; *) refuse "DTYPES: '$d' is not allowed; use some of: bfloat16 float16 float32" ;; esac
done
[ -z "${RESUME:-}" ] || [ -f "$RESUME/stages.tsv" ] ||
  refuse "RESUME: '$RESUME' holds no stages.tsv of an earlier call"

# --- preconditions ---------------------------------------------------------------------------
if [ "$REHEARSAL" != 1 ] && ! { nvidia-smi -L >/dev/null 2>&1 &&
       "$PYTHON" -c 'import sys, torch; sys.exit(not torch.cuda.is_available())' 2>/dev/null; }; then
  refuse "no CUDA device (nvidia-smi/torch.cuda.is_available false)"
fi
compgen -G "gpu-deps/*.deb" >/dev/null ||
  refuse "gpu-deps/ holds no .deb files: run 'scripts/gpu_deps.sh download' (and 'bin') on Debian 12 and carry gpu-deps/ along"
if [ -e gpu-deps/bin/bench ]; then
  carried_sources=$(cat gpu-deps/bin/SOURCES 2>/dev/null || echo unrecorded)
  tree_sources=$(bash scripts/gpu_deps.sh sources)
  [ "$carried_sources" = "$tree_sources" ] ||
    refuse "gpu-deps/bin was built from other sources ($carried_sources) than this tree ($tree_sources): run scripts/build.sh and scripts/gpu_deps.sh bin, or remove gpu-deps/bin to build on the device"
fi
read -r torch_version torch_prefix abi < <("$PYTHON" scripts/torch_build_info.py) ||
  refuse "$PYTHON cannot import torch"
torch_cuda=$("$PYTHON" -c 'import torch; print(torch.version.cuda or "")')
case $torch_version in 2.11.*) ;; *) refuse "torch $torch_version at $torch_prefix is not 2.11 (bench is built and tested against 2.11)" ;; esac
[ -n "$torch_cuda" ] || refuse "torch $torch_version has no CUDA (torch.version.cuda is None)"
[ "$abi" = 1 ] || refuse "torch $torch_version uses the pre-C++11 ABI; Debian's spdlog and gtest need _GLIBCXX_USE_CXX11_ABI=1"
torch_lib=$("$PYTHON" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
# The venv's own tools (ninja, cmake from pip) and the CUDA toolkit that LibTorch's CMake wants.
PATH="$("$PYTHON" -c 'import os, sys; print(os.path.dirname(sys.executable))'):$PATH"
[ -x /usr/local/cuda/bin/nvcc ] && PATH="$PATH:/usr/local/cuda/bin"

mkdir -p "$out" "$BUILD_DIR"
out=$(cd "$out" && pwd)
work=$(cd "$BUILD_DIR" && pwd)
logs=$work/logs runs=$work/runs
mkdir -p "$logs" "$runs"
: >"$out/stages.tsv"
# stage_done NAME STATUS START: one line of stages.tsv.
stage_done() { printf '%s\t%s\t%d\n' "$1" "$2" $((SECONDS - $3)) >>"$out/stages.tsv"; }
left() { echo $((BUDGET - SECONDS)); }
resumed() { [ -n "${RESUME:-}" ] && grep -q "^$1	ok	" "$RESUME/stages.tsv"; }

# --- machine ---------------------------------------------------------------------------------
real_steps=$STEPS
if [ "$REHEARSAL" = 1 ]; then
  shape=(--num_layer 1 --d_model 64 --num_heads 2 --ff_dim 128 --seq_len 64 --batch_size 4
         --device cpu --threads 2)
  STEPS=6 WARMUP=3
else
  shape=(--num_layer 8 --d_model 512 --num_heads 8 --ff_dim 2048 --seq_len 256 --batch_size 100
         --device cuda)
fi
common=("${shape[@]}" --steps "$STEPS" --warmup_steps "$WARMUP" --log_every 10 --eval_every 0
        --eval_batches 2)
t0=$SECONDS
{ if [ "$REHEARSAL" = 1 ]; then lscpu; else nvidia-smi; fi
  echo "torch $torch_version (CUDA $torch_cuda) at $torch_prefix; python $("$PYTHON" -V 2>&1)"
  echo "budget ${BUDGET} s; shape: ${common[*]}"
  "$PYTHON" scripts/gpu_estimate.py --steps "$real_steps" --dtypes "${dtypes[*]}" \
    $([ "$REHEARSAL" = 1 ] && echo --rehearsal)
} >"$out/machine.txt" 2>&1
grep -A20 "^estimate" "$out/machine.txt" >&2 || true
stage_done machine ok "$t0"

# --- build: the carried binaries first ---------------------------------------------------------
t0=$SECONDS
echo "== dependencies ($work/deps)" >&2
bash scripts/gpu_deps.sh unpack "$work/deps" >"$logs/deps.log"
# shellcheck disable=SC1091
source "$work/deps/env.sh"
# torch's libraries and the CUDA runtime of its wheel, ahead of the binaries' own run path.
cuda_libs=$(compgen -G "$torch_lib/../../nvidia/cu*/lib" | head -n 1 || true)
export LD_LIBRARY_PATH="$torch_lib${cuda_libs:+:$cuda_libs}:$LD_LIBRARY_PATH"
BENCH="" TESTS=""
if [ -x gpu-deps/bin/bench ] && gpu-deps/bin/bench --help >"$logs/bin-check.log" 2>&1; then
  BENCH=$PWD/gpu-deps/bin/bench
  [ -x gpu-deps/bin/trainbench_tests ] && TESTS=$PWD/gpu-deps/bin/trainbench_tests
  echo "carried binaries start here: gpu-deps/bin (built $(cat gpu-deps/bin/BUILT 2>/dev/null || echo '?'))" >"$out/build.txt"
else
  { echo "carried binaries: $([ -x gpu-deps/bin/bench ] && echo "do not start here:" || echo none)"
    tail -n 3 "$logs/bin-check.log" 2>/dev/null || true; } >"$out/build.txt"
  mapfile -t dep_args <"$work/deps/cmake-args.txt"
  echo "== configure against torch $torch_version" >&2
  if ! cmake -S . -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DTB_PYTHON="$(command -v "$PYTHON")" "${dep_args[@]}" >"$logs/configure.log" 2>&1; then
    tail -n 20 "$logs/configure.log" | tee -a "$out/build.txt" >&2
    stage_done build failed "$t0"
    echo "gpu_bench.sh: cmake configure failed (log: $logs/configure.log; LibTorch's CMake config needs the CUDA toolkit: nvcc on PATH or CUDAToolkit_ROOT)" >&2
    exit 1
  fi
  echo "== build (-j $JOBS: ${targets[*]})" >&2
  if ! timeout "$(left)" cmake --build "$work/build" -j "$JOBS" --target "${targets[@]}" \
      >"$logs/build.log" 2>&1; then
    grep -m 20 -E "error|Error" "$logs/build.log" | tee -a "$out/build.txt" >&2 || true
    stage_done build failed "$t0"
    echo "gpu_bench.sh: build failed or ran out of time (log: $logs/build.log)" >&2
    exit 1
  fi
  echo "built here: ${targets[*]}; warnings: $(grep -c "warning:" "$logs/build.log" || true)" >>"$out/build.txt"
  [ -x "$work/build/bench" ] && BENCH=$work/build/bench
  [ -x "$work/build/tests/trainbench_tests" ] && TESTS=$work/build/tests/trainbench_tests
fi
stage_done build ok "$t0"
cat "$out/build.txt" >&2
[ -n "$BENCH" ] || { echo "gpu_bench.sh: no bench among TARGETS (${targets[*]}): stopping after the build" >&2; exit 0; }

# --- tests ------------------------------------------------------------------------------------
t0=$SECONDS
if resumed tests; then
  cp "$RESUME/tests.txt" "$out/tests.txt"
  stage_done tests ok "$t0"
elif [ -n "$TESTS" ]; then
  echo "== GPU tests" >&2
  filter="KernelTableBits.*:KernelTableBitsV2.*:GpuRows.*:KernelTableCuda.*:FusedGpu.*:FusedAdam.*:CudaGraph.*:LossScalerOnDevice.*:GpuFlags*:ProfileOnCuda.*"
  status=ok
  # TB_BENCH_EXE: the tests that run bench take this one (the build folder's path they were
  # compiled with does not exist on the GPU machine).
  TB_BENCH_EXE=$BENCH timeout "$((BUDGET / 5))" "$TESTS" --gtest_filter="$filter" \
    >"$logs/tests.log" 2>&1 || status=failed
  # gtest's summary (how many ran, passed, skipped, failed and which), then the first failures.
  { echo "filter: $filter"
    grep -E '^\[==========\] [0-9]+ tests? from .* ran|^\[  (PASSED|SKIPPED|FAILED) +\] [0-9]+ tests?|^\[  FAILED  \] [A-Za-z]' \
      "$logs/tests.log" || echo "no gtest summary (log: $logs/tests.log)"
    grep -m 20 -A 6 "Failure" "$logs/tests.log" || true
  } >"$out/tests.txt"
  stage_done tests "$status" "$t0"
  echo "   tests: $status" >&2
else
  echo "no test binary (TARGETS: ${targets[*]})" >"$out/tests.txt"
  stage_done tests skipped "$t0"
fi

# The new items the tests stage proved (scripts/gpu_items.py): one whose GPU test failed is named
# in tests.txt and left out of the runs; without tests.txt, all are.
new_items=()
if [ -f "$out/tests.txt" ]; then
  mapfile -t new_items < <("$PYTHON" scripts/gpu_items.py "$out/tests.txt" 2>"$logs/left_out.txt")
  grep -qxF -f "$logs/left_out.txt" "$out/tests.txt" || cat "$logs/left_out.txt" >>"$out/tests.txt"
fi

# --- profile: where the fused step's time goes, with and without flash ------------------------
t0=$SECONDS
if resumed profile; then
  cp "$RESUME/profile.md" "$out/profile.md"
  stage_done profile ok "$t0"
elif [ "$(left)" -lt 60 ]; then
  stage_done profile "no time" "$t0"
else
  echo "== profile (bfloat16 fused, flash 1 and 0; flash 1 with --adam_kernel multi, with" \
    "--gpu_kernels v2)" >&2
  status=ok
  rm -rf "$work/profile"
  profiles=("p 1 param v1" "p 0 param v1" "m 1 multi v1")
  [ "$REHEARSAL" = 1 ] || profiles+=("v 1 param v2")  # CUDA kernels: a CPU run refuses v2
  for run in "${profiles[@]}"; do
    read -r prefix flash adam rows <<<"$run"
    timeout 60 "$BENCH" "${shape[@]}" --dtype bfloat16 --gpu_kernels "$rows" \
      --compile fused --fused_adam 1 --adam_kernel "$adam" --flash "$flash" \
      --steps "$((WARMUP + 5))" --warmup_steps "$WARMUP" --profile_steps 3 --log_every 10 \
      --eval_every 0 --eval_batches 1 --tensorboard 0 --save_dir "$work/profile/$prefix" \
      >"$logs/profile_${prefix}_$flash.log" 2>&1 || status=failed
  done
  "$BENCH" report "$work"/profile/[pmv]_*/ >"$out/profile.md" 2>&1 ||
    status=failed
  stage_done profile "$status" "$t0"
  echo "   profile: $status" >&2
fi

# --- runs, one dtype after another, the report after each -------------------------------------
stale=0  # run folders that no report covers yet: an earlier call's, until the first report
if [ -n "${RESUME:-}" ] && [ -f "$RESUME/runs.tar.gz" ]; then
  tar -xzf "$RESUME/runs.tar.gz" -C "$runs"
  stale=1
fi
report() {  # the report over every run folder so far, and the small files of each
  local dirs=() d f
  # In the table's order: per dtype bench's columns (matrix order), its extra ones, the peers.
  for d in "${dtypes[@]}"; do
    for f in $(ls -d "$runs/$d"/bench/*/ 2>/dev/null | sort -V) \
             $(ls -d "$runs/$d"/extra/*/ 2>/dev/null | sort -V) \
             "$runs/$d"/py_*/ "$runs/$d"/pyc_*/ "$runs/$d"/pyca_*/ "$runs/$d"/pyf_*/ \
             "$runs/$d"/jax_*/; do
      [ -f "$f/summary.json" ] && dirs+=("${f%/}")
    done
  done
  [ ${#dirs[@]} -gt 0 ] || return 0
  "$BENCH" report --json --baseline "pytorch handcraft" "${dirs[@]}" >"$out/report.json" || true
  { "$PYTHON" scripts/compare_table.py <"$out/report.json"
    echo; "$BENCH" report --baseline "pytorch handcraft" "${dirs[@]}"; } >"$out/report.md" || true
  tar -czf "$out/runs.tar.gz" -C "$runs" --exclude='checkpoint-*' --exclude='*.bin' \
    --exclude='*.tmp*' --exclude='*.png' --exclude='.lock' .
  stale=0
}
for dtype in "${dtypes[@]}"; do
  t0=$SECONDS
  if resumed "runs_$dtype"; then stage_done "runs_$dtype" ok "$t0"; continue; fi
  if [ "$(left)" -lt 30 ]; then stage_done "runs_$dtype" "no time" "$t0"; continue; fi
  echo "== runs: $dtype ($(left) s left)" >&2
  status=ok
  rm -rf "${runs:?}/$dtype"
  DTYPES=$dtype BENCH=$BENCH PYTHON=$PYTHON timeout "$(left)" bash scripts/compare.sh \
    "$runs/$dtype" "${common[@]}" >"$logs/compare_$dtype.log" 2>&1 || status=partial
  # The columns compare.sh lacks: bench's torch model, the CUDA graph (flash + fused Adam), and
  # fused + flash + fused Adam with each new item its GPU tests proved (gpu_items.py).
  extra="--model torch --dtype $dtype"
  if [ "$REHEARSAL" != 1 ]; then
    extra+="; --model handcraft --dtype $dtype --flash 1 --fused_adam 1 --cuda_graph 1"
    for item in "${new_items[@]}"; do
      extra+="; --model handcraft --dtype $dtype --compile fused --flash 1 --fused_adam 1 $item"
    done
  fi
  if [ "$(left)" -gt 10 ]; then
    MATRIX=$extra BENCH=$BENCH PYTHON=$PYTHON timeout "$(left)" bash scripts/sweep.sh \
      "$runs/$dtype/extra" --data "$runs/$dtype/corpus.bin" "${common[@]}" \
      >"$logs/extra_$dtype.log" 2>&1 || status=partial
  else
    status=partial
  fi
  report
  stage_done "runs_$dtype" "$status" "$t0"
done
[ "$stale" = 0 ] || report  # every dtype came from RESUME (or had no time)
echo "gpu_bench.sh: $(cut -f1,2 "$out/stages.tsv" | tr '\t\n' ': ')in $SECONDS s; files in $out" >&2
