#!/usr/bin/env python3
"""Loss curves and throughput of run folders as PNG files (matplotlib).
Usage: plot_runs.py [--bench BENCH] --out DIR RUN_DIR...
Writes DIR/loss_by_step.png, DIR/loss_by_time.png (train loss from step 0, the loss before any
update, then each logging window's mean (--log_every) at the window's middle, solid with dots, and
validation loss, dashed with circles, in bits per byte as the tables), DIR/valid_bpb.png (where
the runs evaluated: held-out bits per byte against training seconds, evaluations excluded, the
clock of time to target, and against tokens seen; the median over a configuration's runs (its
seeds) with their min-max band, each --target_bpb as a dotted line) and DIR/throughput.png
(tokens/s of completed runs, the value on each bar), each titled with the runs' shape and
machine, the legend beside the plot. It reads every folder `bench report` reads (a parent
folder is searched, a folder of repetitions stands for its rep-K folders) and labels each run
as the report does (configuration, dtype, and the shape where the runs differ in it). One
colour per configuration: repetitions are one median line with a min-max band, one bar with
its range; a bar is hatched and marked "unstable" where the noise check said so. Where the
folders carry every step's loss (step_losses), the loss-by-step curve has every step. Runs come
in the order a comparison reads (compare.sh's first table): by dtype, then framework (LibTorch,
bench, PyTorch, JAX), then the matrix's entry. Folders that cannot be read are named in a warning and
left out."""
import argparse
import json
import os
import re
import subprocess
import sys

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: E402
except ImportError:  # --help still answers; a plot says which Python to use
    plt = None

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def report_runs(bench, paths):
    """The runs `bench report --json` reads under `paths` (a parent folder is searched, a folder
    of repetitions stands for its rep-K folders), in its order: [{dir, configuration, dtype,
    status, tokens_per_s, unstable}, ...]; its warnings pass through."""
    r = subprocess.run([bench, "report", "--json", *paths], stdout=subprocess.PIPE, text=True)
    if r.returncode != 0:
        return []
    return json.loads(r.stdout)["runs"]


# The order a reader compares in, as compare.sh's first table: by dtype (as bench's --dtype
# lists them), then framework (LibTorch as shipped, bench's replacements, PyTorch, JAX: a
# configuration's first word),
# then the matrix's entry (a sweep folder's N_ prefix, numerically: 2_ before 10_).
DTYPE_ORDER = ("float32", "float16", "bfloat16")
FRAMEWORK_ORDER = ("libtorch", "bench", "pytorch", "jax")


def comparison_order(runs):
    """`runs` (bench report's) sorted for the plots; equal keys keep the report's order."""
    def rank(value, order):
        return order.index(value) if value in order else len(order)

    def entry(path):
        for part in reversed(os.path.normpath(path).split(os.sep)):
            m = re.match(r"(\d+)_", part)
            if m:
                return int(m.group(1))
        return 0

    return sorted(runs, key=lambda r: (rank(r["dtype"], DTYPE_ORDER),
                                       rank(r["configuration"].split(" ")[0], FRAMEWORK_ORDER),
                                       entry(r["dir"])))


def colours(n):
    """n distinct colours: tab10, tab20, then evenly spaced hues (no colour twice)."""
    if n <= 10:
        return [plt.get_cmap("tab10")(i) for i in range(n)]
    if n <= 20:
        return [plt.get_cmap("tab20")(i) for i in range(n)]
    return [plt.get_cmap("hsv")(i / n) for i in range(n)]


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def per_step(run_dir):
    """Every step's train loss [(step, loss)] from the windows' step_losses (bench and the
    peers write them), with step 0's loss before any update; [] for older folders."""
    points = []
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        for line in f:
            m = json.loads(line)
            if m.get("initial_loss") is not None:
                points.append((0, m["initial_loss"]))
            elif m.get("step_losses"):
                first = m["step"] - len(m["step_losses"]) + 1
                points.extend((first + i, v) for i, v in enumerate(m["step_losses"]))
    return points if len(points) > 1 else []


def ragged_band(curves):
    """Runs' curves that end at different points (a run stopped at its target) as one: per point
    index the median x, the median, min and max y of the runs that reached that point."""
    out = ([], [], [], [])
    for i in range(max(len(c) for c in curves)):
        here = [c[i] for c in curves if len(c) > i]
        ys = [y for _, y in here]
        for col, v in zip(out, (median([x for x, _ in here]), median(ys), min(ys), max(ys))):
            col.append(v)
    return out


def band(curves):
    """Repetitions' curves [[(x, y)...]...] as one: per point index the median x, the median,
    min and max y (cut to the shortest curve)."""
    n = min(len(c) for c in curves)
    xs = [median([c[i][0] for c in curves]) for i in range(n)]
    ys = [[c[i][1] for c in curves] for i in range(n)]
    return xs, [median(y) for y in ys], [min(y) for y in ys], [max(y) for y in ys]


