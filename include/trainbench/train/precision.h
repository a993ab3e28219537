// Mixed precision: the autocast guard (bfloat16 and float16, on the CPU and on CUDA) and the
// dynamic loss scaler used with float16 (PyTorch GradScaler rules).
#pragma once

#include <string>
#include <vector>

#include <torch/types.h>

#include "trainbench/core/choices.h"

namespace trainbench {

// Enables autocast to the precision's compute dtype (core/choices.h) for `device` in its scope
// and restores the previous state on exit; the weight-cast cache is cleared when the outermost
// guard closes, so no stale low-precision copy of a weight survives optimizer.step(). Covers
// forward + loss, once per step. A float32 run makes it a no-op.
class AutocastGuard {
 public:
  AutocastGuard(torch::DeviceType device, Precision precision);
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

// Dynamic loss scaling. Disabled (a pass-through) unless the run is float16.
// Host mode (CPU by default): the state is host numbers. Per step: backward(scale_loss(loss)); if
// (unscale_(grads)) skip the optimizer step; update(found_inf).
// Device mode (CUDA, or state_in_tensors: the CPU with fused Adam, whose kernel reads them):
// scale, growth tracker and found_inf are device tensors updated by the
// ATen AMP kernels, so nothing is read back per step unless asked. Per step, either
//   sync-free (fused Adam): check_(grads); FusedAdam::step(scale_tensor(), found_inf());
//                           update_on_device();
//   or with a host decision: if (!unscale_(grads)) optimizer step; update_on_device();
// unscale_ then costs one sync. scale(), growth_tracker() and skipped_steps() read the device
// state back (a sync): for reports and checkpoints only.
class LossScaler {
 public:
  LossScaler(bool enabled, const LossScalerOptions& options = {},
             torch::Device device = torch::kCPU, bool state_in_tensors = false);

  bool enabled() const { return enabled_; }
  bool on_device() const { return on_device_; }
  double scale() const;
  int64_t growth_tracker() const;
  int64_t skipped_steps() const;

  torch::Tensor scale_loss(const torch::Tensor& loss) const;
  // Divides every defined gradient by the scale in place; returns true when any gradient holds
  // an inf or nan (the step must then be skipped). Uses the fused ATen AMP kernel on CUDA.
  bool unscale_(const std::vector<torch::Tensor>& grads);
  // Host mode: applies the GradScaler rule for the step just checked: back off on inf, else
  // grow after growth_interval consecutive good steps.
  void update(bool found_inf);

  // Device mode only. check_ sets found_inf() from the gradients without changing them (for an
  // optimizer that unscales in its kernel); update_on_device applies the GradScaler rule to the
  // device state with found_inf() (at::_amp_update_scale_) and counts a skipped step.
  void check_(const std::vector<torch::Tensor>& grads);
  void update_on_device();
  const torch::Tensor& scale_tensor() const { return scale_t_; }   // [] float32
  const torch::Tensor& found_inf() const { return found_inf_t_; }  // [] float32, 0 or 1

  // Sets the state saved in a checkpoint.
  void restore(double scale, int64_t growth_tracker, int64_t skipped);

 private:
  bool enabled_;
  bool on_device_;
  LossScalerOptions options_;
  double scale_;
  int64_t growth_tracker_ = 0;
  int64_t skipped_ = 0;
  // Device mode: [] tensors; growth tracker int32 as _amp_update_scale_ wants it.
  torch::Tensor scale_t_, growth_t_, found_inf_t_, skipped_t_, one_t_;
};

}  // namespace trainbench
