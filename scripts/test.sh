#!/usr/bin/env bash
# Second command of the README (and what CI runs): install what is missing, build, and run the
# whole GoogleTest suite through CTest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
bash scripts/build.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure -j "$(nproc)"
