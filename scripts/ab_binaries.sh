#!/usr/bin/env bash
# Two bench binaries on the same runs (a change that should alter nothing measured: a refactor,
# a build option): REPEAT rounds (default 3), old then new in odd rounds and new then old in even
# ones, so that a drift of the machine spreads over both; every run with the given bench flags
# (same seed) into OUT_DIR/old_K and OUT_DIR/new_K. Then: whether each round's two runs logged
# the same losses (every step's and the evaluations', metrics.jsonl), the median seq/s of each
# side with its range and new over old; OUT_DIR/ab.json holds the figures and the two binaries'
# revisions (build_revision, build_source_hash of their env.json), OUT_DIR/command.txt the
# command line (REPEAT with it; scripts/record_results.sh OUT_DIR NAME - keeps it). Exit status
# 1 when any round's losses differ, 2 on bad input.
# Usage: scripts/ab_binaries.sh OUT_DIR OLD_BENCH NEW_BENCH [bench flags...]
# Example: REPEAT=3 scripts/ab_binaries.sh runs/ab /tmp/bench_old ./build/bench --preset quick --steps 40 --compile fused --dtype bfloat16
source "$(dirname "$0")/usage.sh"
tb_start "$0" "OLD_BENCH NEW_BENCH [bench flags...]" "$@"
command_line=$(tb_command_line "REPEAT" "$@")
shift  # OUT_DIR, now $out
[ $# -ge 2 ] || { echo "usage: $0 OUT_DIR OLD_BENCH NEW_BENCH [bench flags...]" >&2; exit 2; }
old=$(tb_out_dir "$1") new=$(tb_out_dir "$2")
shift 2
for b in "$old" "$new"; do
  [ -x "$b" ] || { echo "ab_binaries.sh: '$b' is not an executable bench" >&2; exit 2; }
done
repeat=${REPEAT:-3}
[[ "$repeat" =~ ^[1-9][0-9]*$ ]] ||
  { echo "ab_binaries.sh: REPEAT: '$repeat' is not allowed; use a whole number from 1" >&2; exit 2; }
mkdir -p "$out"
printf '%s\n' "$command_line" > "$out/command.txt"
for k in $(seq 1 "$repeat"); do
  order="old new"
  [ $((k % 2)) -eq 0 ] && order="new old"
  for side in $order; do
    bin=$old
    [ "$side" = new ] && bin=$new
    echo "== round $k: $side" >&2
    "$bin" "$@" --save_dir "$out/${side}_$k" --overwrite 1 >"$out/${side}_$k.log" 2>&1 ||
      { echo "ab_binaries.sh: the $side binary failed in round $k: $(tail -n 1 "$out/${side}_$k.log")" >&2
        exit 1; }
  done
done
python3 - "$out" "$repeat" <<'EOF'
# Each side's run folder of round K is the one folder under OUT_DIR/{side}_K* (bench appends
# the model, depth and dtype to --save_dir).
import glob, json, os, sys
out, repeat = sys.argv[1], int(sys.argv[2])
def run(side, k):
    d = sorted(glob.glob(os.path.join(out, f"{side}_{k}_*")))[0]
    rows = [json.loads(l) for l in open(os.path.join(d, "metrics.jsonl"))]
    losses = [(r.get("step"), r.get("step_losses"), r.get("valid_bpb")) for r in rows]
    return losses, json.load(open(os.path.join(d, "summary.json")))["sequences_per_s"]
def median(xs):
    xs = sorted(xs)
    return (xs[(len(xs) - 1) // 2] + xs[len(xs) // 2]) / 2
same, speed = True, {"old": [], "new": []}
for k in range(1, repeat + 1):
    (lo, so), (ln, sn) = run("old", k), run("new", k)
    same &= lo == ln
    speed["old"].append(so)
    speed["new"].append(sn)
mo, mn = median(speed["old"]), median(speed["new"])
result = {"rounds": repeat, "losses_identical": same, "seq_per_s": speed,
          "median_old": mo, "median_new": mn, "new_over_old": mn / mo}
# The two revisions (what each binary says it was built from, its first round's env.json), so
# that record_results.sh keeps the folder's two binaries as this A/B's.
for side in ("old", "new"):
    try:
        env = json.load(open(os.path.join(sorted(glob.glob(os.path.join(out, f"{side}_1_*")))[0],
                                          "env.json")))
    except (OSError, ValueError, IndexError):
        env = {}
    result[f"{side}_build_revision"] = env.get("build_revision") or env.get("git_revision")
    result[f"{side}_build_source_hash"] = env.get("build_source_hash")
json.dump(result, open(os.path.join(out, "ab.json"), "w"), indent=1)
print(f"losses: {'identical in every round' if same else 'DIFFERENT'}")
print(f"seq/s median (min-max) over {repeat} rounds: old {mo:.2f} ({min(speed['old']):.2f}-"
      f"{max(speed['old']):.2f}), new {mn:.2f} ({min(speed['new']):.2f}-{max(speed['new']):.2f});"
      f" new / old {mn / mo:.3f}x")
sys.exit(0 if same else 1)
EOF
