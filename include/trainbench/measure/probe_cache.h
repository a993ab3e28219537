// One MFU peak per machine: the GEMM probe's figures (measure/gemm_probe.h) kept in a small JSON
// file, one entry per machine (the CPU's model name and the instruction sets bench uses),
// LibTorch version, thread count, dtype and the model's GEMM shapes. A run whose key is there
// takes those figures, so every run of one configuration on one machine divides by the same
// peak and takes the same --lowp_gemm auto route; a miss measures (retried while other work
// disturbs the probe, as the timed steps' noise check counts it) and stores an undisturbed
// measurement. --reprobe 1 measures again and replaces the entry; --peak_tflops still decides
// the peak; --probe_cache off measures every run.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "trainbench/measure/gemm_probe.h"

namespace trainbench {

// The cache file: --probe_cache, else $TB_PROBE_CACHE (the test suite sets "off"), else
// $XDG_CACHE_HOME/trainbench/gemm_probe.json, else $HOME/.cache/trainbench/gemm_probe.json;
// "" for "off" (or no HOME).
std::string probe_cache_file(const RunConfig& cfg);

// "cpu=...|isa=...|libtorch=2.11.0|threads=2|dtype=bfloat16|gemms=MxKxN,..." (the products of
// model_gemm_products at the rows the probe times).
std::string probe_cache_key(const RunPlan& plan, int threads);

// Attempts the probe gets before a disturbed measurement is used (and not stored).
inline constexpr int kProbeAttempts = 3;

struct ProbeOutcome {
  GemmProbe probe;
  // summary.json "probe_cache": {file, key, hit, measured_at (UTC), attempts, disturbed,
  // stored}; file is null when off.
  nlohmann::json record;
};

// The cached figures for this run's key, or a measurement (probe_gemm(plan)) of up to
// kProbeAttempts attempts, the first undisturbed one kept and stored (the fastest of them
// when every one was disturbed, then not stored). Rates injected by TB_TEST_GEMM_RATES are
// never read from nor written to the cache. TB_TEST_PROBE_DISTURBED=N (tests) replaces the
// load check's verdicts: the first N attempts disturbed, the others not. A cache file that cannot
// be read or written is warned about once and the run goes on with its own measurement.
ProbeOutcome cached_or_measured_probe(const RunPlan& plan, int threads);

}  // namespace trainbench
