// validate(): every flag's range and every cross-flag rule in one place.
#include "trainbench/app/validate.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <vector>

#include <torch/cuda.h>

#include "trainbench/gpu/cuda_graph.h"
#include "trainbench/model/sdpa_backend.h"
#include "trainbench/train/fused_adam.h"

namespace trainbench {
namespace {

std::string join_(const std::vector<std::string>& items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? "|" : "") + items[i];
  return out;
}

void check_choice_(const std::string& flag, const std::string& value,
                   const std::vector<std::string>& allowed) {
  if (std::find(allowed.begin(), allowed.end(), value) == allowed.end()) {
    throw ConfigError("--" + flag + ": '" + value + "' is not allowed; use one of " +
                      join_(allowed));
  }
}

template <typename T>
void check_min_(const std::string& flag, T value, T min) {
  if (value < min) {
    std::ostringstream os;
    os << "--" << flag << ": " << value << " is out of range; allowed: >= " << min;
    throw ConfigError(os.str());
  }
}

}  // namespace

void validate(const RunConfig& cfg) {
  check_choice_("preset", cfg.preset, {"reference", "quick"});
  check_choice_("model", cfg.model, {"torch", "handcraft"});
  check_choice_("dtype", cfg.dtype, {"float32", "float16", "bfloat16"});
  check_choice_("device", cfg.device, {"auto", "cpu", "cuda"});
  check_choice_("dropout_impl", cfg.dropout_impl, {"auto", "native", "parallel"});
  check_min_<int64_t>("num_layer", cfg.num_layer, 1);
  if (cfg.flash != 0 && cfg.flash != 1) {
    throw ConfigError("--flash: " + std::to_string(cfg.flash) + " is not allowed; use 0|1");
  }
  if (cfg.compile != 0 && cfg.compile != 1) {
    throw ConfigError("--compile: " + std::to_string(cfg.compile) + " is not allowed; use 0|1");
  }
  check_min_<int64_t>("seq_len", cfg.seq_len, 2);
  check_min_<int64_t>("d_model", cfg.d_model, 1);
  check_min_<int64_t>("num_heads", cfg.num_heads, 1);
  if (cfg.d_model % cfg.num_heads != 0) {
    throw ConfigError("--d_model: " + std::to_string(cfg.d_model) +
                      " is not divisible by --num_heads " + std::to_string(cfg.num_heads) +
                      "; allowed: a multiple of num_heads");
  }
  check_min_<int64_t>("ff_dim", cfg.ff_dim, 1);
  if (!(cfg.dropout >= 0.0 && cfg.dropout < 1.0)) {
    std::ostringstream os;
    os << "--dropout: " << cfg.dropout << " is out of range; allowed: [0, 1)";
    throw ConfigError(os.str());
  }
  check_min_<int64_t>("batch_size", cfg.batch_size, 1);
  if (!(cfg.lr > 0.0) || !std::isfinite(cfg.lr)) {
    std::ostringstream os;
    os << "--lr: " << cfg.lr << " is out of range; allowed: a finite number > 0";
    throw ConfigError(os.str());
  }
  check_min_<int64_t>("steps", cfg.steps, 1);
  check_min_<int64_t>("valid_bytes", cfg.valid_bytes, -1);
  check_min_<int64_t>("threads", cfg.threads, 0);
  check_min_<int64_t>("seed", cfg.seed, 0);
  check_min_<int64_t>("log_every", cfg.log_every, 1);
  check_min_<int64_t>("eval_every", cfg.eval_every, 0);
  check_min_<int64_t>("eval_batches", cfg.eval_batches, 0);
  check_min_<int64_t>("warmup_steps", cfg.warmup_steps, 0);
  check_min_<int64_t>("fault_nan_step", cfg.fault_nan_step, 0);
  check_min_<int64_t>("fault_exit_step", cfg.fault_exit_step, 0);
  check_choice_("dist_backend", cfg.dist_backend, {"auto", "gloo", "nccl"});
  check_min_<int64_t>("dist_timeout", cfg.dist_timeout, 1);
  if (!(cfg.bucket_mb > 0.0) || !std::isfinite(cfg.bucket_mb)) {
    std::ostringstream os;
    os << "--bucket_mb: " << cfg.bucket_mb << " is out of range; allowed: a number > 0";
    throw ConfigError(os.str());
  }
  if (cfg.dist_overlap != 0 && cfg.dist_overlap != 1) {
    throw ConfigError("--dist_overlap: " + std::to_string(cfg.dist_overlap) +
                      " is not allowed; use 0|1");
  }
  check_min_<int64_t>("checkpoint_every", cfg.checkpoint_every, 0);
  check_min_<int64_t>("keep_checkpoints", cfg.keep_checkpoints, 1);
  if (!cfg.resume.empty() && !std::filesystem::is_regular_file(cfg.resume + "/config.json")) {
    throw ConfigError("--resume: '" + cfg.resume +
                      "' is not a run folder (no config.json); allowed: a folder bench wrote");
  }
  if (cfg.warmup_steps >= cfg.steps) {
    throw ConfigError("--warmup_steps: " + std::to_string(cfg.warmup_steps) +
                      " leaves no timed step; allowed: < --steps (" + std::to_string(cfg.steps) +
                      ")");
  }
  if (!(cfg.peak_tflops >= 0.0) || !std::isfinite(cfg.peak_tflops)) {
    std::ostringstream os;
    os << "--peak_tflops: " << cfg.peak_tflops << " is out of range; allowed: >= 0 (0: auto)";
    throw ConfigError(os.str());
  }
  if (cfg.save_dir.empty()) throw ConfigError("--save_dir: empty; allowed: a folder path prefix");
  if (cfg.model == "torch" && cfg.flash == 1) {
    throw ConfigError(
        "--flash: 1 is not allowed with --model torch (nn::TransformerEncoder's C++ attention is "
        "a fixed composite with no fused kernel); use --model handcraft or --flash 0");
  }
  if (cfg.dropout_impl == "parallel" && (cfg.model == "torch" || cfg.compile == 1)) {
    throw ConfigError("--dropout_impl: 'parallel' is not allowed with " +
                      std::string(cfg.model == "torch" ? "--model torch (its nn layers apply "
                                                         "their own dropout)"
                                                       : "--compile 1 (the script uses "
                                                         "torch.dropout)") +
                      "; use --dropout_impl auto|native");
  }
  const bool have_cuda = torch::cuda::is_available();
  if (cfg.device == "cuda" && !have_cuda) {
    throw ConfigError(
        "--device: 'cuda' is not available (no GPU visible, or a build without "
        "CUDA); use --device cpu");
  }
  const std::string device = resolved_device(cfg);
  if (cfg.compile == 1 && cfg.model == "torch") {
    throw ConfigError(
        "--compile: 1 is not allowed with --model torch (LibTorch's C++ nn::TransformerEncoder "
        "has no TorchScript form); use --model handcraft or --compile 0");
  }
  if (cfg.compile == 1 && cfg.warmup_steps < kProfilingSteps) {
    throw ConfigError("--warmup_steps: " + std::to_string(cfg.warmup_steps) +
                      " with --compile 1; allowed: >= " + std::to_string(kProfilingSteps) +
                      " (the graph executor profiles and optimizes during the first steps)");
  }
  if (!cfg.save_model.empty()) {
    if (cfg.model == "torch") {
      throw ConfigError(
          "--save_model: not available with --model torch (no TorchScript form); "
          "use --model handcraft");
    }
    const std::filesystem::path parent = std::filesystem::absolute(cfg.save_model).parent_path();
    std::error_code ec;
    if (!std::filesystem::is_directory(parent, ec)) {
      throw ConfigError("--save_model: folder '" + parent.string() +
                        "' does not exist; allowed: a file path in an existing folder");
    }
    if (std::filesystem::is_directory(cfg.save_model, ec)) {
      throw ConfigError("--save_model: '" + cfg.save_model + "' is a folder; allowed: a file path");
    }
  }
  for (const std::string& problem : {sdpa_backend_config_error(cfg), cuda_graph_config_error(cfg),
                                     fused_adam_config_error(cfg)}) {
    if (!problem.empty()) throw ConfigError(problem);
  }
}

}  // namespace trainbench
