// Adam in one pass per parameter (--fused_adam 1; the AdamArgs kernel of kernels/fused_kernels.h,
// CPU rows or CUDA): the same rule and hyperparameters as torch::optim::Adam (betas 0.9/0.999,
// eps 1e-8, no weight decay) in the float32 arithmetic of LibTorch's fused CPU Adam, with the
// step counts kept as float32 device tensors that this class increments itself. Nothing in a
// step reads a value back to the host, so the step can run inside a CUDA graph, and with a loss
// scaler's grad_scale/found_inf the kernel unscales and skips a step with inf/nan gradients.
//
// Weight copies (master weights): a parameter may come with a low-precision copy, a leaf of
// its own that the forward reads (LanguageModel::make_weight_copies) and whose gradient the
// backward fills instead of the parameter's. The step then reads that gradient (bfloat16 or
// float16, converted in registers), updates the float32 parameter and writes the copy from the
// new value in the same pass: no per-step cast of the weight, none of its gradient.
#pragma once

#include <string>
#include <vector>

#include <torch/serialize/archive.h>
#include <torch/types.h>

#include "trainbench/core/config.h"
#include "trainbench/kernels/kernel_args.h"

namespace trainbench {

// lr, beta1, beta2, eps: the kernels' own (kernel_args.h).
using FusedAdamOptions = kernels::AdamOptions;

class FusedAdam {
 public:
  // State (exp_avg, exp_avg_sq: zeros like each parameter; step: a float32 zero scalar on its
  // device) is created here, not lazily, so that a CUDA graph captured later finds it.
  // copies: empty, or one per parameter (undefined where none), holding the parameter's value
  // in copy_format, the model's (ModelOptions::format: bfloat16 or float16, stored as such or in
  // float32 on the float32 GEMM route). multi_tensor (--adam_kernel multi): one pass over the
  // parameters of each gradient and copy format (AdamListArgs), not one per parameter; the same
  // numbers.
  FusedAdam(std::vector<torch::Tensor> params, const FusedAdamOptions& options = {},
            std::vector<torch::Tensor> copies = {}, kernels::Format copy_format = {},
            bool multi_tensor = false);

  // The gradient each parameter's step reads (its copy's, where it has one); drop_grads()
  // forgets them all (set to none, as PyTorch's zero_grad does by default).
  std::vector<torch::Tensor> grads() const;
  void drop_grads();

  // One Adam step on the parameters' current gradients (all must be defined). grad_scale and
  // found_inf: float32 [1] tensors on the device (LossScaler::scale_tensor/found_inf); the
  // kernel divides the gradients by grad_scale, and when found_inf != 0 it changes nothing (the
  // step counts are put back on the device), so no host sync is needed.
  void step(const c10::optional<torch::Tensor>& grad_scale = c10::nullopt,
            const c10::optional<torch::Tensor>& found_inf = c10::nullopt);

  // The weight copies: one per parameter, undefined where none.
  const std::vector<torch::Tensor>& copies() const { return copies_; }
  // Per-parameter state, in parameter order.
  const std::vector<torch::Tensor>& exp_avgs() const { return exp_avgs_; }
  const std::vector<torch::Tensor>& exp_avg_sqs() const { return exp_avg_sqs_; }
  const std::vector<torch::Tensor>& steps() const { return steps_; }

  // Checkpoint state: "exp_avg.{i}", "exp_avg_sq.{i}", "step.{i}" for each parameter i. load
  // copies into the existing tensors (their addresses, which a captured graph holds, stay).
  void save(torch::serialize::OutputArchive& archive) const;
  void load(torch::serialize::InputArchive& archive);

 private:
  std::vector<torch::Tensor> params_, copies_, exp_avgs_, exp_avg_sqs_, steps_;
  kernels::Format copy_format_;
  FusedAdamOptions options_;
  bool multi_tensor_ = false;
  void run_lists_(const std::vector<kernels::AdamArgs>& args, c10::DeviceType device);
};

}  // namespace trainbench
