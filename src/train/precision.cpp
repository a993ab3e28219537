// Autocast guard and loss scaler; the only file that touches autocast's global state.
#include "trainbench/train/precision.h"

#include <ATen/autocast_mode.h>

#include "trainbench/core/plan.h"  // scalar_type_of

namespace trainbench {

namespace {

bool autocast_enabled_(torch::DeviceType d) { return at::autocast::is_autocast_enabled(d); }
c10::ScalarType autocast_get_dtype_(torch::DeviceType d) {
  return at::autocast::get_autocast_dtype(d);
}
void autocast_set_(torch::DeviceType d, bool on, c10::ScalarType t) {
  at::autocast::set_autocast_enabled(d, on);
  at::autocast::set_autocast_dtype(d, t);
}

}  // namespace

AutocastGuard::AutocastGuard(torch::DeviceType device, Precision precision) : device_(device) {
  if (precision == Precision::kFloat32) return;
  active_ = true;
  prev_enabled_ = autocast_enabled_(device);
  prev_dtype_ = autocast_get_dtype_(device);
  autocast_set_(device, true, scalar_type_of(precision));
  at::autocast::increment_nesting();
}

AutocastGuard::~AutocastGuard() {
  if (!active_) return;
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  autocast_set_(device_, prev_enabled_, prev_dtype_);
}

LossScaler::LossScaler(bool enabled, const LossScalerOptions& options, torch::Device device,
                       bool state_in_tensors)
    : enabled_(enabled),
      on_device_(enabled && (device.is_cuda() || state_in_tensors)),
      options_(options),
      scale_(enabled ? options.init_scale : 1.0) {
  if (!on_device_) return;
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat).device(device);
  scale_t_ = torch::full(at::IntArrayRef{}, options.init_scale, f32);
  growth_t_ = torch::zeros(at::IntArrayRef{}, f32.dtype(torch::kInt));
  found_inf_t_ = torch::zeros(at::IntArrayRef{}, f32);
  skipped_t_ = torch::zeros(at::IntArrayRef{}, f32);
  one_t_ = torch::ones(at::IntArrayRef{}, f32);
}

double LossScaler::scale() const { return on_device_ ? scale_t_.item<double>() : scale_; }

int64_t LossScaler::growth_tracker() const {
  return on_device_ ? growth_t_.item<int64_t>() : growth_tracker_;
}

int64_t LossScaler::skipped_steps() const {
  return on_device_ ? static_cast<int64_t>(skipped_t_.item<double>()) : skipped_;
}

torch::Tensor LossScaler::scale_loss(const torch::Tensor& loss) const {
  if (!enabled_) return loss;
  return on_device_ ? loss * scale_t_ : loss * scale_;
}

namespace {

std::vector<torch::Tensor> defined_(const std::vector<torch::Tensor>& grads) {
  std::vector<torch::Tensor> out;
  for (const auto& g : grads)
    if (g.defined()) out.push_back(g);
  return out;
}

}  // namespace

bool LossScaler::unscale_(const std::vector<torch::Tensor>& grads) {
  if (!enabled_) return false;
  const std::vector<torch::Tensor> defined = defined_(grads);
  if (on_device_) {
    found_inf_t_.zero_();
    if (!defined.empty()) {
      at::_amp_foreach_non_finite_check_and_unscale_(defined, found_inf_t_, scale_t_.reciprocal());
    }
    return found_inf_t_.item<float>() != 0.0f;  // the one sync of this path
  }
  if (defined.empty()) return false;
  const auto opts = torch::TensorOptions().dtype(torch::kFloat).device(defined[0].device());
  torch::Tensor found_inf = torch::zeros({1}, opts);
  const torch::Tensor inv_scale = torch::full({1}, 1.0 / scale_, opts);
  // One multi-tensor kernel on either device: unscale and flag non-finite values in one pass
  // (LibTorch 2.11 has its CPU twin; the isfinite/all/mul_ composition it replaced read every
  // gradient three times: docs/BENCHMARKS.md).
  at::_amp_foreach_non_finite_check_and_unscale_(defined, found_inf, inv_scale);
  return found_inf.item<float>() != 0.0f;
}

void LossScaler::update(bool found_inf) {
  if (!enabled_) return;
  TORCH_CHECK(!on_device_, "LossScaler::update is the host-mode rule; use update_on_device");
  if (found_inf) {
    scale_ *= options_.backoff_factor;
    growth_tracker_ = 0;
    ++skipped_;
  } else if (++growth_tracker_ == options_.growth_interval) {
    scale_ *= options_.growth_factor;
    growth_tracker_ = 0;
  }
}

void LossScaler::check_(const std::vector<torch::Tensor>& grads) {
  if (!enabled_) return;
  TORCH_CHECK(on_device_, "LossScaler::check_ needs the device mode");
  found_inf_t_.zero_();
  const std::vector<torch::Tensor> defined = defined_(grads);
  // inv_scale 1: flag non-finite values, leave the gradients as they are.
  if (!defined.empty())
    at::_amp_foreach_non_finite_check_and_unscale_(defined, found_inf_t_, one_t_);
}

void LossScaler::update_on_device() {
  if (!enabled_) return;
  TORCH_CHECK(on_device_, "LossScaler::update_on_device needs the device mode");
  at::_amp_update_scale_(scale_t_, growth_t_, found_inf_t_, options_.growth_factor,
                         options_.backoff_factor, options_.growth_interval);
  skipped_t_.add_(found_inf_t_);
}

void LossScaler::restore(double scale, int64_t growth_tracker, int64_t skipped) {
  if (enabled_) scale_ = scale;
  growth_tracker_ = growth_tracker;
  skipped_ = skipped;
  if (on_device_) {
    scale_t_.fill_(scale);
    growth_t_.fill_(growth_tracker);
    skipped_t_.fill_(static_cast<double>(skipped));
  }
}

}  // namespace trainbench
