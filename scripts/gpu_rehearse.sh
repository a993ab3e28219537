#!/usr/bin/env bash
# The GPU call rehearsed on this CPU machine: scripts/gpu_bench.sh run as the GPU machine would
# run it, with our Debian packages hidden (a private mount namespace lays empty folders and
# files over their headers, CMake configs, libraries and protoc, as the GPU machine lacks them),
# so that only the tree, gpu-deps/ (its packages downloaded first when missing, and this
# build's binaries put in gpu-deps/bin when newer) and the Python's torch are
# there. It prints the carried size (the tracked files plus gpu-deps/, against the 64 MiB budget
# for what travels to the GPU machine) and runs every stage of the call with tiny CPU shapes (REHEARSAL=1),
# writing the same files into OUT_DIR. Needs root (unshare -m).
# Usage: scripts/gpu_rehearse.sh OUT_DIR
# Environment: BUILD=1 builds there even where the carried binaries start (TARGETS, default
#   bench trainbench_tests; e.g. TARGETS=trainbench_tensorboard for configure and protoc only),
#   BIN_FROM (build: the build folder whose binaries go to gpu-deps/bin when newer), DTYPES
#   (bfloat16 float16 float32), PYTHON (.venv/bin/python, standing in for the device's
#   python3 with torch), BUILD_DIR (build-rehearsal).
# Example: DTYPES=float32 scripts/gpu_rehearse.sh /tmp/rehearsal
source "$(dirname "$0")/usage.sh"
tb_start "$0" "" "$@"
shift  # OUT_DIR, now $out
[ $# -eq 0 ] || { echo "gpu_rehearse.sh: '$1' is not allowed after OUT_DIR (settings in the environment, see --help)" >&2; exit 2; }
[ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null || {
  echo "gpu_rehearse.sh: needs root and unshare -m (a private mount namespace) to hide the Debian packages" >&2
  exit 3; }
compgen -G "gpu-deps/*.deb" >/dev/null || bash scripts/gpu_deps.sh download
from=${BIN_FROM:-build}
if [ "${BUILD:-0}" != 1 ] && [ -x "$from/bench" ] && [ -x "$from/tests/trainbench_tests" ] &&
   { [ ! -x gpu-deps/bin/bench ] || [ "$from/bench" -nt gpu-deps/bin/bench ]; }; then
  bash scripts/gpu_deps.sh bin "$from"
fi
# What travels: the tracked files and gpu-deps/.
carried=$(git ls-files -z | xargs -0 stat -c %s | awk -v d="$(du -sb gpu-deps | cut -f1)" \
  '{ s += $1 } END { print s + d }')
echo "gpu_rehearse.sh: the call carries $((carried / 1048576)) MiB of 64 (tracked files + gpu-deps/)" >&2
[ "$carried" -le $((64 * 1048576)) ] || { echo "gpu_rehearse.sh: more than 64 MiB would travel" >&2; exit 1; }
# Every file our Debian packages installed under /usr/include, /usr/lib, /usr/share/cmake and
# /usr/bin (the device has none of them); their top folders under /usr/include are hidden whole.
pkgs=$(sed -n 's/^\(log\|common\|gloo\|proto\)_pkgs=(\(.*\)).*/\2/p' scripts/gpu_deps.sh | tr '\n' ' ')
hide=()
for p in $pkgs; do
  case $p in zlib1g) continue ;; esac  # the runtime zlib is part of any system
  while read -r f; do
    case $f in
      /usr/include/*) top=${f#/usr/include/}; top=/usr/include/${top%%/*}; hide+=("$top") ;;
      # files only: a bind mount on a link would land on its target (libz.so is zlib1g's)
      /usr/bin/*|/usr/lib/*|/usr/share/cmake/*) [ -f "$f" ] && [ ! -L "$f" ] && hide+=("$f") ;;
    esac
  done < <(dpkg -L "$p" 2>/dev/null)
done
# BUILD=1: the carried binaries hidden too, as where they do not start.
[ "${BUILD:-0}" = 1 ] && [ -d gpu-deps/bin ] && hide+=("$PWD/gpu-deps/bin")
mapfile -t hide < <(printf '%s\n' "${hide[@]}" | sort -u)
echo "gpu_rehearse.sh: hiding ${#hide[@]} paths of: $pkgs" >&2
REHEARSAL=1 PYTHON=${PYTHON:-.venv/bin/python} BUILD_DIR=${BUILD_DIR:-build-rehearsal} \
  exec unshare -m --propagation private bash -c '
    empty=$(mktemp -d); touch "$empty.file"
    for p in "$@"; do
      if [ -d "$p" ] && [ ! -L "$p" ]; then mount --bind "$empty" "$p"; else mount --bind "$empty.file" "$p"; fi
    done
    if [ -s /usr/include/nlohmann/json.hpp ] || protoc --version >/dev/null 2>&1; then
      echo "gpu_rehearse.sh: the Debian packages are still visible; nothing rehearsed" >&2; exit 1
    fi
    exec bash scripts/gpu_bench.sh "$0"' "$out" "${hide[@]}"
