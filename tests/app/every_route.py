#!/usr/bin/env python3
"""Every default on one CPU class: bench with its default flags (allocator, dropout, GEMM route,
probe) in each dtype x --compile none|torchscript|fused, --flash 0 and 1 in turn, at a tiny
shape, under ONEDNN_MAX_CPU_ISA=CAP, which makes this CPU take the GEMM paths of a CPU of that
class (AVX2: Zen 3; AVX512_CORE: Xeons without BF16; AVX512_CORE_BF16: Zen 4/5, Cooper Lake;
AVX512_CORE_AMX: Sapphire/Emerald Rapids; DEFAULT: this CPU as it is). The fused runs take the
avx2 build of the CPU rows under AVX2, the widest this CPU runs otherwise (TB_CPU_ROWS).
Each run must exit 0 with no C++ stack, complete, and report the GEMM path of its class; a cap
above what this CPU has is skipped with a line saying so. CTest runs it once per cap.
Usage: every_route.py CAP BENCH OUT_DIR"""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

# The /proc/cpuinfo flags a cap needs (what oneDNN's ISA of that name requires), and the path
# of LibTorch's own GEMM in each 16-bit dtype under it where the cap alone decides it.
CAPS = {
    "AVX2": (["avx2", "fma"], {"bfloat16": "reference", "float16": "reference"}),
    "AVX512_CORE": (["avx512f", "avx512bw", "avx512vl", "avx512dq"],
                    {"bfloat16": "onednn_emulated", "float16": "reference"}),
    "AVX512_CORE_BF16": (["avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512_bf16"],
                         {"bfloat16": "onednn_native", "float16": "reference"}),
    "AVX512_CORE_AMX": (["avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512_bf16",
                         "avx512_fp16", "amx_tile", "amx_bf16"],
                        {"bfloat16": "onednn_native", "float16": "onednn_native"}),
    "DEFAULT": ([], {}),
}
TINY = ("--num_layer 1 --d_model 32 --num_heads 2 --ff_dim 64 --seq_len 32 --batch_size 4 "
        "--steps 4 --warmup_steps 2 --log_every 1 --eval_every 0 --eval_batches 1 "
        "--device cpu --tensorboard 0").split()
DTYPES = ["float32", "bfloat16", "float16"]
COMPILES = ["none", "torchscript", "fused"]


def cpu_flags():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    return set()


def main(cap, bench, out):
    needs, paths = CAPS[cap]
    missing = [f for f in needs if f not in cpu_flags()]
    if missing:
        print(f"[  SKIPPED ] this CPU lacks {' '.join(missing)}: "
              f"ONEDNN_MAX_CPU_ISA={cap} is not a class it can stand for")
        return 0
    env = dict(os.environ)
    env.pop("TB_CPU_ROWS", None)
    if cap != "DEFAULT":
        env["ONEDNN_MAX_CPU_ISA"] = cap
    failures = []
    out = tempfile.mkdtemp(prefix=cap + "-", dir=out)  # a fresh folder for every pass
    k = list(CAPS).index(cap)
    for i, (dtype, compile_) in enumerate((d, c) for d in DTYPES for c in COMPILES):
        flash = (i + k) % 2  # each pair meets both flash values across the caps
        rows = {"TB_CPU_ROWS": "avx2"} if cap == "AVX2" and compile_ == "fused" else {}
        name = f"{dtype}_{compile_}_flash{flash}"
        cmd = [bench, *TINY, "--dtype", dtype, "--compile", compile_, "--flash", str(flash),
               "--save_dir", os.path.join(out, name)]
        r = subprocess.run(cmd, env={**env, **rows}, capture_output=True, text=True)
        text = r.stdout + r.stderr
        # bench's folder name: NAME_handcraft_layer1_DTYPE[_compiled|_fused][_flash]
        found = glob.glob(os.path.join(out, f"{name}_handcraft_layer1_{dtype}*"))
        run = found[0] if found else os.path.join(out, name)
        why = []
        if r.returncode != 0:
            why.append(f"exit {r.returncode}")
        for stack in ("frame #", "terminate called", "Exception raised from"):
            if stack in text:
                why.append(f"'{stack}' in the output")
        try:
            with open(os.path.join(run, "summary.json")) as f:
                summary = json.load(f)
            with open(os.path.join(run, "env.json")) as f:
                gemm = json.load(f)["gemm_path"]
            if summary.get("status") != "completed":
                why.append(f"status {summary.get('status')}: {summary.get('error_message')}")
            want = paths.get(dtype, "mkl_float32" if dtype == "float32" else None)
            if want and gemm.get("libtorch") != want:
                why.append(f"LibTorch's GEMM path {gemm.get('libtorch')}, expected {want}")
        except (OSError, ValueError, KeyError) as e:
            why.append(f"no result files ({e})")
        label = f"{cap} {' '.join(f'{a}={b}' for a, b in rows.items())} {name}".replace("  ", " ")
        print(("ok     " if not why else "FAILED ") + label + ("" if not why else ": " + "; ".join(why)))
        if why:
            failures.append(label)
            sys.stdout.write("  " + "\n  ".join(text.strip().splitlines()[-5:]) + "\n")
    print(f"every_route {cap}: {9 - len(failures)} of 9 runs as expected")
    if not failures:
        shutil.rmtree(out)
    return 1 if failures else 0


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in CAPS:
        print(__doc__)
        sys.exit(2)
    os.makedirs(sys.argv[3], exist_ok=True)
    sys.exit(main(*sys.argv[1:]))
