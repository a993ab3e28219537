// Validation of a whole RunConfig: each value and every combination, before anything starts.
#pragma once

#include "trainbench/core/plan.h"

namespace trainbench {

// Checks every value and combination; throws ConfigError with a one-line message that names
// the flag, the value and what is allowed. Device availability is checked here too, the
// combinations the GPU paths (CUDA graphs, fused Adam, SDPA backends) cannot run, and the
// launch `env` (this process's place in a multi-process run) against the flags. Returns the
// plan of the config: every choice resolved, once (core/plan.h).
RunPlan validate(const RunConfig& cfg, const DistEnv& env = DistEnv{});

}  // namespace trainbench
