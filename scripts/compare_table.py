#!/usr/bin/env python3
"""The comparison table a person reads, from `bench report --json` on stdin: one row per
configuration (framework, model, path) and dtype, in the order of the runs given to the report
(compare.sh gives the matrix's order), with seq/s (median of the completed repetitions and
their range), tokens/s, the ratio to LibTorch eager of the same dtype (`libtorch handcraft`),
MFU, and status. A configuration that failed (--failed: sweep.sh's or compare.sh's failed.tsv,
its flags and the failure's one line, tab-separated) is a row of its own, status
"failed: <line>", under the others. The wide table with every column stays in report.md.
Usage: bench report --json RUN_DIR... | compare_table.py [--baseline LABEL] [--failed TSV]
Example: build/bench report --json runs/cmp/bench/1_* | scripts/compare_table.py"""
import argparse
import json
import re
import sys


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def fmt(v, digits=1):
    return "-" if v is None else f"{v:,.{digits}f}"


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--baseline", default="libtorch handcraft",
                   help="the configuration each dtype's ratios divide by (default: LibTorch eager)")
    p.add_argument("--failed", metavar="TSV",
                   help="failed configurations: flags TAB one line, a row each (compare.sh's)")
    a = p.parse_args()
    report = json.load(sys.stdin)
    rows = {}  # (configuration, dtype) -> runs, in first-seen order
    for r in report["runs"]:
        rows.setdefault((r["configuration"], r["dtype"]), []).append(r)
    speed = {}
    for key, runs in rows.items():
        done = [r for r in runs if r["status"] == "completed" and r["sequences_per_s"]]
        speed[key] = median([r["sequences_per_s"] for r in done]) if done else None
    out = ["| configuration | dtype | seq/s (median, range) | tokens/s | vs " + a.baseline +
           " | MFU % | status |", "|---|---|---|---|---|---|---|"]
    for (label, dtype), runs in rows.items():
        done = [r for r in runs if r["status"] == "completed" and r["sequences_per_s"]]
        seq = [r["sequences_per_s"] for r in done]
        cell = "-"
        if seq:
            cell = fmt(median(seq), 2)
            if len(seq) > 1:
                cell += f" (n={len(seq)}, {fmt(min(seq), 2)}-{fmt(max(seq), 2)})"
        tok = median([r["tokens_per_s"] for r in done if r["tokens_per_s"]]) if done else None
        mfu = [r["mfu_percent"] for r in done if r["mfu_percent"] is not None]
        base = speed.get((a.baseline, dtype))
        ratio = f"{speed[(label, dtype)] / base:.2f}x" if base and speed[(label, dtype)] else "-"
        statuses = sorted({r["status"] for r in runs})
        status = ", ".join(statuses) + (" (unstable)" if any(r.get("unstable") for r in done)
                                        else "")
        out.append(f"| {label} | {dtype} | {cell} | {fmt(tok, 0)} | {ratio} | "
                   f"{fmt(median(mfu)) if mfu else '-'} | {status} |")
    for line in open(a.failed).read().splitlines() if a.failed else []:
        label, _, why = line.partition("\t")
        why = re.sub(r"^bench: (rank \d+: )?(failed|error): ", "", why)
        m = re.search(r"dtype[= ]([a-z0-9]+)", label)
        out.append(f"| {label} | {m.group(1) if m else '-'} | - | - | - | - | failed: "
                   f"{why.replace('|', '/')} |")
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
