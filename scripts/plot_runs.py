#!/usr/bin/env python3
"""Loss curves and throughput of run folders as PNG files (matplotlib).
Usage: plot_runs.py [--bench BENCH] --out DIR RUN_DIR...
Writes DIR/loss_by_step.png, DIR/loss_by_time.png (train loss from step 0, the loss before any
update, then each logging window's mean (--log_every) at the window's middle, solid with dots, and
validation loss, dashed with circles, in bits per byte as the tables) and DIR/throughput.png
(tokens/s of completed runs, the value on each bar), each titled with the runs' shape and
machine, the legend beside the plot. Each run is labelled as
`bench report` labels it (configuration, dtype, and the shape where the runs differ in it), so
the plots and the tables name runs alike. Folders that cannot be read are named in a warning
and left out."""
import argparse
import json
import os
import subprocess
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def report_labels(bench, dirs):
    """{run folder: label} from `bench report --json` (its warnings pass through)."""
    r = subprocess.run([bench, "report", "--json", *dirs], stdout=subprocess.PIPE, text=True)
    if r.returncode != 0:
        return {}
    return {run["dir"]: f"{run['configuration']} {run['dtype']}"
            for run in json.loads(r.stdout)["runs"]}


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
                valid.append((m["step"], m["valid_loss"]))
    return summary, train, valid


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bench", default=os.environ.get("BENCH", os.path.join(ROOT, "build/bench")),
                   help="the bench binary whose report names the runs (default: build/bench)")
    p.add_argument("--out", required=True, help="folder for the PNG files")
    p.add_argument("runs", nargs="+", help="run folders")
    a = p.parse_args()
    if not os.access(a.bench, os.X_OK):
        print(f"plot_runs: error: --bench: '{a.bench}' is not an executable; build first "
              "(scripts/build.sh) or give --bench", file=sys.stderr)
        return 2
    labels_by_dir = report_labels(a.bench, a.runs)
    runs = []
    for d in a.runs:
        if d not in labels_by_dir:
            print(f"plot_runs: warning: skipping {d} (bench report could not read it)",
                  file=sys.stderr)
            continue
        try:
            runs.append((labels_by_dir[d],) + read_run(d) + (d,))
        except (OSError, ValueError, KeyError) as e:
            print(f"plot_runs: warning: skipping {d}: {e}", file=sys.stderr)
    if not runs:
        print("plot_runs: error: no readable run folder", file=sys.stderr)
        return 2
    labels = [r[0] for r in runs]
    # Same configuration twice: tell the curves apart by folder name.
    runs = [(f"{r[0]} ({os.path.basename(os.path.normpath(r[4]))})" if labels.count(r[0]) > 1
             else r[0],) + r[1:4] for r in runs]
    os.makedirs(a.out, exist_ok=True)
    where = context([r for r in a.runs if r in labels_by_dir])
    for by_time, name in ((False, "loss_by_step.png"), (True, "loss_by_time.png")):
        fig, ax = plt.subplots(figsize=(9, 5))
        for label, _, train, valid in runs:
            xs = [t if by_time else s for s, t, _ in train]
            line, = ax.plot(xs, [l / LN2 for _, _, l in train], ".-", markersize=3,
                            label=f"{label} train")
            if valid and not by_time:
                ax.plot([s for s, _ in valid], [v / LN2 for _, v in valid], "o--",
                        color=line.get_color(), label=f"{label} valid")
        ax.set_xlabel("wall time (s)" if by_time else "step")
        ax.set_ylabel("loss (bits per byte)")
        ax.set_title(f"Loss by {'wall time' if by_time else 'step'}: {where}", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        fig.savefig(os.path.join(a.out, name), dpi=100, bbox_inches="tight")
        plt.close(fig)
    # tokens/s compares runs of different sequence lengths, where sequences/s would not.
    done = [(label, s["tokens_per_s"]) for label, s, _, _ in runs
            if s.get("status") == "completed" and s.get("tokens_per_s")]
    fig, ax = plt.subplots(figsize=(9, 0.9 + 0.4 * max(len(done), 1)))
    bars = ax.barh([l for l, _ in done], [v for _, v in done])
    ax.bar_label(bars, labels=[f"{v:,.0f}" for _, v in done], padding=3, fontsize=8)
    ax.set_xlabel("tokens/s (median step)")
    ax.set_title(f"Throughput: {where}", fontsize=9)
    ax.margins(x=0.15)
    ax.invert_yaxis()
    fig.savefig(os.path.join(a.out, "throughput.png"), dpi=100, bbox_inches="tight")
    plt.close(fig)
    print(f"plots: {a.out}/loss_by_step.png loss_by_time.png throughput.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
