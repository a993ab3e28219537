#!/usr/bin/env python3
"""The attention kernel a flash run used (its summary.json "sdpa_backend_used").
Usage: flash_backend_used.py OUT_DIR DTYPE
(the run folder is OUT_DIR/flash_*_DTYPE_flash, as libtorch_ab.sh names it).
Example: scripts/flash_backend_used.py runs/ab bfloat16"""
import glob
import json
import sys


def main(out, dtype):
    found = glob.glob(f"{out}/flash_*_{dtype}_flash/summary.json")
    if not found:
        print(f"flash_backend_used.py: no {out}/flash_*_{dtype}_flash/summary.json", file=sys.stderr)
        return 2
    with open(found[0]) as f:
        print(f"{dtype}: the flash run's attention kernel: {json.load(f).get('sdpa_backend_used')}")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help") else 2)
    sys.exit(main(*sys.argv[1:3]))
