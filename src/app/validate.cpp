// validate(): every flag's range and every rule between flags in one place (with the launch's
// own rules, dist/dist.h's validate_dist), then the plan they make (make_plan: the `auto`
// choices resolved once).
#include "trainbench/app/validate.h"

#include <filesystem>

#include <torch/cuda.h>

#include "trainbench/core/cpu_isa.h"
#include "trainbench/core/flags.h"
#include "trainbench/core/plan.h"
#include "trainbench/core/run_files.h"
#include "trainbench/dist/dist.h"
#include "trainbench/gpu/cuda_graph.h"
#include "trainbench/kernels/fused_kernels.h"
#include "trainbench/model/sdpa_backend.h"
#include "trainbench/report/env_info.h"

namespace trainbench {
namespace {

DropoutImpl resolve_dropout_(const RunPlan& p, DropoutImpl given) {
  if (given != DropoutImpl::kAuto) return given;
  // The fused kernels' own masks; eager and TorchScript runs LibTorch's torch::dropout, as
  // shipped (bench's parallel mask only where asked for).
  return p.cfg.compile == CompilePath::kFused ? DropoutImpl::kFused : DropoutImpl::kNative;
}

// The sizes, steps and the run folder's flags.
void check_run_shape_(const RunConfig& cfg) {
  if (cfg.d_model % cfg.num_heads != 0) {
    throw ConfigError("--d_model: " + std::to_string(cfg.d_model) +
                      " is not divisible by --num_heads " + std::to_string(cfg.num_heads) +
                      "; allowed: a multiple of num_heads");
  }
  if (!cfg.resume.empty() &&
      !std::filesystem::is_regular_file(run_file(cfg.resume, RunFile::kConfig))) {
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
  // Time to target: judged at evaluations during the run, on enough held-out batches.
  if (cfg.target_bpb > 0 && cfg.eval_every == 0) {
    throw ConfigError("--target_bpb: needs evaluations during the run; give --eval_every N > 0");
  }
  if (cfg.target_bpb > 0 && cfg.eval_batches > 0 && cfg.eval_batches < 4) {
    throw ConfigError("--target_bpb: --eval_batches " + std::to_string(cfg.eval_batches) +
                      " is too few to judge a target; give 4 or more, or 0 for the whole "
                      "held-out range");
  }
  if (cfg.stop_at_target && cfg.target_bpb == 0) {
    throw ConfigError("--stop_at_target: needs --target_bpb");
  }
  if (cfg.adam_kernel == AdamKernel::kMulti && !cfg.fused_adam) {
    throw ConfigError(
        "--adam_kernel: 'multi' needs --fused_adam 1 (it launches bench's Adam "
        "kernel); use --fused_adam 1 or --adam_kernel param");
  }
  if (cfg.save_dir.empty()) throw ConfigError("--save_dir: empty; allowed: a folder path prefix");
  // More threads than this process may run on only slow a run.
  if (cfg.threads > available_cores()) {
    throw ConfigError("--threads: " + std::to_string(cfg.threads) + " is more than the " +
                      std::to_string(available_cores()) +
                      " cores available to this process; allowed: 0 (all of them) to " +
                      std::to_string(available_cores()));
  }
}

// What the torch model cannot do, and the dropout kernels' rules.
void check_model_rules_(const RunPlan& p) {
  const RunConfig& cfg = p.cfg;
  const bool torch_model = cfg.model == ModelKind::kTorch;
  if (!torch_model && !cfg.norm_first) {
    throw ConfigError("--norm_first: 0 is not allowed with --model " +
                      std::string(name_of(cfg.model)) +
                      " (its blocks are pre-LayerNorm, as the original's); use --model torch for "
                      "LibTorch's post-LN layer, or --norm_first 1");
  }
  if (torch_model && cfg.flash) {
    throw ConfigError(
        "--flash: 1 is not allowed with --model torch (nn::TransformerEncoder's C++ attention is "
        "a fixed composite with no fused kernel); use --model handcraft or --flash 0");
  }
  const DropoutImpl given = cfg.dropout_impl;
  if (given == DropoutImpl::kParallel &&
      (torch_model || cfg.compile == CompilePath::kTorchScript)) {
    throw ConfigError("--dropout_impl: 'parallel' is not allowed with " +
                      std::string(torch_model ? "--model torch (its nn layers apply "
                                                "their own dropout)"
                                              : "--compile torchscript (the script "
                                                "uses torch.dropout)") +
                      "; use --dropout_impl auto|native");
  }
  if ((cfg.compile == CompilePath::kFused) != (given == DropoutImpl::kFused) &&
      given != DropoutImpl::kAuto) {
    throw ConfigError("--dropout_impl: '" + std::string(name_of(given)) +
                      "' is not allowed with --compile " + name_of(cfg.compile) +
                      " (the fused kernels apply dropout with their own counter-based masks, "
                      "and only they); use --dropout_impl auto");
  }
}

// The device, the compiled paths and the GEMM route.
void check_compile_rules_(const RunPlan& p) {
  const RunConfig& cfg = p.cfg;
  if (cfg.device == DeviceChoice::kCuda && !torch::cuda::is_available()) {
    throw ConfigError(
        "--device: 'cuda' is not available (no GPU visible, or a build without "
        "CUDA); use --device cpu");
  }
  if (cfg.compile != CompilePath::kNone && cfg.model == ModelKind::kTorch) {
    throw ConfigError("--compile: '" + std::string(name_of(cfg.compile)) +
                      "' is not allowed with --model torch (LibTorch's C++ "
                      "nn::TransformerEncoder has no TorchScript form and no fused twin); use "
                      "--model handcraft or --compile none");
  }
  if (cfg.compile == CompilePath::kFused && !p.cuda()) {
    const std::string why = kernels::cpu_kernels_unavailable();
    if (!why.empty()) throw ConfigError(why);
  }
  // bench's CUDA kernels exist for the architectures they were built for only (cmake/torch.cmake).
  if ((cfg.compile == CompilePath::kFused || cfg.fused_adam) && p.cuda()) {
    const std::string why =
        kernels::cuda_kernels_unavailable(p.device.has_index() ? p.device.index() : 0);
    if (!why.empty()) throw ConfigError(why);
  }
  if (cfg.gpu_kernels != GpuRows::kV1 && !(cfg.compile == CompilePath::kFused && p.cuda())) {
    throw ConfigError("--gpu_kernels: '" + std::string(name_of(cfg.gpu_kernels)) +
                      "' picks the CUDA kernels of --compile fused; this run is --compile " +
                      name_of(cfg.compile) + " on " + p.device_name() +
                      "; use --compile fused on a CUDA device or --gpu_kernels v1");
  }
  if (cfg.lowp_gemm == GemmRoute::kFloat32 && cfg.compile != CompilePath::kFused) {
    throw ConfigError("--lowp_gemm: 'float32' is not allowed with --compile " +
                      std::string(name_of(cfg.compile)) +
                      " (eager and TorchScript runs measure LibTorch's own GEMMs); use "
                      "--compile fused or --lowp_gemm auto");
  }
  if (cfg.compile == CompilePath::kTorchScript && cfg.warmup_steps < kProfilingSteps) {
    throw ConfigError(
        "--warmup_steps: " + std::to_string(cfg.warmup_steps) +
        " with --compile torchscript; allowed: >= " + std::to_string(kProfilingSteps) +
        " (the graph executor profiles and optimizes during the first steps)");
  }
}

void check_save_model_(const RunPlan& p) {
  const RunConfig& cfg = p.cfg;
  const std::string& file = cfg.save_model;
  if (file.empty()) return;
  if (cfg.model == ModelKind::kTorch) {
    throw ConfigError(
        "--save_model: not available with --model torch (no TorchScript form); "
        "use --model handcraft");
  }
  const std::filesystem::path parent = std::filesystem::absolute(file).parent_path();
  std::error_code ec;
  if (!std::filesystem::is_directory(parent, ec)) {
    throw ConfigError("--save_model: folder '" + parent.string() +
                      "' does not exist; allowed: a file path in an existing folder");
  }
  if (std::filesystem::is_directory(file, ec)) {
    throw ConfigError("--save_model: '" + file + "' is a folder; allowed: a file path");
  }
}

}  // namespace

RunPlan validate(const RunConfig& cfg, const DistEnv& env) {
  // Each flag's own range, from the flag table (a choice flag's enum holds only its rows).
  for (const FlagSpec& f : flag_table()) check_flag(f, cfg);
  check_run_shape_(cfg);
  const RunPlan plan = make_plan(cfg, env);
  check_model_rules_(plan);
  check_compile_rules_(plan);
  check_save_model_(plan);
  for (const std::string& problem :
       {sdpa_backend_config_error(plan), cuda_graph_config_error(plan)}) {
    if (!problem.empty()) throw ConfigError(problem);
  }
  validate_dist(plan);
  return plan;
}

RunPlan make_plan(const RunConfig& cfg, const DistEnv& dist) {
  RunPlan p;
  p.cfg = cfg;
  p.dist = dist;
  const bool cuda = cfg.device == DeviceChoice::kCuda ||
                    (cfg.device == DeviceChoice::kAuto && torch::cuda::is_available());
  p.device = !cuda ? c10::Device(c10::DeviceType::CPU)
             : dist.distributed()
                 ? c10::Device(c10::DeviceType::CUDA, static_cast<int8_t>(dist.local_rank))
                 : c10::Device(c10::DeviceType::CUDA);
  p.dropout = resolve_dropout_(p, cfg.dropout_impl);
  p.keep_memory = cfg.keep_memory == KeepMemory::kAuto ? cfg.compile == CompilePath::kFused
                                                       : cfg.keep_memory == KeepMemory::kOn;
  if (!p.has_gemm_choice()) {
    p.gemm_route = GemmRoute::kNative;
    p.gemm_route_by = RouteChosenBy::kOneRoute;
  } else if (cfg.lowp_gemm != GemmRoute::kAuto) {
    p.gemm_route = cfg.lowp_gemm;
    p.gemm_route_by = RouteChosenBy::kFlag;
  } else {
    p.gemm_route =
        has_native_gemm(effective_isa(), cfg.dtype) ? GemmRoute::kNative : GemmRoute::kFloat32;
    p.gemm_route_by = RouteChosenBy::kInstructionSets;
  }
  p.dist_backend = cfg.dist_backend != DistBackend::kAuto ? cfg.dist_backend
                   : p.cuda()                             ? DistBackend::kNccl
                                                          : DistBackend::kGloo;
  return p;
}

}  // namespace trainbench
