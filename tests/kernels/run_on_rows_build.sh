#!/usr/bin/env bash
# Runs the row-kernel tests on one build of the CPU rows (TB_CPU_ROWS) other than the one the
# suite's own pass takes (the widest this CPU runs): that one, and a build the CPU cannot run,
# are reported as skipped.
# Usage: run_on_rows_build.sh avx2|avx512 TESTS_BINARY GTEST_FILTER
set -euo pipefail
isa=$1 binary=$2 filter=$3
widest=avx512
for flag in avx512f avx512bw avx512vl avx512dq; do
  grep -qw "$flag" /proc/cpuinfo || { widest=avx2 missing=$flag; break; }
done
if [ "$isa" = avx512 ] && [ "$widest" = avx2 ]; then
  echo "[  SKIPPED ] this CPU lacks $missing: the avx512 build of the rows cannot run here"
  exit 0
fi
if [ "$isa" = "$widest" ]; then
  echo "[  SKIPPED ] this CPU's widest build ($isa): the suite's own pass ran these tests on it"
  exit 0
fi
TB_CPU_ROWS=$isa exec "$binary" --gtest_filter="$filter"