LN2 = 0.6931471805599453


def context(dirs):
    """'2 layers, d_model 128, seq_len 128, batch 16 on Intel Xeon' from the runs' config.json
    and env.json (each part only where the runs agree)."""
    shapes, machines = set(), set()
    for d in dirs:
        try:
            with open(os.path.join(d, "config.json")) as f:
                c = json.load(f)
            shapes.add(f"{c.get('num_layer')} layers, d_model {c.get('d_model')}, "
                       f"seq_len {c.get('seq_len')}, batch {c.get('batch_size')}")
            with open(os.path.join(d, "env.json")) as f:
                machines.add(json.load(f).get("device_name", "?"))
        except (OSError, ValueError):
            pass
    shape = shapes.pop() if len(shapes) == 1 else "shapes differ"
    machine = machines.pop() if len(machines) == 1 else "several machines"
    return f"{shape} on {machine}"


def read_run(run_dir):
    """summary.json, the train points (step, seconds, loss) and the validation points. A
    window's mean loss stands at the window's middle (step and time), where a mean of a falling
    curve belongs, not at its last step; step 0 is the loss before any update."""
    with open(os.path.join(run_dir, "summary.json")) as f:
        summary = json.load(f)
    with open(os.path.join(run_dir, "config.json")) as f:
        config = json.load(f)
    global_batch = config.get("batch_size", 1) * config.get("world_size", 1)
    train, valid = [], []
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        for line in f:
            m = json.loads(line)
            if m.get("initial_loss") is not None:
                train.append((0, 0.0, m["initial_loss"]))
            elif m.get("loss") is not None:
                n, seq_s, t = m.get("window_steps"), m.get("sequences_per_s"), m.get("elapsed_s")
                step = m["step"] - n / 2 if n else m["step"]
                if n and seq_s and t is not None:
                    t -= n * global_batch / seq_s / 2
                train.append((step, t, m["loss"]))
            elif m.get("valid_loss") is not None:
                valid.append((m["step"], m["valid_loss"], m.get("train_s"),
                              m["step"] * global_batch * config.get("seq_len", 0)))
    return summary, train, valid


