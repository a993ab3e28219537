#!/usr/bin/env bash
# First command of the README: install what is missing, build (Release) and run the quick
# preset on the embedded corpus. Extra arguments go to bench (e.g. --model torch).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
bash scripts/build.sh
./build/bench --preset quick --overwrite 1 "$@"
