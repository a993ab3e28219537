// Adam as one multi-tensor kernel (at::_fused_adam_, --fused_adam 1): the same rule and
// hyperparameters as torch::optim::Adam (betas 0.9/0.999, eps 1e-8, no weight decay), with the
// step counts kept as float32 device tensors that this class increments itself. Nothing in a
// step reads a value back to the host, so the step can run inside a CUDA graph, and with a loss
// scaler's grad_scale/found_inf the kernel unscales and skips a step with inf/nan gradients.
#pragma once

#include <string>
#include <vector>

#include <torch/serialize/archive.h>
#include <torch/types.h>

#include "trainbench/core/config.h"

namespace trainbench {

struct FusedAdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
};

class FusedAdam {
 public:
  // State (exp_avg, exp_avg_sq: zeros like each parameter; step: a float32 zero scalar on its
  // device) is created here, not lazily, so that a CUDA graph captured later finds it.
  FusedAdam(std::vector<torch::Tensor> params, const FusedAdamOptions& options = {});

  // One Adam step on the parameters' current gradients (all must be defined). grad_scale and
  // found_inf: float32 [1] tensors on the device (LossScaler::scale_tensor/found_inf); the
  // kernel divides the gradients by grad_scale, and when found_inf != 0 it changes nothing (the
  // step counts are put back on the device), so no host sync is needed.
  void step(const c10::optional<torch::Tensor>& grad_scale = c10::nullopt,
            const c10::optional<torch::Tensor>& found_inf = c10::nullopt);

  // Per-parameter state, in parameter order.
  const std::vector<torch::Tensor>& exp_avgs() const { return exp_avgs_; }
  const std::vector<torch::Tensor>& exp_avg_sqs() const { return exp_avg_sqs_; }
  const std::vector<torch::Tensor>& steps() const { return steps_; }

  // Checkpoint state: "exp_avg.{i}", "exp_avg_sq.{i}", "step.{i}" for each parameter i. load
  // copies into the existing tensors (their addresses, which a captured graph holds, stay).
  void save(torch::serialize::OutputArchive& archive) const;
  void load(torch::serialize::InputArchive& archive);

 private:
  std::vector<torch::Tensor> params_, exp_avgs_, exp_avg_sqs_, steps_;
  FusedAdamOptions options_;
};

}  // namespace trainbench
