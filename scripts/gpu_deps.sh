#!/usr/bin/env bash
# Our build dependencies for a GPU machine that has no network (it has CUDA, PyTorch 2.11,
# CMake, ninja and a compiler, but not our Debian packages).
#   scripts/gpu_deps.sh download        here, on Debian 12 with apt: saves the .deb files into
#                                       gpu-deps/ (git-ignored; send it along with the tree)
#   scripts/gpu_deps.sh bin [BUILD_DIR] here, after a build (default build/): copies bench and
#                                       trainbench_tests into gpu-deps/bin, which gpu_bench.sh
#                                       tries there before building (same torch 2.11 wheel,
#                                       CUDA code for sm_90 + PTX) with SOURCES, the hash of
#                                       the sources they were built from; refused when a source
#                                       is newer than a binary built from it
#   scripts/gpu_deps.sh sources         the hash of this tree's sources (scripts/source_id.sh's,
#                                       what bench --version prints), as SOURCES holds it:
#                                       gpu_bench.sh refuses carried binaries of other sources
#   scripts/gpu_deps.sh unpack [PREFIX] there: unpacks them with dpkg -x (or ar + tar) under
#                                       PREFIX (default gpu-deps/prefix), writes
#                                       PREFIX/cmake-args.txt and PREFIX/env.sh, prints both
# Three prefixes keep the {fmt} headers apart: LibTorch 2.x ships its own fmt in its include
# folder, and Debian's spdlog is built against Debian's fmt 9. spdlog and fmt go to PREFIX/log,
# which only the trainbench_log target sees (src/core/log.cpp includes spdlog and no torch header);
# cxxopts, nlohmann-json, gtest and zlib go to PREFIX/common; gloo's headers to PREFIX/gloo,
# exported by env.sh as TB_GLOO_INCLUDE_DIR for code that needs them; protoc and protobuf(-lite)
# (TensorBoard's event records) to PREFIX/proto, only the TensorBoard writer sees its headers.
# Example: scripts/gpu_deps.sh download   (then, on the GPU machine: scripts/gpu_deps.sh unpack)
source "$(dirname "$0")/usage.sh"
tb_help "$0" "$@"
set -euo pipefail
cd "$(dirname "$0")/.."
DEB_DIR=${GPU_DEPS_DIR:-gpu-deps}

log_pkgs=(libspdlog-dev libspdlog1.10 libfmt-dev libfmt9)
common_pkgs=(libcxxopts-dev nlohmann-json3-dev libgtest-dev zlib1g-dev zlib1g)
gloo_pkgs=(libgloo-dev)  # declarations only: Gloo itself is inside libtorch_cpu
proto_pkgs=(protobuf-compiler libprotoc32 libprotobuf-dev libprotobuf32 libprotobuf-lite32)

usage() { echo "usage: $0 download | bin [BUILD_DIR] | sources | unpack [PREFIX]" >&2; exit 2; }

