#!/usr/bin/env bash
# The README's two commands timed on fresh clones of the committed tree (HEAD): the first
# (bash scripts/quickstart.sh) in OUT_DIR/first, the second (CI=true bash .ci/run, what CI runs)
# in OUT_DIR/second, one after the other, each with its own .venv from pip's cache (the clones
# are removed after). Writes OUT_DIR/times.json (each command's wall seconds and the scripts' own install/build/run or
# tests lines, the suite's counts, build warnings, compiler seconds from scripts/build_times.py)
# the two logs and command.txt (this command line, FIRST with it where set); exit status: the
# second command's. Keep it with
#   scripts/record_results.sh OUT_DIR NAME -
# and the docs' build and test times table is generated from it (scripts/results_tables.py).
# FIRST=0 skips the first command. OUT_DIR must not exist.
# Usage: scripts/ci_times.sh OUT_DIR
# Example: scripts/ci_times.sh /tmp/ci-times && scripts/record_results.sh /tmp/ci-times zen4-2026-12-06-ci -
source "$(dirname "$0")/usage.sh"
tb_start "$0" "" "$@"
command_line=$(tb_command_line "FIRST" "$@")
[ ! -e "$out" ] || { echo "ci_times.sh: OUT_DIR: '$out' exists; nothing is overwritten" >&2; exit 2; }
[ -z "$(git status --porcelain --untracked-files=no)" ] ||
  echo "ci_times.sh: the work tree has uncommitted changes; the clones time HEAD ($(git rev-parse --short HEAD)) without them" >&2
mkdir -p "$out"
repo=$PWD
printf '%s\n' "$command_line" > "$out/command.txt"
timed() { # DIR LOG COMMAND...: wall seconds of COMMAND run in a fresh clone at DIR
  local dir=$1 log=$2 t0 status=0
  shift 2
  git clone -q "$repo" "$dir"
  t0=$SECONDS
  (cd "$dir" && "$@") > "$log" 2>&1 || status=$?
  echo "$((SECONDS - t0)) $status"
}
first=""
if [ "${FIRST:-1}" != 0 ]; then
  echo "ci_times.sh: the first command in $out/first (about 4 min)" >&2
  first=$(timed "$out/first" "$out/first.log" bash scripts/quickstart.sh)
  rm -rf "$out/first"
fi
echo "ci_times.sh: the second command in $out/second (about 14 min)" >&2
second=$(timed "$out/second" "$out/second.log" env CI=true bash .ci/run)
python3 scripts/build_times.py "$out/second/build" --json > "$out/build_times.json" || true
rm -rf "$out/second"
python3 - "$out" "$(git rev-parse HEAD)" "$first" "$second" <<'EOF'
# The scripts' own lines ("quickstart: install 88 s, build 124 s, run 27 s", "test.sh: ...")
# and CTest's ("100% tests passed, 0 tests failed out of 324", "The following tests did not
# run:") as numbers.
import json, os, re, sys
out, commit, first, second = sys.argv[1:5]

def parts(log, prefix):
    text = open(os.path.join(out, log), errors="replace").read()
    m = re.findall(prefix + r": (install \d+ s.*)", text)
    got = {}
    for k, v in re.findall(r"(\w+) (\d+) s", m[-1]) if m else []:
        got[k + "_s"] = int(v)
    return text, got

record = {"schema_version": 1, "commit": commit}
if first:
    wall, status = map(int, first.split())
    text, got = parts("first.log", "quickstart")
    record["first"] = {"command": "bash scripts/quickstart.sh", "wall_s": wall,
                       "exit_status": status, **got}
wall, status = map(int, second.split())
text, got = parts("second.log", "test.sh")
tests = re.findall(r"(\d+)% tests passed, (\d+) tests failed out of (\d+)", text)
skipped = re.findall(r"^\s*\d+ - \S+ \(Skipped\)", text, re.M)
record["second"] = {"command": "CI=true bash .ci/run", "wall_s": wall, "exit_status": status,
                    **got, "tests": int(tests[-1][2]) if tests else None,
                    "failed": int(tests[-1][1]) if tests else None, "skipped": len(skipped),
                    "build_warnings": len(re.findall(r": warning:", text))}
try:
    bt = json.load(open(os.path.join(out, "build_times.json")))
    record["second"].update(compiler_s=bt["compile_s"], units=bt["units"])
except (OSError, ValueError, KeyError):
    pass
json.dump(record, open(os.path.join(out, "times.json"), "w"), indent=1)
print(json.dumps(record))
EOF
exit "${second#* }"
