// SDPA backend switches: the save/force/restore guard, the static rules and the probe that asks
// LibTorch which kernel the run's attention gets.
#include "trainbench/model/sdpa_backend.h"

#include <algorithm>
#include <vector>

#include <ATen/Context.h>

namespace trainbench {
namespace {

// The names of LibTorch's sdp::SDPBackend values (math=0, flash=1, efficient=2, cudnn=3,
// overrideable=4).
std::string backend_name_(int64_t choice) {
  static const std::vector<std::string> names = {"math", "flash", "efficient", "cudnn",
                                                 "overrideable"};
  if (choice >= 0 && choice < static_cast<int64_t>(names.size())) return names[choice];
  return "backend_" + std::to_string(choice);
}

std::string flag_prefix_(SdpaBackend backend) {
  return std::string("--sdpa_backend: '") + name_of(backend) + "' ";
}

}  // namespace

SdpaFlags sdpa_flags() {
  const auto& ctx = at::globalContext();
  SdpaFlags f;
  f.flash = ctx.userEnabledFlashSDP();
  f.math = ctx.userEnabledMathSDP();
  f.mem_efficient = ctx.userEnabledMemEfficientSDP();
  f.cudnn = ctx.userEnabledCuDNNSDP();
  return f;
}

void set_sdpa_flags(const SdpaFlags& f) {
  auto& ctx = at::globalContext();
  ctx.setSDPUseFlash(f.flash);
  ctx.setSDPUseMath(f.math);
  ctx.setSDPUseMemEfficient(f.mem_efficient);
  ctx.setSDPUseCuDNN(f.cudnn);
}

SdpaBackendGuard::SdpaBackendGuard(SdpaBackend backend) {
  if (backend == SdpaBackend::kAuto) return;
  saved_ = sdpa_flags();
  active_ = true;
  SdpaFlags only;  // everything off but the forced one (math too, or it would be the fallback)
  only.flash = backend == SdpaBackend::kFlash;
  only.mem_efficient = backend == SdpaBackend::kEfficient;
  only.cudnn = backend == SdpaBackend::kCudnn;
  only.math = backend == SdpaBackend::kMath;
  set_sdpa_flags(only);
}

SdpaBackendGuard::~SdpaBackendGuard() {
  if (active_) set_sdpa_flags(saved_);
}

std::string sdpa_backend_config_error(const RunPlan& plan) {
  const SdpaBackend b = plan.cfg.sdpa_backend;
  if (b == SdpaBackend::kAuto) return "";
  if (!plan.cfg.flash) {
    return flag_prefix_(b) +
           "needs --flash 1 (the naive attention path does not call scaled-dot-product "
           "attention); use --flash 1 or --sdpa_backend auto";
  }
  if (b == SdpaBackend::kMath) return "";
  if (!plan.cuda()) {
    if (!row_of(b).has_cpu_kernel) {
      return flag_prefix_(b) +
             "has no CPU kernel (the CPU has flash and math); use --sdpa_backend "
             "auto|flash|math or --device cuda";
    }
    return "";
  }
  if (row_of(b).needs_lowp_cuda && !plan.lowp()) {
    return flag_prefix_(b) +
           "needs --dtype float16|bfloat16 on CUDA (its kernels have no float32 path); use "
           "--sdpa_backend auto|efficient|math or a lower-precision --dtype";
  }
  return "";
}

std::string resolve_sdpa_backend(const RunPlan& plan) {
  const RunConfig& cfg = plan.cfg;
  if (!cfg.flash) return "";
  SdpaBackendGuard guard(plan.cfg.sdpa_backend);
  // q, k, v as the attention sees them: [batch, heads, seq, head_dim] in the compute dtype
  // (autocast casts the qkv projection's output), requiring grad as in training. Zeros, not
  // randn: the probe must not move the seeded random stream.
  const auto opts = torch::TensorOptions()
                        .dtype(scalar_type_of(plan.cfg.dtype))
                        .device(plan.device)
                        .requires_grad(true);
  const torch::Tensor q =
      torch::zeros({1, cfg.num_heads, cfg.seq_len, cfg.d_model / cfg.num_heads}, opts);
  int64_t choice = -1;
  std::string why;
  try {
    choice = at::_fused_sdp_choice(q, q, q, {}, 0.0, /*is_causal=*/true);
  } catch (const c10::Error& e) {
    why = e.what_without_backtrace();
    why = why.substr(0, why.find('\n'));
  }
  const std::string name = choice < 0 ? "" : backend_name_(choice);
  const SdpaBackend forced = plan.cfg.sdpa_backend;
  if (forced != SdpaBackend::kAuto && name != name_of(forced)) {
    throw ConfigError(flag_prefix_(forced) + "cannot run this attention (" +
                      name_of(plan.cfg.dtype) + ", head_dim " +
                      std::to_string(cfg.d_model / cfg.num_heads) + ", seq_len " +
                      std::to_string(cfg.seq_len) + " on " + plan.device.str() +
                      "): " + (why.empty() ? "LibTorch picks '" + name + "'" : why) +
                      "; use --sdpa_backend auto");
  }
  if (name.empty()) throw ConfigError("--flash: 1 cannot run here: " + why + "; use --flash 0");
  return name;
}

}  // namespace trainbench
