// Autocast guard and loss scaler; the only file that touches autocast's global state.
#include "trainbench/precision.h"

#include <ATen/autocast_mode.h>

#include "trainbench/torch_compat.h"

namespace trainbench {

c10::optional<c10::ScalarType> autocast_dtype(const std::string& dtype) {
  if (dtype == "bfloat16") return c10::ScalarType::BFloat16;
  if (dtype == "float16") return c10::ScalarType::Half;
  return c10::nullopt;
}

namespace {

#if TB_TORCH_AT_LEAST(2, 4)
bool autocast_enabled_(torch::DeviceType d) { return at::autocast::is_autocast_enabled(d); }
c10::ScalarType autocast_get_dtype_(torch::DeviceType d) {
  return at::autocast::get_autocast_dtype(d);
}
void autocast_set_(torch::DeviceType d, bool on, c10::ScalarType t) {
  at::autocast::set_autocast_enabled(d, on);
  at::autocast::set_autocast_dtype(d, t);
}
#else
bool autocast_enabled_(torch::DeviceType d) {
  return d == torch::kCUDA ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
}
c10::ScalarType autocast_get_dtype_(torch::DeviceType d) {
  return d == torch::kCUDA ? at::autocast::get_autocast_gpu_dtype()
                           : at::autocast::get_autocast_cpu_dtype();
}
void autocast_set_(torch::DeviceType d, bool on, c10::ScalarType t) {
  if (d == torch::kCUDA) {
    at::autocast::set_enabled(on);
    at::autocast::set_autocast_gpu_dtype(t);
  } else {
    at::autocast::set_cpu_enabled(on);
    at::autocast::set_autocast_cpu_dtype(t);
  }
}
#endif

}  // namespace

AutocastGuard::AutocastGuard(torch::DeviceType device, c10::optional<c10::ScalarType> dtype)
    : device_(device) {
  if (!dtype) return;
  active_ = true;
  prev_enabled_ = autocast_enabled_(device);
  prev_dtype_ = autocast_get_dtype_(device);
  autocast_set_(device, true, *dtype);
  at::autocast::increment_nesting();
}

AutocastGuard::~AutocastGuard() {
  if (!active_) return;
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  autocast_set_(device_, prev_enabled_, prev_dtype_);
}

LossScaler::LossScaler(bool enabled, const LossScalerOptions& options)
    : enabled_(enabled), options_(options), scale_(enabled ? options.init_scale : 1.0) {}

torch::Tensor LossScaler::scale_loss(const torch::Tensor& loss) const {
  return enabled_ ? loss * scale_ : loss;
}

bool LossScaler::unscale_(const std::vector<torch::Tensor>& grads) {
  if (!enabled_) return false;
  std::vector<torch::Tensor> defined;
  for (const auto& g : grads)
    if (g.defined()) defined.push_back(g);
  if (defined.empty()) return false;
  const auto opts = torch::TensorOptions().dtype(torch::kFloat).device(defined[0].device());
  torch::Tensor found_inf = torch::zeros({1}, opts);
  const torch::Tensor inv_scale = torch::full({1}, 1.0 / scale_, opts);
  if (defined[0].is_cuda()) {
    // One fused multi-tensor kernel: unscale and flag non-finite values.
    at::_amp_foreach_non_finite_check_and_unscale_(defined, found_inf, inv_scale);
  } else {
    // The fused kernel is CUDA-only in LibTorch < 2.3; the same rule written out.
    for (auto& g : defined) {
      found_inf.logical_or_(g.isfinite().all().logical_not().to(torch::kFloat).view({1}));
      g.mul_(inv_scale.to(g.scalar_type()));
    }
  }
  return found_inf.item<float>() != 0.0f;
}

void LossScaler::update(bool found_inf) {
  if (!enabled_) return;
  if (found_inf) {
    scale_ *= options_.backoff_factor;
    growth_tracker_ = 0;
    ++skipped_;
  } else if (++growth_tracker_ == options_.growth_interval) {
    scale_ *= options_.growth_factor;
    growth_tracker_ = 0;
  }
}

}  // namespace trainbench
