// Pieces of a run that need no run state: the process's peak memory, the per-rank seeds, the
// multi-process part of summary.json and the set-up warnings.
#pragma once

#include <cstdint>
#include <vector>

#include <torch/types.h>
#include <nlohmann/json.hpp>

#include "trainbench/core/timing.h"
#include "trainbench/dist/dist.h"
#include "trainbench/dist/grad_sync.h"
#include "trainbench/model/model.h"

namespace trainbench {

// Peak memory of the run: the CUDA caching allocator's peak on a GPU, else the peak RSS.
int64_t peak_memory_bytes(const torch::Device& device);

// The dropout seed of rank `rank` (> 0) at `step`: a resumed run continues every rank exactly.
uint64_t rank_step_seed(int64_t seed, int rank, int64_t step);

// Warnings about the set-up (a non-Release build, cores left idle).
void warn_about_setup(int threads, int local_world);

// The multi-process part of summary.json: per-rank step and communication times, gathered with
// one all-reduce, and whether every replica holds the same parameters.
nlohmann::json dist_summary(DistContext& dist, const GradSync& sync, LanguageModel& model,
                            const StepStats& stats, const std::vector<double>& comm_ms);

}  // namespace trainbench
