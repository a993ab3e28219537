#!/usr/bin/env python3
"""Where a build's compiler time went, read from Ninja's log (BUILD_DIR/.ninja_log).

Prints the total compiler seconds of the last build of each output (object files and
precompiled headers; links apart), then the N slowest translation units. Every figure of
docs/BENCHMARKS.md's build section comes from this script, so before/after compare alike.
Usage: scripts/build_times.py [BUILD_DIR] [--top N] [--json]
Example: python3 scripts/build_times.py build --top 15
"""
import argparse
import json
import os
import sys


def read_log(path):
    """{output: seconds} of the newest entry of each output (Ninja appends on every build)."""
    with open(path, encoding="utf-8") as f:
        header = f.readline()
        if not header.startswith("# ninja log v"):
            raise ValueError(f"{path}: not a Ninja log (first line {header.strip()!r})")
        newest = {}
        for line in f:
            fields = line.rstrip("\n").split("\t")
            if len(fields) < 5:
                continue
            start_ms, end_ms, _mtime, output = fields[0], fields[1], fields[2], fields[3]
            newest[output] = (int(end_ms) - int(start_ms)) / 1000.0
    return newest


def kind_of(output):
    """'compile' (objects, precompiled headers), 'link' (binaries, libraries) or 'other'."""
    if output.endswith((".o", ".obj", ".gch", ".pch")):
        return "compile"
    if output.endswith((".a", ".so")) or "." not in os.path.basename(output):
        return "link"
    return "other"


def source_of(output):
    """The translation unit an object came from, as CMake names objects (dir/x.cpp.o)."""
    name = output
    marker = ".dir/"
    if marker in name:
        name = name.split(marker, 1)[1]
    for suffix in (".o", ".obj"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
    return name


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build_dir", nargs="?", default="build")
    ap.add_argument("--top", type=int, default=15, help="how many translation units to list")
    ap.add_argument("--json", action="store_true", help="the figures as one JSON object")
    args = ap.parse_args()
    log = os.path.join(args.build_dir, ".ninja_log")
    if not os.path.isfile(log):
        print(f"build_times: no {log}: build with scripts/build.sh (Ninja) first", file=sys.stderr)
        return 2
    try:
        times = read_log(log)
    except ValueError as e:
        print(f"build_times: {e}", file=sys.stderr)
        return 2
    by_kind = {"compile": 0.0, "link": 0.0, "other": 0.0}
    for out, s in times.items():
        by_kind[kind_of(out)] += s
    units = sorted(((s, out) for out, s in times.items() if kind_of(out) == "compile"),
                   reverse=True)
    if args.json:
        print(json.dumps({"compile_s": round(by_kind["compile"], 1),
                          "link_s": round(by_kind["link"], 1),
                          "units": len(units),
                          "top": [{"unit": source_of(o), "s": s} for s, o in units[: args.top]]}))
        return 0
    print(f"compiler {by_kind['compile']:.0f} s in {len(units)} units, "
          f"links {by_kind['link']:.0f} s, other {by_kind['other']:.0f} s")
    for s, out in units[: args.top]:
        print(f"{s:7.1f} s  {source_of(out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
