#!/usr/bin/env bash
# Runs the row-kernel tests on one build of the CPU rows (TB_CPU_ROWS); a build the CPU cannot
# run is reported as skipped.
# Usage: run_on_rows_build.sh avx2|avx512 TESTS_BINARY GTEST_FILTER
set -euo pipefail
isa=$1 binary=$2 filter=$3
if [ "$isa" = avx512 ]; then
  for flag in avx512f avx512bw avx512vl avx512dq; do
    if ! grep -qw "$flag" /proc/cpuinfo; then
      echo "[  SKIPPED ] this CPU lacks $flag: the avx512 build of the rows cannot run here"
      exit 0
    fi
  done
fi
TB_CPU_ROWS=$isa exec "$binary" --gtest_filter="$filter"
