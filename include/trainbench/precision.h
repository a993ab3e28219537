// Mixed precision: the autocast guard (bfloat16 on CPU/CUDA, float16 on CUDA) and the dynamic
// loss scaler used with float16 (PyTorch GradScaler rules).
#pragma once

#include <string>
#include <vector>

#include <torch/types.h>

namespace trainbench {

// Lower-precision compute dtype for --dtype, or nullopt for float32.
c10::optional<c10::ScalarType> autocast_dtype(const std::string& dtype);

// Enables autocast for `device` in its scope and restores the previous state on exit; the
// weight-cast cache is cleared when the outermost guard closes, so no stale low-precision copy
// of a weight survives optimizer.step(). Covers forward + loss, once per step. A float32 run
// makes it a no-op.
class AutocastGuard {
 public:
  AutocastGuard(torch::DeviceType device, c10::optional<c10::ScalarType> dtype);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool active_ = false;
  torch::DeviceType device_;
  bool prev_enabled_ = false;
  c10::ScalarType prev_dtype_ = c10::ScalarType::Undefined;
};

struct LossScalerOptions {
  double init_scale = 65536.0;  // 2^16
  double growth_factor = 2.0;   // after growth_interval good steps in a row
  double backoff_factor = 0.5;  // on any inf/nan gradient
  int64_t growth_interval = 2000;
};

// Dynamic loss scaling. Usage per step: backward(scale(loss)); if (unscale_(grads)) skip the
// optimizer step; update(). Disabled (a pass-through) unless the run is float16.
class LossScaler {
 public:
  LossScaler(bool enabled, const LossScalerOptions& options = {});

  bool enabled() const { return enabled_; }
  double scale() const { return scale_; }
  int64_t growth_tracker() const { return growth_tracker_; }
  int64_t skipped_steps() const { return skipped_; }

  torch::Tensor scale_loss(const torch::Tensor& loss) const;
  // Divides every defined gradient by the scale in place; returns true when any gradient holds
  // an inf or nan (the step must then be skipped). Uses the fused ATen AMP kernel on CUDA.
  bool unscale_(const std::vector<torch::Tensor>& grads);
  // Applies the GradScaler rule for the step just checked: back off on inf, else grow after
  // growth_interval consecutive good steps.
  void update(bool found_inf);
  // Sets the state saved in a checkpoint.
  void restore(double scale, int64_t growth_tracker, int64_t skipped) {
    if (enabled_) scale_ = scale;
    growth_tracker_ = growth_tracker;
    skipped_ = skipped;
  }

 private:
  bool enabled_;
  LossScalerOptions options_;
  double scale_;
  int64_t growth_tracker_ = 0;
  int64_t skipped_ = 0;
};

}  // namespace trainbench
