// RunConfig presets, resolved values, run-folder names and the JSON round-trip.
#include "trainbench/core/config.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <vector>

#include <torch/cuda.h>
#include <torch/version.h>
#include <nlohmann/json.hpp>

namespace trainbench {

void apply_preset(RunConfig& cfg, const std::string& name) {
  if (name == "reference") {
    cfg = RunConfig{};
  } else if (name == "quick") {
    // Sized to finish in about a minute on 2 CPU cores while still learning visibly.
    cfg = RunConfig{};
    cfg.num_layer = 2;
    cfg.d_model = 128;
    cfg.num_heads = 4;
    cfg.ff_dim = 512;
    cfg.seq_len = 128;
    cfg.batch_size = 16;
    cfg.steps = 400;
    cfg.eval_every = 200;
    cfg.eval_batches = 10;
    cfg.save_dir = "runs/quick";
  } else {
    throw ConfigError("--preset: '" + name + "' is not allowed; use one of reference|quick");
  }
  cfg.preset = name;
}

std::string resolved_device(const RunConfig& cfg) {
  if (cfg.device == "auto") return torch::cuda::is_available() ? "cuda" : "cpu";
  return cfg.device;
}

std::string resolved_dropout_impl(const RunConfig& cfg) {
  if (cfg.dropout_impl != "auto") return cfg.dropout_impl;
  const bool eager_handcraft = cfg.model == "handcraft" && cfg.compile == 0;
  return eager_handcraft && resolved_device(cfg) == "cpu" ? "parallel" : "native";
}

std::string run_dir_name(const RunConfig& cfg) {
  std::string name =
      cfg.save_dir + "_" + cfg.model + "_layer" + std::to_string(cfg.num_layer) + "_" + cfg.dtype;
  if (cfg.compile) name += "_compiled";
  if (cfg.flash) name += "_flash";
  return name;
}

int64_t resolved_valid_bytes(const RunConfig& cfg, int64_t corpus_bytes) {
  if (cfg.valid_bytes >= 0) return cfg.valid_bytes;
  return std::min<int64_t>(5'000'000, corpus_bytes / 20);
}

// One key per flag, named as the flag without dashes.
// clang-format off
#define TB_CONFIG_FIELDS(X)                                                           \
  X(preset) X(model) X(dtype) X(num_layer) X(flash) X(compile) X(save_dir) X(overwrite) \
  X(seq_len) X(d_model) X(num_heads) X(ff_dim) X(dropout) X(dropout_impl) X(batch_size)   \
  X(lr) X(steps)                                                                          \
  X(data) X(valid_bytes) X(device) X(threads) X(seed) X(log_every) X(eval_every)        \
  X(eval_batches) X(warmup_steps) X(peak_tflops) X(save_model) X(checkpoint_every)      \
  X(keep_checkpoints) X(resume) X(fault_nan_step) X(dist_backend) X(dist_timeout) X(bucket_mb) \
  X(dist_overlap) X(fault_exit_step) \
  X(sdpa_backend) X(fused_adam) X(cuda_graph)
// clang-format on

void to_json(nlohmann::json& j, const RunConfig& cfg) {
  j = nlohmann::json::object();
#define TB_TO_JSON(name) j[#name] = cfg.name;
  TB_CONFIG_FIELDS(TB_TO_JSON)
#undef TB_TO_JSON
}

void from_json(const nlohmann::json& j, RunConfig& cfg) {
#define TB_FROM_JSON(name) \
  if (j.contains(#name)) j.at(#name).get_to(cfg.name);
  TB_CONFIG_FIELDS(TB_FROM_JSON)
#undef TB_FROM_JSON
}

}  // namespace trainbench