# The compiled sources, by path, in a fixed order, and their hash: scripts/source_id.sh's (the
# hash bench embeds at every build and prints with --version).
source_files() {
  local roots=() r
  for r in CMakeLists.txt cmake src include proto tests benchmarks fuzz; do
    [ -e "$r" ] && roots+=("$r")
  done
  [ ${#roots[@]} -gt 0 ] || return 0
  find "${roots[@]}" -type f \( -name '*.h' \
    -o -name '*.cpp' -o -name '*.cu' -o -name '*.proto' -o -name '*.cmake' \
    -o -name CMakeLists.txt \) | LC_ALL=C sort
}
sources() { bash scripts/source_id.sh | sed -n 2p; }
[ $# -ge 1 ] || usage

download() {
  command -v apt-get >/dev/null || { echo "gpu_deps.sh: download needs apt-get (Debian 12)" >&2; exit 1; }
  mkdir -p "$DEB_DIR"
  (cd "$DEB_DIR" && apt-get download "${log_pkgs[@]}" "${common_pkgs[@]}" "${gloo_pkgs[@]}" \
                      "${proto_pkgs[@]}") || {
    echo "gpu_deps.sh: apt-get download failed (run 'apt-get update' first?)" >&2
    exit 1
  }
  echo "gpu_deps.sh: $(ls "$DEB_DIR"/*.deb | wc -l) packages in $DEB_DIR/" >&2
}

bin() {
  local build=${1:-build} f
  for f in bench tests/trainbench_tests; do
    [ -x "$build/$f" ] || { echo "gpu_deps.sh: $build/$f is missing; build first (scripts/build.sh, then cmake --build $build --target trainbench_tests)" >&2; exit 2; }
  done
  # A source newer than a binary built from it: tests/ feed trainbench_tests, benchmarks/ and
  # fuzz/ neither, everything else both (a test's edit does not relink bench).
  local newer="" bin_path bins
  while read -r f; do
    case $f in
      benchmarks/* | fuzz/*) continue ;;
      tests/*) bins=("$build/tests/trainbench_tests") ;;
      *) bins=("$build/bench" "$build/tests/trainbench_tests") ;;
    esac
    for bin_path in "${bins[@]}"; do
      if [ "$f" -nt "$bin_path" ]; then newer="$f is newer than $bin_path"; break 2; fi
    done
  done < <(source_files)
  [ -z "$newer" ] || { echo "gpu_deps.sh: $newer; build first (scripts/build.sh, then cmake --build $build --target trainbench_tests)" >&2; exit 2; }
  mkdir -p "$DEB_DIR/bin"
  cp "$build/bench" "$build/tests/trainbench_tests" "$DEB_DIR/bin/"
  sources >"$DEB_DIR/bin/SOURCES"
  echo "revision $(git rev-parse --short HEAD 2>/dev/null || echo '?') on $(date -u +%F), $(c++ --version | head -n 1)" >"$DEB_DIR/bin/BUILT"
  echo "gpu_deps.sh: bench and trainbench_tests in $DEB_DIR/bin ($(du -sh "$DEB_DIR/bin" | cut -f1))" >&2
}

# unpack_one DEB DEST: dpkg -x where dpkg exists, else the .deb's data archive through tar.
unpack_one() {
  if command -v dpkg-deb >/dev/null; then
    dpkg-deb -x "$1" "$2"
  else
    local member z
    member=$(ar t "$1" | grep '^data\.tar')
    case "$member" in *.xz) z=-J ;; *.zst) z=--zstd ;; *.gz) z=-z ;; *) z= ;; esac
    ar p "$1" "$member" | tar -x $z -C "$2" -f -
  fi
}

unpack() {
  local prefix=${1:-$DEB_DIR/prefix}
  mkdir -p "$prefix"
  prefix=$(cd "$prefix" && pwd)
  local group pkg deb
  for group in log common gloo proto; do
    mkdir -p "$prefix/$group"
    local -n pkgs="${group}_pkgs"
    for pkg in "${pkgs[@]}"; do
      deb=$(compgen -G "$DEB_DIR/${pkg}_*.deb" | head -n 1 || true)
      [ -n "$deb" ] || { echo "gpu_deps.sh: $DEB_DIR/${pkg}_*.deb is missing; run '$0 download' on Debian 12 first" >&2; exit 1; }
      unpack_one "$deb" "$prefix/$group"
    done
  done
  local arch=x86_64-linux-gnu
  local zlib="" f
  # zlib1g-dev's libz.so is an absolute link into /lib: name the unpacked library itself.
  for f in "$prefix"/common/lib/$arch/libz.so.1.* "$prefix"/common/usr/lib/$arch/libz.so.1.*; do
    [ -f "$f" ] && zlib=$f && break
  done
  cat >"$prefix/cmake-args.txt" <<EOF
-Dspdlog_DIR=$prefix/log/usr/lib/$arch/cmake/spdlog
-Dfmt_DIR=$prefix/log/usr/lib/$arch/cmake/fmt
-Dcxxopts_DIR=$prefix/common/usr/lib/cmake/cxxopts
-Dnlohmann_json_DIR=$prefix/common/usr/share/cmake/nlohmann_json
-DGTest_DIR=$prefix/common/usr/lib/$arch/cmake/GTest
-DZLIB_INCLUDE_DIR=$prefix/common/usr/include
-DZLIB_LIBRARY=$zlib
-DTB_GLOO_INCLUDE_DIR=$prefix/gloo/usr/include
-DProtobuf_INCLUDE_DIR=$prefix/proto/usr/include
-DProtobuf_LIBRARY=$prefix/proto/usr/lib/$arch/libprotobuf.so
-DProtobuf_LITE_LIBRARY=$prefix/proto/usr/lib/$arch/libprotobuf-lite.so
-DProtobuf_PROTOC_LIBRARY=$prefix/proto/usr/lib/$arch/libprotoc.so
-DProtobuf_PROTOC_EXECUTABLE=$prefix/proto/usr/bin/protoc
EOF
  cat >"$prefix/env.sh" <<EOF
# spdlog, fmt and protobuf are shared libraries: the loader must find them when protoc, bench
# and the tests run.
export LD_LIBRARY_PATH=$prefix/log/usr/lib/$arch:$prefix/proto/usr/lib/$arch\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
# gloo's headers, for code that needs them (not on any include path by default).
export TB_GLOO_INCLUDE_DIR=$prefix/gloo/usr/include
EOF
  for f in "$prefix/cmake-args.txt" "$prefix/env.sh"; do
    echo "== $f"
    cat "$f"
  done
}

case "$1" in
  download) download ;;
  bin) shift; bin "$@" ;;
  sources) sources ;;
  unpack) shift; unpack "$@" ;;
  *) usage ;;
esac
