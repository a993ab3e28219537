#!/usr/bin/env python3
"""scaling.sh's table and plot: the run folders under OUT_DIR (bench's through sweep.sh, the
peer's beside them) grouped by configuration (bench report's label, the shape left out) and by
the value of DIM. scaling.md: the median step time, tokens/s and MFU of each point; each
configuration's growth exponent (the least-squares slope of log step time over log DIM) against
the ideal one (1 in num_layer and batch_size, 1 to 2 in seq_len: the attention's quadratic
term, -1 in threads, with the efficiency t(1) / (n t(n))); where flash overtakes naive attention
(the smallest value from which a configuration with flash steps faster than the same one
without, at every larger value); the points that failed, with their one line (failed.tsv).
scaling.png: step time and tokens/s against DIM on log-log axes, the ideal slope dashed.
Usage: scaling_table.py --dim DIM [--out DIR] [--bench BENCH] RUN_DIR...
Example: .venv/bin/python scripts/scaling_table.py --dim seq_len --out runs/scale runs/scale"""
import argparse
import json
import math
import os
import re
import subprocess
import sys

IDEAL = {"num_layer": (1, 1), "batch_size": (1, 1), "seq_len": (1, 2), "threads": (-1, -1)}


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def slope(points):
    """Least-squares slope of log(y) over log(x)."""
    xs = [math.log(x) for x, _ in points]
    ys = [math.log(y) for _, y in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den if den else float("nan")


def read_points(dirs, dim, bench):
    """{label: {value: [(step_ms, tokens_per_s, mfu)]}} of the completed runs, in first-seen
    order."""
    report = json.loads(subprocess.run([bench, "report", "--json", *dirs], capture_output=True,
                                       text=True, check=True).stdout)
    points = {}
    for r in report["runs"]:
        if r["status"] != "completed":
            continue
        with open(os.path.join(r["dir"], "config.json")) as f:
            value = json.load(f)[dim]
        with open(os.path.join(r["dir"], "summary.json")) as f:
            s = json.load(f)
        label = re.sub(r" \[[^]]*\]$", "", r["configuration"])
        points.setdefault(label, {}).setdefault(value, []).append(
            (s["step_time_ms"]["median"], s["tokens_per_s"], s.get("mfu")))
    return points


def crossover(points, values):
    """For each configuration with a flash twin: the smallest value from which the flash one's
    median step is faster at it and every larger value, or None."""
    out = {}
    for label in points:
        twin = label.replace(" flash", "", 1)
        if twin == label or twin not in points:
            continue
        ahead = None
        for v in values:
            a, b = points[label].get(v), points[twin].get(v)
            faster = bool(a and b) and median([p[0] for p in a]) < median([p[0] for p in b])
            ahead = (ahead or v) if faster else None
        out[label] = (twin, ahead)
    return out


def table(points, values, dim, failed):
    lo, hi = IDEAL[dim]
    ideal = f"{lo}" if lo == hi else f"{lo} to {hi}"
    cols = " | ".join(f"{dim} {v}" for v in values)
    lines = [f"Step time ms, median (tokens/s; MFU %) at each {dim}; growth: the slope of log step "
             f"time over log {dim}, ideal {ideal}" +
             ("; efficiency: t(1) / (n t(n))" if dim == "threads" else ""), "",
             f"| configuration | {cols} | growth |" + (" efficiency at the most |"
                                                      if dim == "threads" else ""),
             "|---|" + "---|" * (len(values) + 1 + (dim == "threads"))]
    for label, by in points.items():
        cells, pts = [], []
        for v in values:
            ps = by.get(v)
            if not ps:
                cells.append("-")
                continue
            t, tok = median([p[0] for p in ps]), median([p[1] for p in ps])
            mfu = [p[2] for p in ps if p[2] is not None]
            cells.append(f"{t:,.1f} ({tok:,.0f}; {median(mfu) * 100:.0f}%)" if mfu
                         else f"{t:,.1f} ({tok:,.0f})")
            pts.append((v, t))
        growth = f"{slope(pts):.2f}" if len(pts) >= 2 else "-"
        row = f"| {label} | {' | '.join(cells)} | {growth} |"
        if dim == "threads":
            t = dict(pts)
            n = max(t) if t else None
            row += (f" {t[1] / (n * t[n]) * 100:.0f}% at {n} |" if n and 1 in t and n > 1
                    else " - |")
        lines.append(row)
    for label, (twin, ahead) in crossover(points, values).items():
        lines.append("")
        lines.append(f"{label} against {twin}: " +
                     (f"flash steps faster from {dim} {ahead} on" if ahead else
                      f"flash never steps faster at the largest {dim} measured ({values[-1]})"))
    if failed:
        lines += ["", "Points that did not run:", ""] + [f"- {f}" for f in failed]
    return "\n".join(lines) + "\n"


def plot(points, values, dim, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("scaling_table.py: no matplotlib here; scaling.png not drawn", file=sys.stderr)
        return
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2))
    for label, by in points.items():
        vs = [v for v in values if v in by]
        a.plot(vs, [median([p[0] for p in by[v]]) for v in vs], marker="o", label=label)
        b.plot(vs, [median([p[1] for p in by[v]]) for v in vs], marker="o", label=label)
    first = next(iter(points.values()), {})
    v0 = next((v for v in values if v in first), None)
    if v0 is not None:
        t0 = median([p[0] for p in first[v0]])
        for k in sorted(set(IDEAL[dim])):
            a.plot(values, [t0 * (v / v0) ** k for v in values], "k--", lw=0.8,
                   label=f"ideal slope {k}")
    for ax, what in ((a, "step time, ms"), (b, "tokens/s")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(dim)
        ax.set_ylabel(what)
        ax.grid(True, which="both", alpha=0.3)
    a.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--dim", required=True, choices=sorted(IDEAL))
    p.add_argument("--out", help="folder for scaling.md and scaling.png (default: print)")
    p.add_argument("--bench", default=os.environ.get("BENCH", "./build/bench"))
    p.add_argument("dirs", nargs="+")
    a = p.parse_args()
    points = read_points(a.dirs, a.dim, a.bench)
    values = sorted({v for by in points.values() for v in by})
    failed = []
    for d in a.dirs:
        f = os.path.join(d, "bench", "failed.tsv")
        if os.path.exists(f):
            failed += [line.replace("\t", ": ") for line in open(f).read().splitlines()]
    if not points:
        print("scaling_table.py: no completed run under " + " ".join(a.dirs), file=sys.stderr)
        print("\n".join(failed), file=sys.stderr)
        return 1
    text = table(points, values, a.dim, failed)
    print(text, end="")
    if a.out:
        with open(os.path.join(a.out, "scaling.md"), "w") as f:
            f.write(text)
        plot(points, values, a.dim, os.path.join(a.out, "scaling.png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
