// run_benchmark: one whole benchmark run (set-up, the step loop, the result files).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "trainbench/core/config.h"
#include "trainbench/dist/dist.h"

namespace trainbench {

// How a run ended (summary.json "status"; the report adds "killed" and "running" for folders
// without one).
enum class RunStatus { kCompleted, kInterrupted, kDiverged, kFailed };
// "completed" | "interrupted" | "diverged" | "failed"
const char* status_name(RunStatus status);

struct RunResult {
  std::string run_dir;
  RunStatus status = RunStatus::kCompleted;
  int stop_signal = 0;  // the signal that interrupted the run, or 0
  nlohmann::json summary;
};

// The whole benchmark for a validated config. Data problems and an occupied run folder throw
// ConfigError before anything is written; failures afterwards are recorded in summary.json.
// env: this process's place in a multi-process run (rank 0 alone writes the run folder).
RunResult run_benchmark(const RunConfig& cfg, const DistEnv& env = DistEnv{});

}  // namespace trainbench
