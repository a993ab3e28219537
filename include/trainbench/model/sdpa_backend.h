// Which kernel flash attention (--flash 1) runs: an RAII guard over LibTorch's process-global
// scaled-dot-product-attention switches (--sdpa_backend), the checks that a forced backend can
// run, and the backend the run's attention actually uses (recorded in config.json/summary.json).
#pragma once

#include <string>

#include <torch/types.h>

#include "trainbench/core/plan.h"

namespace trainbench {

// The global SDPA switches (at::globalContext()'s userEnabled*SDP flags).
struct SdpaFlags {
  bool flash = true;
  bool mem_efficient = false;
  bool math = true;
  bool cudnn = false;
  bool operator==(const SdpaFlags&) const = default;
};

SdpaFlags sdpa_flags();
void set_sdpa_flags(const SdpaFlags& flags);

// Saves the global switches, enables only `backend` and restores the saved switches on exit;
// kAuto changes nothing. Not copyable.
class SdpaBackendGuard {
 public:
  explicit SdpaBackendGuard(SdpaBackend backend);
  ~SdpaBackendGuard();
  SdpaBackendGuard(const SdpaBackendGuard&) = delete;
  SdpaBackendGuard& operator=(const SdpaBackendGuard&) = delete;

 private:
  bool active_ = false;
  SdpaFlags saved_;
};

// The --sdpa_backend rules that need no kernel launch (--flash, device, dtype): "" when fine,
// else the one-line ConfigError message. Called by validate().
std::string sdpa_backend_config_error(const RunPlan& plan);

// The backend the run's attention uses: "" when --flash 0 (no SDPA call), else math | flash |
// efficient | cudnn | overrideable, asked of LibTorch (at::_fused_sdp_choice) for inputs of
// the run's head shape, dtype and device under the run's --sdpa_backend (on the CPU: flash, or
// math when forced). Throws ConfigError when a forced backend cannot run these inputs.
std::string resolve_sdpa_backend(const RunPlan& plan);

}  // namespace trainbench