def valid_plot(groups, colour, where, path):
    """Held-out bits per byte against training seconds (left; runs whose metrics carry train_s)
    and against tokens (right): a configuration's median over its runs with the min-max band,
    each run's target as a dotted line. False (nothing written) where no run evaluated."""
    if not any(rep[2] for reps in groups.values() for rep in reps):
        return False
    fig, axes = plt.subplots(1, 2, figsize=(13, 5), sharey=True)
    targets = sorted({rep[0]["target_bpb"] for reps in groups.values() for rep in reps
                      if isinstance(rep[0].get("target_bpb"), (int, float))})
    for ax, x_of, xlabel in ((axes[0], 2, "training seconds (evaluations excluded)"),
                             (axes[1], 3, "tokens")):
        for label, reps in groups.items():
            curves = [[(v[x_of], v[1] / LN2) for v in rep[2] if v[x_of] is not None]
                      for rep in reps]
            curves = [c for c in curves if c]
            if not curves:
                continue
            xs, mid, lo, hi = ragged_band(curves)
            n = f" (median of {len(curves)}, band min-max)" if len(curves) > 1 else ""
            ax.plot(xs, mid, "o-", markersize=3, linewidth=1, color=colour[label],
                    label=label + n)
            if len(curves) > 1:
                ax.fill_between(xs, lo, hi, color=colour[label], alpha=0.2, linewidth=0)
        for t in targets:
            ax.axhline(t, color="black", linestyle=":", linewidth=1,
                       label=f"target {t:g} bits/byte" if ax is axes[1] else None)
        ax.set_xlabel(xlabel)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("held-out bits per byte")
    fig.suptitle(f"Validation by training time and by tokens: {where}", fontsize=9)
    axes[1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.savefig(path, dpi=100, bbox_inches="tight")
    plt.close(fig)
    return True


def main():
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bench", default=os.environ.get("BENCH", os.path.join(ROOT, "build/bench")),
                   help="the bench binary whose report names the runs (default: build/bench)")
    p.add_argument("--out", required=True, help="folder for the PNG files")
    p.add_argument("runs", nargs="+", help="run folders, or folders to search for them (as "
                   "bench report)")
    a = p.parse_args()
    if plt is None:
        print(f"plot_runs.py: {sys.executable} has no matplotlib; run it with .venv/bin/python "
              "(scripts/install_deps.sh installs it)", file=sys.stderr)
        return 2
    if not os.access(a.bench, os.X_OK):
        print(f"plot_runs: error: --bench: '{a.bench}' is not an executable; build first "
              "(scripts/build.sh) or give --bench", file=sys.stderr)
        return 2
    found = report_runs(a.bench, a.runs)
    for d in a.runs:
        inside = os.path.normpath(d) + os.sep
        if not any(r["dir"] == d or os.path.normpath(r["dir"]).startswith(inside) for r in found):
            print(f"plot_runs: warning: skipping {d} (bench report could not read it)",
                  file=sys.stderr)
    groups = {}  # label -> [(summary, train, valid, steps, report row)], in comparison order
    for r in comparison_order(found):
        label = f"{r['configuration']} {r['dtype']}"
        try:
            groups.setdefault(label, []).append(read_run(r["dir"]) + (per_step(r["dir"]), r))
        except (OSError, ValueError, KeyError) as e:
            print(f"plot_runs: warning: skipping {r['dir']}: {e}", file=sys.stderr)
    groups = {k: v for k, v in groups.items() if v}
    if not groups:
        print("plot_runs: error: no readable run folder", file=sys.stderr)
        return 2
    os.makedirs(a.out, exist_ok=True)
    where = context([r["dir"] for r in found])
    colour = dict(zip(groups, colours(len(groups))))
    for by_time, name in ((False, "loss_by_step.png"), (True, "loss_by_time.png")):
        fig, ax = plt.subplots(figsize=(9, 5))
        for label, reps in groups.items():
            c = colour[label]
            n = f" (median of {len(reps)}, band min-max)" if len(reps) > 1 else ""
            # Every step's loss where the folders carry it (by step), else the windows.
            use_steps = not by_time and all(rep[3] for rep in reps)
            curves = ([[(s, l / LN2) for s, l in rep[3]] for rep in reps] if use_steps else
                      [[(t if by_time else s, l / LN2) for s, t, l in rep[1]] for rep in reps])
            xs, mid, lo, hi = band(curves)
            ax.plot(xs, mid, "-" if use_steps else ".-", markersize=3, color=c, linewidth=1,
                    label=label + n)
            if len(reps) > 1:
                ax.fill_between(xs, lo, hi, color=c, alpha=0.2, linewidth=0)
            valid = [rep[2] for rep in reps if rep[2]]
            if valid and not by_time:
                vx, vmid, _, _ = band([[(v[0], v[1] / LN2) for v in vs] for vs in valid])
                ax.plot(vx, vmid, "o--", color=c, markersize=4)
        ax.set_xlabel("wall time (s)" if by_time else "step")
        ax.set_ylabel("loss (bits per byte)")
        ax.set_title(f"Loss by {'wall time' if by_time else 'step'}: {where}"
                     + ("" if by_time else "; dashed with circles: validation"), fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        fig.savefig(os.path.join(a.out, name), dpi=100, bbox_inches="tight")
        plt.close(fig)
    drawn_valid = valid_plot(groups, colour, where, os.path.join(a.out, "valid_bpb.png"))
    # tokens/s compares runs of different sequence lengths, where sequences/s would not. One
    # bar per configuration: the median of its completed repetitions, their range as the error
    # bar; hatched and marked where a repetition was unstable (the noise check).
    bars = []
    for label, reps in groups.items():
        tok = [rep[4]["tokens_per_s"] for rep in reps
               if rep[4]["status"] == "completed" and rep[4].get("tokens_per_s")]
        if tok:
            unstable = any(rep[4].get("unstable") for rep in reps)
            bars.append((label + (f" (n={len(tok)})" if len(tok) > 1 else ""), median(tok),
                         min(tok), max(tok), unstable, colour[label]))
    fig, ax = plt.subplots(figsize=(9, 0.9 + 0.4 * max(len(bars), 1)))
    drawn = ax.barh([b[0] for b in bars], [b[1] for b in bars], color=[b[5] for b in bars],
                    hatch=None, xerr=[[b[1] - b[2] for b in bars], [b[3] - b[1] for b in bars]],
                    capsize=3)
    for patch, b in zip(drawn, bars):
        if b[4]:
            patch.set_hatch("//")
    ax.bar_label(drawn, labels=[f"{b[1]:,.0f}" + (" unstable" if b[4] else "") for b in bars],
                 padding=3, fontsize=8)
    ax.set_xlabel("tokens/s (median step; bars: median of repetitions, lines: their range)")
    ax.set_title(f"Throughput: {where}", fontsize=9)
    ax.margins(x=0.2)
    ax.invert_yaxis()
    fig.savefig(os.path.join(a.out, "throughput.png"), dpi=100, bbox_inches="tight")
    plt.close(fig)
    print(f"plots: {a.out}/loss_by_step.png loss_by_time.png"
          + (" valid_bpb.png" if drawn_valid else "") + " throughput.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
