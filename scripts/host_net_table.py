#!/usr/bin/env python3
"""host_net_bench.sh's table: data parallel between two hosts over links of a few rates,
against a ring all-reduce model t(n) = 2 (n-1)/n S/B + 2 (n-1) alpha fitted to the measured
all-reduces (alpha: half the smallest all-reduce on the fastest link).
Usage: host_net_table.py OUT_DIR RATE...
OUT_DIR holds what host_net_bench.sh wrote: one_*/ (one process), seq_RATE_*/ and ov_RATE_*/
(two ranks, the all-reduce after backward and overlapped), allreduce_RATE.log (rank 0's
allreduce_bench table). RATE: none (the unlimited link) or a number with kbit|mbit|gbit.
Example: scripts/host_net_table.py runs/hostnet none 1gbit 100mbit"""
import glob
import json
import re
import sys


def summary(out, prefix):
    with open(glob.glob(f"{out}/{prefix}_*/summary.json")[0]) as f:
        return json.load(f)


def allreduce(out, rate):
    """{bytes: seconds per all-reduce} from rank 0's markdown table."""
    rows = {}
    with open(f"{out}/allreduce_{rate}.log") as f:
        for line in f:
            m = re.match(r"\| (\d+) \| ([\d.]+) \|", line)
            if m:
                rows[int(m.group(1))] = float(m.group(2)) / 1e3
    return rows


def bytes_per_s(rate):
    m = re.match(r"(\d+)(k|m|g)bit", rate)
    return int(m.group(1)) * {"k": 1e3, "m": 1e6, "g": 1e9}[m.group(2)] / 8 if m else None


def main(out, rates):
    one = summary(out, "one")
    step1 = one["step_time_ms"]["median"] / 1e3
    grad = 4 * one["params"]  # float32 gradients, bytes
    ar = {r: allreduce(out, r) for r in rates}
    big = max(ar[rates[0]])
    alpha = min(min(a.values()) for a in ar.values()) / 2
    busbw_free = big / ar[rates[0]][big] if rates[0] == "none" else None

    def ring(n, size, bw):
        return 2 * (n - 1) / n * size / bw + 2 * (n - 1) * alpha

    print(f"# 2 hosts, 1 rank each (1 thread), {one['params']} parameters = {grad / 1e6:.1f} MB "
          f"of float32 gradients; 1 process: {1e3 * step1:.0f} ms/step; "
          f"alpha = {1e3 * alpha:.2f} ms")
    print(f"| link | all-reduce {big >> 20} MiB ms | ring model ms | busbw GB/s "
          "| step ms, after backward | exposed comm ms | step ms, overlapped | exposed comm ms "
          "| ring model t(2) ms | model efficiency 8 / 64 ranks, no overlap |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rates:
        bw = bytes_per_s(r) or (busbw_free if busbw_free else big / ar[r][big])
        seq, ov = summary(out, f"seq_{r}"), summary(out, f"ov_{r}")
        eff = [step1 / (step1 + ring(n, grad, bw)) for n in (8, 64)]
        print(f"| {'unlimited (veth)' if r == 'none' else r} | {1e3 * ar[r][big]:.1f} | "
              f"{1e3 * ring(2, big, bw):.1f} | {big / ar[r][big] / 1e9:.3f} | "
              f"{seq['step_time_ms']['median']:.0f} | {seq.get('communication_ms') or 0:.0f} | "
              f"{ov['step_time_ms']['median']:.0f} | {ov.get('communication_ms') or 0:.0f} | "
              f"{1e3 * ring(2, grad, bw):.0f} | {100 * eff[0]:.0f}% / {100 * eff[1]:.0f}% |")
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 3 or sys.argv[1] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help") else 2)
    sys.exit(main(sys.argv[1], sys.argv[2:]))
