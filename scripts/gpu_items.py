#!/usr/bin/env python3
"""The GPU call's new items (paths that stay off by default until a call measures them) and the
GPU tests that prove each: prints, a line each, the bench flags of every item none of whose tests
failed in TESTS_TXT (the tests stage's gtest summary, scripts/gpu_bench.sh), and names each item
left out, with its failed tests, on stderr. A failing item is left out of the runs, never the
call.
Usage: gpu_items.py TESTS_TXT
Example: gpu_items.py "$OUT/tests.txt" 2>>"$OUT/tests.txt\""""
import argparse
import sys

# (bench flags beside fused + flash + fused Adam, the tests' names or name prefixes)
ITEMS = [
    ("--cuda_graph 1", ["CudaGraph.TheFusedStepCapturedWithDropoutTrainsEagersLosses"]),
    ("--adam_kernel multi", ["FusedAdam.AListStepIsThePerParameterSteps",
                             "FusedAdam.AMultiTensorRunTrainsThePerParameterRunsLosses",
                             "KernelTableBits.ADAM_LIST"]),
    ("--gpu_kernels v2", ["KernelTableBitsV2.",
                          "FusedGpu.TheV2KernelsTrainTheV1LossesWithin1e3"]),
]


def main():
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("tests_txt")
    a = p.parse_args()
    try:
        lines = open(a.tests_txt, errors="replace").read().splitlines()
    except OSError as e:
        print(f"gpu_items.py: TESTS_TXT: {e.strerror}: '{a.tests_txt}'", file=sys.stderr)
        sys.exit(2)
    failed = [line[len("[  FAILED  ] "):] for line in lines if line.startswith("[  FAILED  ] ")]
    for flags, tests in ITEMS:
        bad = sorted({f.split()[0] for f in failed for t in tests if f.startswith(t)})
        if bad:
            print(f"left out: {flags} (failed: {', '.join(bad)})", file=sys.stderr)
        else:
            print(flags, flush=True)


if __name__ == "__main__":
    main()
