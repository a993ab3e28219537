// Validation of a whole RunConfig: each value and every combination, before anything starts.
#pragma once

#include "trainbench/core/config.h"

namespace trainbench {

// Checks every value and combination; throws ConfigError with a one-line message that names
// the flag, the value and what is allowed. Device availability is checked here too, and the
// combinations the GPU paths (CUDA graphs, fused Adam, SDPA backends) cannot run.
void validate(const RunConfig& cfg);

}  // namespace trainbench
