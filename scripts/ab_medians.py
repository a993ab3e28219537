#!/usr/bin/env python3
"""Median step times of an A/B pair of run folders and the speed-up of B over A.
Usage: ab_medians.py OUT_DIR DTYPE A_PREFIX:A_LABEL B_PREFIX:B_LABEL
(each run folder is OUT_DIR/{PREFIX}_{model}_layer{N}_{DTYPE}, as bench names it)."""
import glob
import json
import sys


def median_ms(out, prefix, dtype):
    path = glob.glob(f"{out}/{prefix}_*_layer*_{dtype}*/summary.json")[0]
    with open(path) as f:
        return json.load(f)["step_time_ms"]["median"]


def main(out, dtype, a, b):
    (pa, la), (pb, lb) = a.split(":", 1), b.split(":", 1)
    ma, mb = median_ms(out, pa, dtype), median_ms(out, pb, dtype)
    print(f"{dtype}: median step ms: {la} {ma:.0f}, {lb} {mb:.0f}, speed-up {ma / mb:.2f}x")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0)
    main(*sys.argv[1:5])
