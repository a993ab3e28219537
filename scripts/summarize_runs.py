#!/usr/bin/env python3
"""Prints a markdown table of run folders (config.json + summary.json), with each run's
speed as a ratio to the first run. Usage: summarize_runs.py RUN_DIR..."""
import json
import os
import sys


def load(run_dir):
    with open(os.path.join(run_dir, "config.json")) as f:
        config = json.load(f)
    with open(os.path.join(run_dir, "summary.json")) as f:
        summary = json.load(f)
    return config, summary


def fmt(value, spec, scale=1.0):
    return "-" if value is None else format(value * scale, spec)


def main(dirs):
    rows, base = [], None
    for d in dirs:
        try:
            config, s = load(d)
        except (OSError, ValueError) as e:
            print(f"warning: skipping {d}: {e}", file=sys.stderr)
            continue
        seq = s.get("sequences_per_s")
        if base is None and seq:
            base = seq
        st = s.get("step_time_ms", {})
        rows.append("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |".format(
            config["model"], config["dtype"], config["flash"], config.get("compile", 0),
            config["batch_size"],
            fmt(seq, ".2f"), fmt(s.get("tokens_per_s"), ".0f"),
            f"{fmt(st.get('median'), '.0f')} ({fmt(st.get('min'), '.0f')}-{fmt(st.get('max'), '.0f')})",
            fmt(s.get("mfu"), ".1f", 100), fmt(s.get("peak_memory_bytes"), ".0f", 2**-20),
            fmt(seq / base if seq and base else None, ".2f") + "x", s["status"]))
    print("| model | dtype | flash | compile | batch | seq/s | tokens/s | step ms (median, min-max) "
          "| MFU % | peak MB | vs first | status |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main(sys.argv[1:])
