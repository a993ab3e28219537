#!/usr/bin/env python3
"""The GPU call's time, stage by stage, before it runs (scripts/gpu_bench.sh prints it into
machine.txt): the reference shape's FLOPs per step (bench's count: 6 x the GEMMs' multiply-adds
+ the attention products + the head, 164.4 MFLOP a token at 8 layers, d_model 512) at an
assumed MFU on the H200's datasheet peak, plus each run's fixed cost (start, CUDA set-up,
compiles), fitted to the first call on an H200 (2026-12-04: tests 7 s, runs 169 / 120 / 169 s
for bfloat16 / float16 / float32 at 100 steps; JAX has no float16 run).
Usage: gpu_estimate.py [--steps N] [--dtypes "bfloat16 float16 float32"] [--rehearsal]
Example: gpu_estimate.py --steps 60"""
import argparse
import sys

PEAK = {"bfloat16": 989.4e12, "float16": 989.4e12, "float32": 494.7e12}  # H200, TF32 for f32
MFU = 0.18  # the runs' mean on the H200 at batch 100 (bench eager 12%, fused + flash 24%)
# Fixed seconds a run, fitted to the H200's call: bench (library load, CUDA context, corpus,
# evaluation), TorchScript's compile, a Python peer's import + CUDA set-up, torch.compile
# (20-25 s measured), torch.compile mode="max-autotune" (not yet run on a GPU: its GEMM
# autotuning and CUDA graphs assumed at 90 s; 42 s on a 2-vCPU Zen 4 at batch 8), JAX's import
# and jit (17-19 s of jit measured).
BENCH, SCRIPT, PEER, INDUCTOR, AUTOTUNE, JAX = 5, 5, 15, 25, 90, 30
BUILD, TESTS, REPORT = 10, 15, 5  # carried binaries checked; the GPU tests; a report
# Per dtype: compare.sh's 5 bench columns on a GPU + 4 PyTorch (eager, torch.compile in its
# default mode and max-autotune, flash; + JAX but in float16), the torch model, the CUDA graph
# of eager and of the fused path (both with flash and fused Adam), --adam_kernel multi and
# --gpu_kernels v2.
RUNS = 5 + 4 + 5


def flops_per_token(layers=8, d=512, ff=2048, seq=256, vocab=256):
    return layers * (6 * (4 * d * d + 2 * d * ff) + 12 * seq * d) + 6 * d * vocab


def main():
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--dtypes", default="bfloat16 float16 float32")
    p.add_argument("--rehearsal", action="store_true")
    a = p.parse_args()
    dtypes = a.dtypes.split()
    bad = [d for d in dtypes if d not in PEAK]
    if bad or a.steps < 1:
        print(f"gpu_estimate.py: dtypes {bad or dtypes} / steps {a.steps}: use "
              f"{', '.join(PEAK)} and steps >= 1", file=sys.stderr)
        sys.exit(2)
    print("estimate of the real call (H200, 8 layers, batch 100, seq 256; seconds; fixed costs "
          f"fitted to the first H200 call, step time from FLOPs at {MFU:.0%} MFU)")
    # The profile stage: four bench runs of warm-up + 3 profiled steps.
    rows = [("machine", 2), ("build", BUILD), ("tests", TESTS), ("profile", 4 * BENCH + 5)]
    step_flops = flops_per_token() * 100 * 256
    for d in dtypes:
        jax = d != "float16"
        steps = (RUNS + jax) * a.steps * step_flops / (PEAK[d] * MFU)
        fixed = 8 * BENCH + SCRIPT + 4 * PEER + INDUCTOR + AUTOTUNE + jax * JAX
        rows.append((f"runs_{d}", round(fixed + steps + REPORT)))
    for name, s in rows:
        print(f"  {name:16s} {s:4d}")
    print(f"  {'total':16s} {sum(s for _, s in rows):4d}")
    if a.rehearsal:
        print("(a rehearsal runs tiny CPU shapes: its own times are in stages.tsv)")


if __name__ == "__main__":
    main()
