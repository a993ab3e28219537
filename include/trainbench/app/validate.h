// Validation of a whole RunConfig, each value and every combination, before anything starts; and
// the plan it makes: its `auto` choices resolved, once (core/plan.h).
#pragma once

#include "trainbench/core/plan.h"

namespace trainbench {

// Checks every value and combination; throws ConfigError with a one-line message that names
// the flag, the value and what is allowed. Device availability is checked here too, the
// combinations the GPU paths (CUDA graphs, fused Adam, SDPA backends) cannot run, and the
// launch `env` (this process's place in a multi-process run) against the flags. Returns the
// plan of the config: every choice resolved, once (core/plan.h).
RunPlan validate(const RunConfig& cfg, const DistEnv& env = DistEnv{});

// The plan of a validated config in this process (dist: its place in a multi-process run), with
// no check of its own (validate() calls it after its checks; tests and tools call it directly).
// --device auto takes CUDA where a GPU is visible; --dropout_impl auto the fused kernels' masks
// with --compile fused, the parallel mask for eager handcraft models on the CPU, else
// torch::dropout; --lowp_gemm auto the instruction sets' guess (float32 where the CPU lacks the
// dtype's dot-product instructions), which a run replaces by the GEMM probe's measurement
// (with_measured_route) before the model is built; --dist_backend auto nccl on CUDA, gloo on the
// CPU.
RunPlan make_plan(const RunConfig& cfg, const DistEnv& dist = DistEnv{});

}  // namespace trainbench
