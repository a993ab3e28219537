#!/usr/bin/env bash
# Configures and builds trainbench (Release, Ninja) into build/. Extra arguments go to cmake
# at configure time, e.g. -DCMAKE_PREFIX_PATH=... for a CUDA LibTorch.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)"
