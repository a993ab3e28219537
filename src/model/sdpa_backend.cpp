// SDPA backend switches: the save/force/restore guard, the static rules and the probe that asks
// LibTorch which kernel the run's attention gets.
#include "trainbench/model/sdpa_backend.h"

#include <algorithm>
#include <vector>

#include <ATen/Context.h>

#include "trainbench/core/flags.h"
#include "trainbench/model/precision.h"

namespace trainbench {
namespace {

// The backends --sdpa_backend allows: the flag table's choices (core/flags.cpp).
const std::vector<std::string>& backends_() { return find_flag("sdpa_backend")->choices; }

// The names of LibTorch's sdp::SDPBackend values (math=0, flash=1, efficient=2, cudnn=3,
// overrideable=4).
std::string backend_name_(int64_t choice) {
  static const std::vector<std::string> names = {"math", "flash", "efficient", "cudnn",
                                                 "overrideable"};
  if (choice >= 0 && choice < static_cast<int64_t>(names.size())) return names[choice];
  return "backend_" + std::to_string(choice);
}

std::string flag_prefix_(const std::string& backend) {
  return "--sdpa_backend: '" + backend + "' ";
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

SdpaBackendGuard::SdpaBackendGuard(const std::string& backend) {
  if (backend == "auto") return;
  TORCH_CHECK(std::find(backends_().begin(), backends_().end(), backend) != backends_().end(),
              "unknown SDPA backend '", backend, "'");
  saved_ = sdpa_flags();
  active_ = true;
  SdpaFlags only;  // everything off but the forced one (math too, or it would be the fallback)
  only.flash = backend == "flash";
  only.mem_efficient = backend == "efficient";
  only.cudnn = backend == "cudnn";
  only.math = backend == "math";
  set_sdpa_flags(only);
}

SdpaBackendGuard::~SdpaBackendGuard() {
  if (active_) set_sdpa_flags(saved_);
}

std::string sdpa_backend_config_error(const RunConfig& cfg) {
  const std::string& b = cfg.sdpa_backend;
  if (std::find(backends_().begin(), backends_().end(), b) == backends_().end()) {
    return "--sdpa_backend: '" + b + "' is not allowed; use one of auto|flash|efficient|cudnn|math";
  }
  if (b == "auto") return "";
  if (!cfg.flash) {
    return flag_prefix_(b) +
           "needs --flash 1 (the naive attention path does not call scaled-dot-product "
           "attention); use --flash 1 or --sdpa_backend auto";
  }
  if (b == "math") return "";
  if (resolved_device(cfg) == "cpu") {
    if (b == "efficient" || b == "cudnn") {
      return flag_prefix_(b) +
             "has no CPU kernel (the CPU has flash and math); use --sdpa_backend "
             "auto|flash|math or --device cuda";
    }
    return "";
  }
  if ((b == "flash" || b == "cudnn") && precision(cfg) == Precision::kFloat32) {
    return flag_prefix_(b) +
           "needs --dtype float16|bfloat16 on CUDA (its kernels have no float32 path); use "
           "--sdpa_backend auto|efficient|math or a lower-precision --dtype";
  }
  return "";
}

std::string resolve_sdpa_backend(const RunConfig& cfg, const torch::Device& device) {
  if (!cfg.flash) return "";
  SdpaBackendGuard guard(cfg.sdpa_backend);
  // q, k, v as the attention sees them: [batch, heads, seq, head_dim] in the compute dtype
  // (autocast casts the qkv projection's output), requiring grad as in training. Zeros, not
  // randn: the probe must not move the seeded random stream.
  const auto dtype = autocast_dtype(precision(cfg)).value_or(torch::kFloat);
  const auto opts = torch::TensorOptions().dtype(dtype).device(device).requires_grad(true);
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
  if (cfg.sdpa_backend != "auto" && name != cfg.sdpa_backend) {
    throw ConfigError(flag_prefix_(cfg.sdpa_backend) + "cannot run this attention (" + cfg.dtype +
                      ", head_dim " + std::to_string(cfg.d_model / cfg.num_heads) + ", seq_len " +
                      std::to_string(cfg.seq_len) + " on " + device.str() +
                      "): " + (why.empty() ? "LibTorch picks '" + name + "'" : why) +
                      "; use --sdpa_backend auto");
  }
  if (name.empty()) throw ConfigError("--flash: 1 cannot run here: " + why + "; use --flash 0");
  return name;
}

}  // namespace trainbench
