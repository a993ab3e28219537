// Checkpoints and resume: model, optimizer, loss scaler, step count (which fixes the sampler
// position) and the RNG state, written atomically into the run folder, newest N kept.
#pragma once

#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "trainbench/core/config.h"
#include "trainbench/train/trainer.h"

namespace trainbench {

// Writes run_dir/checkpoint-{step}.pt (temp file + rename), then removes all but the newest
// `keep` checkpoints. Throws RunError on failure; earlier checkpoints are left intact.
void save_checkpoint(const std::string& run_dir, int64_t step, Trainer& trainer, int64_t keep);

// The newest checkpoint file in run_dir, or "" when there is none.
std::string latest_checkpoint(const std::string& run_dir);

// Restores trainer from the newest checkpoint in run_dir that reads whole (its size and CRC-32
// match the record written with it, and LibTorch reads it); each newer damaged one is named in
// a warning line and left in place. Returns {path, step}; throws ConfigError (exit 2) naming
// every checkpoint and why when none reads whole.
std::pair<std::string, int64_t> load_newest_whole_checkpoint(const std::string& run_dir,
                                                             Trainer& trainer);

// The keys of two resolved configs that differ, ignoring those that may change on resume
// (steps, logging and evaluation cadence, checkpointing, threads, output paths).
std::vector<std::string> resume_config_differences(const nlohmann::json& saved,
                                                   const nlohmann::json& now);

}  // namespace trainbench
