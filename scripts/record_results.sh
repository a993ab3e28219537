#!/usr/bin/env bash
# Keeps a measurement as data under results/ (tracked): the small files that compare.sh,
# sweep.sh, gpu_bench.sh, ci_times.sh or ab_binaries.sh wrote into OUT_DIR (report.json/.md/.csv,
# failed.tsv, dirs.txt, stages.tsv, profile.md, tests.txt, machine.txt, times.json, ab.json,
# scaling.md/.png, valid_bpb.png) and each run folder's config.json, env.json and summary.json,
# in the same folders (and metrics.jsonl of a run with --target_bpb: its validation curve); no
# checkpoints, traces or event files. Beside them machine.json (the machine: CPU name, vendor,
# family and model, its whole flag list, frequency, cores, memory, kernel, hypervisor, the GPU;
# from the runs' own env.json, else this machine's; the versions of LibTorch, PyTorch, JAX, the
# compiler and the CUDA toolkit; "build_revisions", what the runs' binaries were built from;
# "commit", HEAD of the tree recording it; the date) and command.txt (COMMAND, the literal
# command the measurement was made with). The docs cite results/NAME.
# What it keeps speaks of the repository, not of the machine it was recorded on: in every text
# file an absolute path under OUT_DIR reads results/NAME/... (a run's "dir", a report's folder
# column), one in the checkout is relative to it (build/bench), the home folder reads ~ and any
# other absolute path keeps its last name alone; source_diff.patch is kept as it is.
# Only runs of committed sources are recorded: a run folder whose env.json says its binary was
# built from uncommitted changes (build_revision, or in older runs git_revision, ending in
# -dirty), or says nothing of what it was built from, is refused, and so are runs of two
# different binaries in one folder (bench's build_source_hash; the peers' likewise) unless the
# folder is an A/B of two revisions (ab_binaries.sh's ab.json). ALLOW_DIRTY=1 records dirty
# builds anyway, marked: machine.json says "built_from_uncommitted_changes": true and the folder
# keeps the diff as source_diff.patch (the build's, BENCH's folder's source_diff.patch, where
# its hash is the runs' build_diff_hash; else `git diff HEAD` of the tree, "diff_source" says so).
# times.json folders (ci_times.sh times fresh clones of HEAD) have no runs to check.
# COMMAND is the literal command: its first word a script or binary of this tree (after
# VAR=value words and bash/sh/python), no placeholder (OUT_DIR, DTYPE, an upper-case word) and
# no '(...)' description. compare.sh, sweep.sh, ab_binaries.sh and ci_times.sh write their own
# command line to OUT_DIR/command.txt: COMMAND "-" keeps it (a COMMAND that differs is refused).
# NAME: letters, digits, '.', '_' and '-' (e.g. zen4-2026-12-06-eager); a folder that exists
# is refused, and so is a recording that would take results/ past 8 MB: nothing is overwritten.
# Every refusal is one line and exit 2 (the budget's, exit 1), and writes nothing.
# RESULTS_DIR (default: the repository's results/) is where it records. Where OUT_DIR holds no
# report.json, `bench report --json` (BENCH, default ./build/bench) over it makes one; every
# folder of runs gets manifest.md, `bench report --manifest` over the recorded runs.
# Usage: scripts/record_results.sh OUT_DIR NAME "COMMAND"|-
# Example: scripts/record_results.sh runs/cmp zen3-2026-12-31-compare -
source "$(dirname "$0")/usage.sh"
tb_start "$0" "NAME \"COMMAND\"|-" "$@"
[ $# -eq 3 ] || { echo "usage: $0 OUT_DIR NAME \"COMMAND\"|-" >&2; exit 2; }
name=$2 command=$3
[[ "$name" =~ ^[A-Za-z0-9._-]+$ && "$name" != .* ]] ||
  { echo "record_results.sh: NAME: '$name' is not allowed; use letters, digits, '.', '_' and '-'" >&2
    exit 2; }
[ -d "$out" ] || { echo "record_results.sh: OUT_DIR: '$out' is not a folder" >&2; exit 2; }
results=${RESULTS_DIR:-results}
dest="$results/$name"
[ ! -e "$dest" ] ||
  { echo "record_results.sh: $dest exists; nothing is overwritten: choose another NAME" >&2; exit 2; }
runs=$(find "$out" -name summary.json -print -quit)
[ -n "$runs" ] || [ -f "$out/times.json" ] ||
  { echo "record_results.sh: '$out' holds no run folder (no summary.json) and no times.json: nothing recorded" >&2
    exit 2; }
BENCH=${BENCH:-./build/bench}
# The checks and machine.json: `python3 -c "$py" MODE ...` (command, check, machine).
read -r -d '' py <<'EOF' || true
import glob, json, os, re, shlex, shutil, subprocess, sys, time
mode = sys.argv[1]

def fail(text):
    print(f"record_results.sh: {text}", file=sys.stderr)
    sys.exit(2)

if mode == "command":
    # COMMAND as the literal command: each of its commands (split at ; && || |) starts, after
    # VAR=value words and an interpreter, with a file of this tree (or BENCH); no placeholder.
    command, bench = sys.argv[2], sys.argv[3]
    again = ("give the literal command it was made with (its paths and values), or - to keep "
             "OUT_DIR/command.txt where the script wrote one")
    try:
        lex = shlex.shlex(command, posix=True, punctuation_chars=True)
        lex.whitespace_split = True
        words = list(lex)
    except ValueError as e:
        fail(f"COMMAND: '{command}' is not a shell command ({e}); {again}")
    if not words:
        fail(f"COMMAND is empty; {again}")
    assign = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
    placeholder = re.compile(r"^[A-Z][A-Z0-9_]*[A-Z0-9]$")
    seps = {";", "&&", "||", "|", "&"}
    first = True
    for w in words:
        if set(w) <= set("()<>;&|") and set(w) & set("()"):
            fail(f"COMMAND: '(...)' reads as a description, not a command; {again}")
        if w in seps:
            first = True
            continue
        if assign.match(w):
            continue
        if first:
            if w in ("env", "bash", "sh", "python", "python3", ".venv/bin/python"):
                continue
            inside = os.path.realpath(w).startswith(os.path.realpath(".") + os.sep)
            if not (os.path.isfile(w) and inside or os.path.realpath(w) == os.path.realpath(bench)):
                fail(f"COMMAND: '{w}' is not a script or binary of this tree (e.g. "
                     f"scripts/compare.sh, bash scripts/ci_times.sh, ./build/bench); {again}")
            first = False
        for part in re.split(r"[/=,:]", w):
            if placeholder.match(part):
                fail(f"COMMAND: '{part}' is a placeholder; {again}")
    sys.exit(0)

def run_folders(root):
    """(folder under root, its env.json or None where missing or torn), each folder with a
    summary.json, sorted; a folder of repetitions (bench --repeat N: rep-K folders beside its
    summary of them) stands for its rep-K folders."""
    found = []
    for d, subs, files in os.walk(root):
        if "summary.json" in files and not any(s.startswith("rep-") for s in subs):
            try:
                env = json.load(open(os.path.join(d, "env.json")))
            except (OSError, ValueError):
                env = None
            found.append((os.path.relpath(d, root), env if isinstance(env, dict) else None))
    return sorted(found)

def revision(env):
    """What the run's binary was built from: build_revision, else (older runs) git_revision."""
    for key in ("build_revision", "git_revision"):
        v = env.get(key)
        if isinstance(v, str) and v and v != "unknown":
            return v
        if key in env and key == "build_revision":
            return None
    return None

def is_peer(env):
    return any(k in env for k in ("framework_version", "torch_version", "jax_version"))

def named(folders, root):
    shown = [os.path.normpath(os.path.join(root, f)) for f in folders[:3]]
    more = f" and {len(folders) - 3} more" if len(folders) > 3 else ""
    return ", ".join(shown) + more

if mode == "check":
    # Prints "dirty HASH..." (the dirty runs' build_diff_hash, "-" where none) where ALLOW_DIRTY
    # lets dirty runs through, else nothing; refuses (one line, exit 2) otherwise.
    root, allow = sys.argv[2], sys.argv[3] == "1"
    runs = run_folders(root)
    bare = [d for d, env in runs if env is None or revision(env) is None]
    if bare:
        fail(f"run folders whose env.json does not say what their binary was built from (no "
             f"build_revision or git_revision, or no readable env.json): {named(bare, root)}; "
             f"only runs that name their build are recorded: nothing recorded")
    dirty = [(d, env) for d, env in runs if revision(env).endswith("-dirty")]
    if dirty and not allow:
        revs = ", ".join(sorted({revision(env) for _, env in dirty}))
        fail(f"runs of a binary built from uncommitted changes ({revs}): "
             f"{named([d for d, _ in dirty], root)}; only runs of a committed, clean build are "
             f"recorded (commit, rebuild, rerun), or ALLOW_DIRTY=1 records them marked, with "
             f"the diff: nothing recorded")
    try:  # an A/B (ab_binaries.sh): its two binaries, by the hashes ab.json names where it does
        ab = json.load(open(os.path.join(root, "ab.json")))
        pair = {ab.get("old_build_source_hash"), ab.get("new_build_source_hash")} - {None}
    except (OSError, ValueError, AttributeError):
        ab, pair = None, set()
    for kind in ("bench", "peers"):
        binaries = {}
        for d, env in runs:
            h = env.get("build_source_hash")
            if h and (kind == "peers") == is_peer(env):
                binaries.setdefault(h, []).append(d)
        foreign = kind == "bench" and len(pair) == 2 and not set(binaries) <= pair
        if len(binaries) > (2 if ab is not None else 1) or foreign:
            which = "; ".join(f"{h}: {named(ds, root)}" for h, ds in sorted(binaries.items()))
            what = "bench binaries" if kind == "bench" else "versions of the peers (scripts/peers)"
            fail(f"runs of {len(binaries)} different {what} in one folder (build_source_hash "
                 f"{which}){', not the two its ab.json names' if foreign else ''}; a folder holds "
                 f"one binary's runs (bench's and the peers' side by side), or an A/B of two "
                 f"revisions (scripts/ab_binaries.sh, its ab.json): nothing recorded")
    if dirty:
        print("dirty", *sorted({env.get("build_diff_hash") or "-" for _, env in dirty}))
    sys.exit(0)

if mode == "paths":
    # No path of this machine in the recording (a path of one machine means nothing on another):
    # in every text file under FOLDER each absolute path reads, by its longest known prefix,
    # results/NAME/... (OUT_DIR, the runs' folder), relative to the repository (the checkout) or
    # ~/... (the home folder), and any other keeps its last name alone (a binary an A/B ran from a
    # temporary folder). Relative paths are the repository's and stay. The replacements hold no
    # quote or backslash, so JSON stays valid. source_diff.patch is the build's diff byte for
    # byte (its hash is the runs' build_diff_hash); binaries (scaling.png) do not decode.
    folder, name, out, given = sys.argv[2:6]
    known = {}
    for path, to in ((out, f"results/{name}"), (folder, f"results/{name}"),
                     (os.environ.get("PWD", "."), ""), (os.getcwd(), ""),
                     (os.path.expanduser("~"), "~")):
        for p in (os.path.abspath(path), os.path.realpath(path)):
            known.setdefault(p, to)
    prefixes = sorted(known.items(), key=lambda kv: -len(kv[0]))
    def local(m):
        p = m.group(0)
        for pre, to in prefixes:
            if p == pre or p.startswith(pre + "/"):
                return "/".join(x for x in (to, p[len(pre) + 1:]) if x) or "."
        return os.path.basename(p) if p.count("/") > 1 else p
    absolute = re.compile(r"(?<![\w.+@%~/:-])(?:/[\w.+@%~-]+)+")
    # OUT_DIR as given, where relative (a report's "dir" of runs/cmp/...), before a '/'; not in
    # command.txt, which keeps the command as it was run.
    given = os.path.normpath(given)
    relative = (re.compile(r"(?<![\w.+@%~/-])" + re.escape(given) + r"(?=/)")
                if not os.path.isabs(given) and not given.startswith(".") else None)
    for d, _, files in os.walk(folder):
        for f in files:
            if f == "source_diff.patch":
                continue
            try:
                with open(os.path.join(d, f), encoding="utf-8", newline="") as fh:
                    text = fh.read()
            except UnicodeDecodeError:
                continue
            new = absolute.sub(local, text)
            if relative and f != "command.txt":
                new = relative.sub(f"results/{name}", new)
            if new != text:
                with open(os.path.join(d, f), "w", encoding="utf-8", newline="") as fh:
                    fh.write(new)
    sys.exit(0)

# mode == "machine": machine.json in the recording's folder. The machine the runs ran on, from
# their own env.json (bench's "cpu", memory_bytes, kernel; a GPU run's device_name), so that
# files made on another machine (the GPU call's) name it; this machine's where no run says, or
# where the runs' CPU is this machine's (its whole /proc/cpuinfo flag list, its frequency and
# hypervisor, which env.json lacks).
root, dirty, diff_source = sys.argv[2], sys.argv[3] == "1", sys.argv[4]

def sh(*cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return ""

envs = []
for f in sorted(glob.glob(os.path.join(root, "**", "env.json"), recursive=True)):
    try:
        env = json.load(open(f))
    except (OSError, ValueError):
        continue
    if isinstance(env, dict):
        envs.append(env)

def first(key, pick=lambda env: True):
    return next((env[key] for env in envs if pick(env) and env.get(key) is not None), None)

info = {}
for line in open("/proc/cpuinfo"):
    key, _, value = line.partition(":")
    if key.strip() not in info:
        info[key.strip()] = value.strip()
lscpu = {}
for line in sh("lscpu").splitlines():
    key, _, value = line.partition(":")
    lscpu[key.strip()] = value.strip()
here = {"vendor": info.get("vendor_id"), "family": info.get("cpu family"),
        "model": info.get("model"), "model_name": info.get("model name"),
        "isa": info.get("flags", "").split(), "online_cpus": os.cpu_count()}
cpu = first("cpu", lambda env: isinstance(env.get("cpu"), dict))
local = cpu is None or all(cpu.get(k) in (None, here[k]) for k in ("vendor", "family", "model")) \
    and cpu.get("model_name") == here["model_name"]
cpu = cpu or here
# The runs' flag list where they ran elsewhere: the longest they give (the peers' env.json has
# /proc/cpuinfo's whole list, bench's the instruction sets it uses).
isa = max((env["cpu"].get("isa") or [] for env in envs if isinstance(env.get("cpu"), dict)
           and env["cpu"].get("model_name") == cpu.get("model_name")), key=len,
          default=cpu.get("isa", []))
gpu = next((env["device_name"] for env in envs
            if env.get("cuda_version") and env.get("device_name")), None)
mhz = None
if local:
    try:
        mhz = float(lscpu.get("CPU max MHz") or info.get("cpu MHz"))
    except (TypeError, ValueError):
        pass
memory = first("memory_bytes")
if memory is None and local:
    for line in open("/proc/meminfo"):
        if line.startswith("MemTotal:"):
            memory = int(line.split()[1]) * 1024
bench = lambda env: not is_peer(env)
def peer_version(framework, package):
    for env in envs:
        fv = env.get("framework_version") or ""
        if env.get(f"{package}_version") or fv.startswith(framework + " "):
            return env.get(f"{package}_version") or fv.split(" ", 1)[1]
    if local and os.path.exists(".venv/bin/python"):
        v = sh(".venv/bin/python", "-c", "import importlib.metadata as m, sys\n"
               "try: print(m.version(sys.argv[1]))\nexcept m.PackageNotFoundError: pass", package)
        return v.strip() or None
    return None
nvcc = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc"
                                if os.path.exists("/usr/local/cuda/bin/nvcc") else None)
toolkit = ([l for l in sh(nvcc, "--version").splitlines() if l.strip()] or [None])[-1] if nvcc \
    else None
revisions = {revision(env) for env in envs} - {None}
try:
    commit = json.load(open(os.path.join(root, "times.json"))).get("commit")
except (OSError, ValueError, AttributeError):
    commit = None
if commit:  # ci_times.sh's clones build HEAD as committed
    revisions.add(sh("git", "describe", "--always", "--abbrev=12", commit).strip() or commit[:12])
machine = {"schema_version": 1,
           "recorded_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "commit": sh("git", "rev-parse", "HEAD").strip(),
           "build_revisions": sorted(revisions),
           "built_from_uncommitted_changes": dirty,
           "cpu_model": cpu.get("model_name"),
           "cpu_vendor": cpu.get("vendor"), "cpu_family": cpu.get("family"),
           "cpu_model_number": cpu.get("model"),
           "cpu_flags": here["isa"] if local else isa,
           "cpu_mhz": mhz, "online_cpus": cpu.get("online_cpus"),
           "memory_bytes": memory,
           "kernel": first("kernel") or (" ".join(sh("uname", "-srm").split()) or None
                                         if local else None),
           "os": first("os"),
           "hypervisor": lscpu.get("Hypervisor vendor") if local else None,
           "gpu": gpu,
           "libtorch_version": first("libtorch_version", bench),
           "pytorch_version": peer_version("torch", "torch"),
           "jax_version": peer_version("jax", "jax"),
           "compiler": first("compiler", bench),
           "cuda_toolkit": toolkit}
if dirty:
    machine["diff_source"] = diff_source
    machine["build_diff_hashes"] = sorted({env.get("build_diff_hash") for env in envs
                                           if (revision(env) or "").endswith("-dirty")
                                           and env.get("build_diff_hash")})
json.dump(machine, open(os.path.join(root, "machine.json"), "w"), indent=1)
EOF
# COMMAND: the literal command, or "-" for the one the script wrote to OUT_DIR/command.txt.
if [ -f "$out/command.txt" ]; then
  written=$(cat "$out/command.txt")
  if [ "$command" = - ]; then
    command=$written
  elif [ "$command" != "$written" ]; then
    echo "record_results.sh: COMMAND differs from $out/command.txt, the command line the script that made OUT_DIR wrote: pass - to keep it" >&2
    exit 2
  fi
elif [ "$command" = - ]; then
  echo "record_results.sh: COMMAND: - keeps OUT_DIR/command.txt, which '$out' lacks; give the literal command it was made with" >&2
  exit 2
fi
python3 -c "$py" command "$command" "$BENCH"
# What the runs were built from: refused (one line, exit 2) unless committed, one binary.
dirty=""
[ -z "$runs" ] || dirty=$(python3 -c "$py" check "$out" "${ALLOW_DIRTY:-0}")
mkdir -p "$results"
tmp=$(mktemp -d "$results/.$name.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
# The small files, at their paths under OUT_DIR.
(cd "$out" && find . -type f \( -name config.json -o -name env.json -o -name summary.json \
   -o -name 'report.*' -o -name failed.tsv -o -name dirs.txt -o -name stages.tsv \
   -o -name profile.md -o -name tests.txt -o -name machine.txt -o -name times.json -o -name ab.json \
   -o -name 'scaling.*' -o -name valid_bpb.png -o -name metrics.jsonl \) -print0) |
  while IFS= read -r -d '' f; do
    # metrics.jsonl only of a run with a target (its validation curve is what the comparison
    # plots; valid_bpb.png is drawn again from them by plot_runs.py)
    if [ "$(basename "$f")" = metrics.jsonl ] &&
       ! grep -Eq '"target_bpb": *[0-9]' "$out/$(dirname "$f")/summary.json" 2>/dev/null; then
      continue
    fi
    mkdir -p "$tmp/$(dirname "$f")"
    cp "$out/$f" "$tmp/$f"
  done
printf '%s\n' "$command" > "$tmp/command.txt"
# ALLOW_DIRTY=1: the diff the dirty binary was built from, where the build kept it and its hash
# is the runs' build_diff_hash; else the tree's now, which may differ from the build's.
diff_source=""
if [ -n "$dirty" ]; then
  build_patch="$(dirname "$BENCH")/source_diff.patch"
  read -r -a hashes <<<"${dirty#dirty}"
  if [ ${#hashes[@]} -eq 1 ] && [ -f "$build_patch" ] &&
     [ "$(sha256sum < "$build_patch" | cut -c1-16)" = "${hashes[0]}" ]; then
    cp "$build_patch" "$tmp/source_diff.patch"
    diff_source="the build's source_diff.patch, its hash the runs' build_diff_hash"
  else
    git diff HEAD --binary > "$tmp/source_diff.patch" 2>/dev/null || true
    diff_source="tree at recording, may differ from the build"
  fi
fi
# A folder of runs without a report of its own (a single run, a sweep's subfolder) gets one, so
# that every measurement has the report.json the docs' tables are generated from.
[ -f "$tmp/report.json" ] || [ -z "$runs" ] || "$BENCH" report --json "$out" > "$tmp/report.json"
# The fairness manifest of every run (bench report --manifest), which the folder's table links.
# (none where bench reads none of the runs: a folder of another schema).
[ -z "$runs" ] || "$BENCH" report --manifest "$tmp" > "$tmp/manifest.md" 2>/dev/null ||
  rm -f "$tmp/manifest.md"
python3 -c "$py" machine "$tmp" "$([ -n "$dirty" ] && echo 1 || echo 0)" "$diff_source"
# No path of this machine in what is kept: OUT_DIR (absolute, and as given) reads results/NAME.
python3 -c "$py" paths "$tmp" "$name" "$out" "$1"
kb=$(du -sk --apparent-size "$results" | cut -f1)
if [ "$kb" -gt 8192 ]; then
  echo "record_results.sh: results/ would hold ${kb} KB, over its 8 MB budget: nothing recorded" >&2
  exit 1
fi
mv "$tmp" "$dest"
trap - EXIT
echo "recorded $(find "$dest" -type f | wc -l) files ($(du -sh "$dest" | cut -f1)) in $dest${dirty:+, built from uncommitted changes (source_diff.patch: $diff_source)}"
