#!/usr/bin/env bash
# Configures and builds trainbench (Release, Ninja) into build/ (BUILD_DIR). BUILD_TARGET=bench
# builds bench alone (what scripts/quickstart.sh needs first); the default is everything. Extra
# arguments go to cmake at configure time, e.g. -DCMAKE_PREFIX_PATH=....
# Example: BUILD_TARGET=bench bash scripts/build.sh
source "$(dirname "$0")/usage.sh"
tb_help "$0" "$@"
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "$BUILD_DIR" -j "$(nproc)" ${BUILD_TARGET:+--target "$BUILD_TARGET"}
