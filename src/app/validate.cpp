// validate(): every flag's range and every cross-flag rule in one place.
#include "trainbench/app/validate.h"

#include <filesystem>
#include <vector>

#include <torch/cuda.h>

#include "trainbench/core/flags.h"
#include "trainbench/gpu/cuda_graph.h"
#include "trainbench/kernels/fused_kernels.h"
#include "trainbench/model/sdpa_backend.h"

namespace trainbench {

void validate(const RunConfig& cfg) {
  // Each flag's own range or choices, from the flag table.
  for (const FlagSpec& f : flag_table()) check_flag(f, cfg);
  // The rules between flags.
  if (cfg.d_model % cfg.num_heads != 0) {
    throw ConfigError("--d_model: " + std::to_string(cfg.d_model) +
                      " is not divisible by --num_heads " + std::to_string(cfg.num_heads) +
                      "; allowed: a multiple of num_heads");
  }
  if (!cfg.resume.empty() && !std::filesystem::is_regular_file(cfg.resume + "/config.json")) {
    throw ConfigError("--resume: '" + cfg.resume +
                      "' is not a run folder (no config.json); allowed: a folder bench wrote");
  }
  if (cfg.repetition > cfg.repeat || (cfg.repetition > 0 && cfg.repeat == 1)) {
    throw ConfigError("--repetition: " + std::to_string(cfg.repetition) +
                      " needs --repeat N with N >= " + std::to_string(cfg.repetition) +
                      "; allowed: 0 (all of them) to --repeat (" + std::to_string(cfg.repeat) +
                      ")");
  }
  if (!cfg.resume.empty() && cfg.repeat > 1) {
    // --resume alone takes the recorded flags: a folder of repetitions records --repeat N.
    const bool folder_of_reps =
        std::filesystem::is_directory(cfg.resume + "/rep-1") ||
        std::filesystem::is_directory(cfg.resume + "/rep-" + std::to_string(cfg.repetition));
    throw ConfigError(
        folder_of_reps
            ? "--resume: '" + cfg.resume + "' holds repetitions (--repeat " +
                  std::to_string(cfg.repeat) + "); resume one of them: --resume " + cfg.resume +
                  "/rep-K"
            : "--repeat: " + std::to_string(cfg.repeat) +
                  " is not allowed with --resume (a resume continues one run); use --repeat 1");
  }
  if (cfg.warmup_steps >= cfg.steps) {
    throw ConfigError("--warmup_steps: " + std::to_string(cfg.warmup_steps) +
                      " leaves no timed step; allowed: < --steps (" + std::to_string(cfg.steps) +
                      ")");
  }
  if (cfg.profile_steps > 0 && cfg.warmup_steps + cfg.profile_steps >= cfg.steps) {
    throw ConfigError("--profile_steps: " + std::to_string(cfg.profile_steps) +
                      " leaves no timed step; allowed: < --steps - --warmup_steps (" +
                      std::to_string(cfg.steps - cfg.warmup_steps) + ")");
  }
  if (cfg.save_dir.empty()) throw ConfigError("--save_dir: empty; allowed: a folder path prefix");
  if (cfg.model != "torch" && !cfg.norm_first) {
    throw ConfigError("--norm_first: 0 is not allowed with --model " + cfg.model +
                      " (its blocks are pre-LayerNorm, as the original's); use --model torch for "
                      "LibTorch's post-LN layer, or --norm_first 1");
  }
  if (cfg.model == "torch" && cfg.flash) {
    throw ConfigError(
        "--flash: 1 is not allowed with --model torch (nn::TransformerEncoder's C++ attention is "
        "a fixed composite with no fused kernel); use --model handcraft or --flash 0");
  }
  if (dropout_impl(cfg) == DropoutImpl::kParallel &&
      (cfg.model == "torch" || compile_path(cfg) == CompilePath::kTorchScript)) {
    throw ConfigError("--dropout_impl: 'parallel' is not allowed with " +
                      std::string(cfg.model == "torch" ? "--model torch (its nn layers apply "
                                                         "their own dropout)"
                                                       : "--compile torchscript (the script "
                                                         "uses torch.dropout)") +
                      "; use --dropout_impl auto|native");
  }
  if ((compile_path(cfg) == CompilePath::kFused) != (dropout_impl(cfg) == DropoutImpl::kFused) &&
      dropout_impl(cfg) != DropoutImpl::kAuto) {
    throw ConfigError("--dropout_impl: '" + cfg.dropout_impl + "' is not allowed with --compile " +
                      cfg.compile +
                      " (the fused kernels apply dropout with their own counter-based masks, "
                      "and only they); use --dropout_impl auto");
  }
  const bool have_cuda = torch::cuda::is_available();
  if (cfg.device == "cuda" && !have_cuda) {
    throw ConfigError(
        "--device: 'cuda' is not available (no GPU visible, or a build without "
        "CUDA); use --device cpu");
  }
  const std::string device = resolved_device(cfg);
  if (compile_path(cfg) != CompilePath::kNone && cfg.model == "torch") {
    throw ConfigError("--compile: '" + cfg.compile +
                      "' is not allowed with --model torch (LibTorch's C++ "
                      "nn::TransformerEncoder has no TorchScript form and no fused twin); use "
                      "--model handcraft or --compile none");
  }
  if (compile_path(cfg) == CompilePath::kFused && device == "cpu") {
    const std::string why = kernels::cpu_kernels_unavailable();
    if (!why.empty()) throw ConfigError(why);
  }
  if (lowp_gemm(cfg) == LowpGemm::kFloat32 && compile_path(cfg) != CompilePath::kFused) {
    throw ConfigError("--lowp_gemm: 'float32' is not allowed with --compile " + cfg.compile +
                      " (eager and TorchScript runs measure LibTorch's own GEMMs); use "
                      "--compile fused or --lowp_gemm auto");
  }
  if (compile_path(cfg) == CompilePath::kTorchScript && cfg.warmup_steps < kProfilingSteps) {
    throw ConfigError(
        "--warmup_steps: " + std::to_string(cfg.warmup_steps) +
        " with --compile torchscript; allowed: >= " + std::to_string(kProfilingSteps) +
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
  for (const std::string& problem :
       {sdpa_backend_config_error(cfg), cuda_graph_config_error(cfg)}) {
    if (!problem.empty()) throw ConfigError(problem);
  }
}

}  // namespace trainbench
