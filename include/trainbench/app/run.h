// run_benchmark: one whole benchmark run (set-up, the step loop, the result files).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "trainbench/core/plan.h"
#include "trainbench/dist/dist.h"

namespace trainbench {

// How a run ended (summary.json "status"; the report adds "killed" and "running" for folders
// without one).
enum class RunStatus { kCompleted, kInterrupted, kDiverged, kFailed, kLast = kFailed };
template <>
struct ChoiceTable<RunStatus> {
  static constexpr std::array<ChoiceRow<RunStatus>, 4> rows = {{
      {RunStatus::kCompleted, "completed", "every step ran"},
      {RunStatus::kInterrupted, "interrupted", "stopped by a signal, with a checkpoint"},
      {RunStatus::kDiverged, "diverged", "the loss became NaN or infinite"},
      {RunStatus::kFailed, "failed", "an error after training started"},
  }};
};
static_assert(choices_in_order<RunStatus>(), "one row per RunStatus, in order");

struct RunResult {
  std::string run_dir;
  RunStatus status = RunStatus::kCompleted;
  int stop_signal = 0;  // the signal that interrupted the run, or 0
  nlohmann::json summary;
};

// The whole benchmark for the plan of a validated config (its DistEnv: this process's place in
// a multi-process run; rank 0 alone writes the run folder). Data problems and an occupied run
// folder throw ConfigError before anything is written; failures afterwards are recorded in
// summary.json.
RunResult run_benchmark(const RunPlan& plan);
// The same for a config that is planned here (tests, tools).
RunResult run_benchmark(const RunConfig& cfg, const DistEnv& env = DistEnv{});

}  // namespace trainbench
