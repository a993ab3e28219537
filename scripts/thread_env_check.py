#!/usr/bin/env python3
"""Whether run folders ran under one thread environment (their env.json "thread_env").
Usage: thread_env_check.py RUN_DIR...
Prints one line naming the variables set, the same in all runs, or a warning and each run's
set where they differ (compare.sh appends it to its report).
Example: scripts/thread_env_check.py runs/compare/*_*"""
import glob
import json
import sys


def main(dirs):
    envs = {}
    # A folder of repetitions (bench --repeat N) stands for its rep-K folders.
    dirs = [r for d in dirs for r in (sorted(glob.glob(d + "/rep-*")) or [d])]
    for d in dirs:
        try:
            with open(d + "/env.json") as f:
                envs[d] = json.load(f).get("thread_env")
        except (OSError, ValueError) as e:  # a run that failed before writing it
            print(f"thread_env_check: {d}: no readable env.json ({e.__class__.__name__}); left out")
    if not envs:
        return 0
    distinct = {json.dumps(e, sort_keys=True) for e in envs.values()}
    if len(distinct) == 1:
        set_vars = {k: v for k, v in (next(iter(envs.values())) or {}).items() if v is not None}
        print(f"\nThread environment, the same in all {len(envs)} runs: {set_vars or 'none set'}")
        return 0
    print("\nWARNING: the runs' thread environments differ:")
    for d, e in envs.items():
        print(f"  {d}: { {k: v for k, v in (e or {}).items() if v is not None} }")
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if len(sys.argv) > 1 else 2)
    sys.exit(main(sys.argv[1:]))
