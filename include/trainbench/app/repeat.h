// --repeat N: N timed repetitions of one configuration, each a fresh bench process (the OS's
// and the allocator's state of a new run, as google/benchmark's --benchmark_repetitions gives
// each repetition a fresh state), in RUN_DIR/rep-1 ... rep-N under one run folder. The parent
// holds RUN_DIR, writes its config.json (the flags, "repeat": N) and after every repetition its
// summary.json: the repetitions' statuses and the statistics of their speeds
// (measure/stats.h). --repetition K runs one of them and refreshes the aggregate, so a sweep can
// interleave configurations (rep 1 of each, then rep 2 of each, ...).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "trainbench/core/config.h"

namespace trainbench {

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
