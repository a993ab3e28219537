#!/usr/bin/env bash
# Keeps a measurement as data under results/ (tracked): the small files that compare.sh,
# sweep.sh, gpu_bench.sh, ci_times.sh or ab_binaries.sh wrote into OUT_DIR (report.json/.md/.csv,
# failed.tsv, dirs.txt, stages.tsv, profile.md, tests.txt, machine.txt, times.json, ab.json) and
# each run folder's config.json, env.json and summary.json, in the same folders; no checkpoints,
# metrics, traces or event files. Beside them machine.json (the CPU's model and instruction
# sets, cores and the GPU, from the runs' own env.json, else this machine's; the commit of the
# tree recording it, the date) and
# command.txt (COMMAND, how the measurement was made). The docs cite results/NAME.
# NAME: letters, digits, '.', '_' and '-' (e.g. zen4-2026-12-06-eager); a folder that exists
# is refused, and so is a recording that would take results/ past 3 MB: nothing is overwritten.
# RESULTS_DIR (default: the repository's results/) is where it records. Where OUT_DIR holds no
# report.json, `bench report --json` (BENCH, default ./build/bench) over it makes one.
# Usage: scripts/record_results.sh OUT_DIR NAME "COMMAND"
# Example: scripts/record_results.sh runs/cmp zen4-2026-12-06-compare "scripts/compare.sh runs/cmp --num_layer 8 --batch_size 8"
source "$(dirname "$0")/usage.sh"
tb_start "$0" "NAME \"COMMAND\"" "$@"
[ $# -eq 3 ] || { echo "usage: $0 OUT_DIR NAME \"COMMAND\"" >&2; exit 2; }
name=$2 command=$3
[[ "$name" =~ ^[A-Za-z0-9._-]+$ && "$name" != .* ]] ||
  { echo "record_results.sh: NAME: '$name' is not allowed; use letters, digits, '.', '_' and '-'" >&2
    exit 2; }
[ -d "$out" ] || { echo "record_results.sh: OUT_DIR: '$out' is not a folder" >&2; exit 2; }
results=${RESULTS_DIR:-results}
dest="$results/$name"
[ ! -e "$dest" ] ||
  { echo "record_results.sh: $dest exists; nothing is overwritten: choose another NAME" >&2; exit 2; }
mkdir -p "$results"
tmp=$(mktemp -d "$results/.$name.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# The small files, at their paths under OUT_DIR.
(cd "$out" && find . -type f \( -name config.json -o -name env.json -o -name summary.json \
   -o -name 'report.*' -o -name failed.tsv -o -name dirs.txt -o -name stages.tsv \
   -o -name profile.md -o -name tests.txt -o -name machine.txt -o -name times.json -o -name ab.json \) -print0) |
  while IFS= read -r -d '' f; do
    mkdir -p "$tmp/$(dirname "$f")"
    cp "$out/$f" "$tmp/$f"
  done
runs=$(find "$tmp" -name summary.json -print -quit)
[ -n "$runs" ] || [ -f "$tmp/times.json" ] ||
  { echo "record_results.sh: '$out' holds no run folder (no summary.json) and no times.json: nothing recorded" >&2
    exit 2; }
printf '%s\n' "$command" > "$tmp/command.txt"
# A folder of runs without a report of its own (a single run, a sweep's subfolder) gets one, so
# that every measurement has the report.json the docs' tables are generated from.
[ -f "$tmp/report.json" ] || [ -z "$runs" ] || "${BENCH:-./build/bench}" report --json "$out" > "$tmp/report.json"
python3 - "$tmp" <<'EOF'
# The machine the runs ran on, from their own env.json (bench's: "cpu" and device_name; a GPU
# run's cuda_version), so that files made on another machine (the GPU call's) name it; this
# machine's /proc/cpuinfo where no run says.
import glob, json, os, subprocess, sys, time
root = sys.argv[1]
cpu, gpu = None, None
for f in sorted(glob.glob(os.path.join(root, "**", "env.json"), recursive=True)):
    try:
        env = json.load(open(f))
    except (OSError, ValueError):
        continue
    if cpu is None and isinstance(env.get("cpu"), dict):
        cpu = env["cpu"]
    if gpu is None and env.get("cuda_version") and env.get("device_name"):
        gpu = env["device_name"]
if cpu is None:
    info = {}
    for line in open("/proc/cpuinfo"):
        key, _, value = line.partition(":")
        if key.strip() not in info:
            info[key.strip()] = value.strip()
    cpu = {"vendor": info.get("vendor_id"), "family": info.get("cpu family"),
           "model": info.get("model"), "model_name": info.get("model name"),
           "isa": info.get("flags", "").split(), "online_cpus": os.cpu_count()}
commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout
json.dump({"schema_version": 1,
           "recorded_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "commit": commit.strip(), "cpu_model": cpu.get("model_name"),
           "cpu_vendor": cpu.get("vendor"), "cpu_family": cpu.get("family"),
           "cpu_model_number": cpu.get("model"), "cpu_flags": cpu.get("isa", []),
           "online_cpus": cpu.get("online_cpus"), "gpu": gpu},
          open(os.path.join(root, "machine.json"), "w"), indent=1)
EOF
kb=$(du -sk "$results" | cut -f1)
if [ "$kb" -gt 3072 ]; then
  echo "record_results.sh: results/ would hold ${kb} KB, over its 3 MB budget: nothing recorded" >&2
  exit 1
fi
mv "$tmp" "$dest"
trap - EXIT
echo "recorded $(find "$dest" -type f | wc -l) files ($(du -sh "$dest" | cut -f1)) in $dest"
