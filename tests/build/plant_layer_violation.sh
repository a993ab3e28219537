#!/usr/bin/env bash
# Copies the tree's src/ and include/ into a temporary folder, checks that the layering check
# passes there, plants one upward include (data including an app header) and checks that the
# check then fails naming the file and the include; then, in a fresh copy, plants a LibTorch include in a header a torch-free source includes (measure/stats.h) and
# checks that the check names the source, the header and the chain between them.
# Usage: plant_layer_violation.sh SOURCE_DIR CMAKE LAYERS TORCH_FREE   (comma-separated lists)
set -euo pipefail
src=$1 cmake=$2 layers=$3 torch_free=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$src/src" "$src/include" "$tmp/"
check() {
  "$cmake" -DSOURCE_DIR="$tmp" -DLAYERS="$layers" -DTORCH_FREE="$torch_free" \
    -P "$src/cmake/check_layers.cmake" 2>&1
}
check >/dev/null || { echo "the unchanged tree fails the check:"; check; exit 1; }
printf '#include "trainbench/app/run.h"\n' >> "$tmp/src/data/sampler.cpp"
if out=$(check); then echo "the planted violation was not found"; exit 1; fi
echo "$out" | grep -q 'src/data/sampler.cpp (layer data) includes a higher layer: #include "trainbench/app/run.h"' ||
  { echo "unexpected message: $out"; exit 1; }
rm -rf "$tmp/src" "$tmp/include"
cp -r "$src/src" "$src/include" "$tmp/"
sed -i 's|^#pragma once$|#pragma once\n#include <torch/types.h>|' "$tmp/include/trainbench/measure/stats.h"
if out=$(check); then echo "the planted LibTorch include in a torch-free file was not found"; exit 1; fi
want='src/measure/stats.cpp is torch-free (TB_TORCH_FREE) but includes <torch/types.h> (src/measure/stats.cpp -> include/trainbench/measure/stats.h)'
echo "$out" | grep -qF "$want" || { echo "unexpected message: $out"; exit 1; }
echo "the check refused the two planted violations"
