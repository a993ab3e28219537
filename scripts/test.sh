#!/usr/bin/env bash
# Second command of the README (and what CI runs): install what is missing, build, and run the
# whole GoogleTest suite through CTest. Says how long each part took (stderr).
# Example: bash scripts/test.sh   (CI runs exactly this)
source "$(dirname "$0")/usage.sh"
tb_help "$0" "$@"
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$SECONDS
bash scripts/install_deps.sh
t1=$SECONDS
bash scripts/build.sh
t2=$SECONDS
status=0
(cd "${BUILD_DIR:-build}" && ctest --output-on-failure -j "$(nproc)") || status=$?
echo "test.sh: install $((t1 - t0)) s, build $((t2 - t1)) s, tests $((SECONDS - t2)) s" >&2
exit $status
