// --repeat N: N timed repetitions of one configuration, each a fresh bench process (the OS's
// and the allocator's state of a new run, as google/benchmark's --benchmark_repetitions gives
// each repetition a fresh state), in RUN_DIR/rep-1 ... rep-N under one run folder. The parent
// holds RUN_DIR, writes its config.json (the flags, "repeat": N) and after every repetition its
// summary.json: the repetitions' statuses and the statistics of their speeds
// (measure/stats.h). --repetition K runs one of them and refreshes the aggregate, so a sweep can
// interleave configurations (rep 1 of each, then rep 2 of each, ...).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "trainbench/core/config.h"

namespace trainbench {

// "RUN_DIR/rep-K".
std::string repetition_dir(const std::string& run_dir, int64_t k);

// The command line of repetition K's process: `self`, the preset and every flag that differs
// from it, --repeat 1, --run_folder RUN_DIR/rep-K (and --overwrite as given).
std::vector<std::string> repetition_args(const RunConfig& cfg, const std::string& self,
                                         const std::string& run_dir, int64_t k);

// summary.json of a folder of `planned` repetitions, from their own summary.json files:
// status (completed when every one completed; else the first other status, or "incomplete"
// while some have not run), repetitions {planned, completed, folders, statuses}, statistics
// {sequences_per_s, tokens_per_s, step_time_ms_median, mfu, final_train_bpb, final_valid_bpb:
// count, mean, median, stddev, cv, min, max, samples} over the completed ones, and the run
// fields the tables read (sequences_per_s, tokens_per_s, mfu, ...: their medians; step_time_ms
// {median of medians, min, max}; peak_memory_bytes: the largest).
nlohmann::json aggregate_repetitions(const std::string& run_dir, int64_t planned);

struct RepeatResult {
  std::string run_dir;
  nlohmann::json config, summary;
  int exit_code = 0;  // 0 when every repetition run completed; else the first failing one's
};

// Runs the repetitions (all, or --repetition K) one after another as processes of `self` (this
// bench executable). A signal is passed on to the running repetition, which stops as any run
// does; no further one starts. Refuses (ConfigError) a folder in use, one holding other results
// (without --overwrite 1) or the repetitions of another configuration.
RepeatResult run_repetitions(const RunConfig& cfg, const std::string& self);

}  // namespace trainbench
