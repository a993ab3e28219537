#!/usr/bin/env python3
"""Markdown tables from kernel_bench's Google Benchmark JSON (the medians of repetitions): each
kernel's time, bandwidth and share of the machine's copy bandwidth, each op's eager and fused
times (forward + backward) with the fused speed-up, and the CPU's FMA peak (BM_FmaPeak).
Usage: kernel_bench_table.py KERNEL_BENCH_JSON
Example: scripts/kernel_bench_table.py runs/kbench/kernel_bench.json"""
import json
import sys


def us(b):
    """real_time in microseconds, whatever unit the run reported."""
    return b["real_time"] * {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}[b.get("time_unit", "ns")]


def main(path):
    with open(path) as f:
        runs = [b for b in json.load(f)["benchmarks"] if b.get("aggregate_name") == "median"]
    copy = next((b["bytes_per_second"] for b in runs if b["run_name"].startswith("BM_MemoryCopy")),
                None)
    print("| kernel | dtype | time us (median) | GB/s | of copy bandwidth |\n|---|---|---|---|---|")
    if copy:
        print(f"| memory copy | - | - | {copy / 1e9:.1f} | 100% |")
    for b in runs:
        if b["run_name"].startswith("BM_Kernel"):
            gbs = b.get("bytes_per_second", 0)
            share = f"{100 * gbs / copy:.0f}%" if copy else "-"
            print(f"| {b['run_name'].split('/')[0][9:]} | {b.get('label', '')} | {us(b):.0f} | "
                  f"{gbs / 1e9:.1f} | {share} |")
    print("\n| op (forward + backward) | dtype | eager ms | fused ms | fused speed-up |\n"
          "|---|---|---|---|---|")
    ops = {}
    for b in runs:
        if b["run_name"].startswith("BM_Op"):
            name, dt, fused = b["run_name"].split("/")[:3]
            ops.setdefault((name[5:], dt), {})[fused] = us(b) / 1e3
    for (name, dt), t in ops.items():
        if "0" in t and "1" in t:
            print(f"| {name} | {'float32' if dt == '0' else 'bfloat16'} | {t['0']:.2f} | "
                  f"{t['1']:.2f} | {t['0'] / t['1']:.2f}x |")
    for b in runs:  # a width the CPU lacks was skipped: no counter
        if b["run_name"].startswith("BM_FmaPeak") and "FLOP/s" in b:
            bits = b["run_name"].split("/")[1]
            print(f"\nFMA peak ({bits}-bit vectors, {b.get('label', '')}): "
                  f"{b['FLOP/s'] / 1e9:.1f} GFLOP/s")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help") else 2)
    sys.exit(main(sys.argv[1]))
