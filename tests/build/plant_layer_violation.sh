#!/usr/bin/env bash
# Copies the tree's src/ and include/ into a temporary folder, checks that the layering check
# passes there, plants one upward include (data including an app header) and checks that the
# check then fails naming the file and the include; then, in a fresh copy, plants a read of a
# choice flag's text below app (model comparing cfg.dtype) and checks that it fails naming it.
# Usage: plant_layer_violation.sh SOURCE_DIR CMAKE LAYERS   (comma-separated, lowest first)
set -euo pipefail
src=$1 cmake=$2 layers=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$src/src" "$src/include" "$tmp/"
check() { "$cmake" -DSOURCE_DIR="$tmp" -DLAYERS="$layers" -P "$src/cmake/check_layers.cmake" 2>&1; }
check >/dev/null || { echo "the unchanged tree fails the check:"; check; exit 1; }
printf '#include "trainbench/app/run.h"\n' >> "$tmp/src/data/sampler.cpp"
if out=$(check); then echo "the planted violation was not found"; exit 1; fi
echo "$out" | grep -q 'src/data/sampler.cpp (layer data) includes a higher layer: #include "trainbench/app/run.h"' ||
  { echo "unexpected message: $out"; exit 1; }
rm -rf "$tmp/src" "$tmp/include"
cp -r "$src/src" "$src/include" "$tmp/"
printf 'bool planted_(const RunConfig& cfg) { return cfg.dtype == "bfloat16"; }\n' >> "$tmp/src/model/flops.cpp"
if out=$(check); then echo "the planted read of a choice flag's text was not found"; exit 1; fi
echo "$out" | grep -q "src/model/flops.cpp (layer model) reads a choice flag's text below app" ||
  { echo "unexpected message: $out"; exit 1; }
echo "the check refused both planted violations"
