// The fused Adam step (at::_fused_adam_), its state and the availability rules.
#include "trainbench/train/fused_adam.h"

namespace trainbench {

FusedAdam::FusedAdam(std::vector<torch::Tensor> params, const FusedAdamOptions& options)
    : params_(std::move(params)), options_(options) {
  torch::NoGradGuard no_grad;
  for (const auto& p : params_) {
    exp_avgs_.push_back(torch::zeros_like(p, torch::MemoryFormat::Preserve));
    exp_avg_sqs_.push_back(torch::zeros_like(p, torch::MemoryFormat::Preserve));
    // [] float32, as PyTorch keeps them; the kernel reads it on the device.
    steps_.push_back(torch::zeros(at::IntArrayRef{},
                                  torch::TensorOptions().dtype(torch::kFloat).device(p.device())));
  }
}

void FusedAdam::step(const c10::optional<torch::Tensor>& grad_scale,
                     const c10::optional<torch::Tensor>& found_inf) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> grads;
  grads.reserve(params_.size());
  for (const auto& p : params_) {
    TORCH_CHECK(p.grad().defined(), "fused Adam: a parameter has no gradient");
    grads.push_back(p.grad());
  }
  // The caller owns the step counts (as in PyTorch's _fused_adam): one multi-tensor add.
  at::_foreach_add_(steps_, 1.0);
  at::_fused_adam_(params_, grads, exp_avgs_, exp_avg_sqs_, /*max_exp_avg_sqs=*/{}, steps_,
                   options_.lr, options_.beta1, options_.beta2, /*weight_decay=*/0.0, options_.eps,
                   /*amsgrad=*/false, /*maximize=*/false, grad_scale, found_inf);
  if (found_inf.has_value()) {
    // A skipped step must not count: subtract found_inf (0 or 1) on the device, no sync.
    at::_foreach_sub_(steps_, std::vector<torch::Tensor>(steps_.size(), found_inf->reshape({})));
  }
}

void FusedAdam::save(torch::serialize::OutputArchive& archive) const {
  for (size_t i = 0; i < params_.size(); ++i) {
    archive.write("exp_avg." + std::to_string(i), exp_avgs_[i], /*is_buffer=*/true);
    archive.write("exp_avg_sq." + std::to_string(i), exp_avg_sqs_[i], /*is_buffer=*/true);
    archive.write("step." + std::to_string(i), steps_[i], /*is_buffer=*/true);
  }
}

void FusedAdam::load(torch::serialize::InputArchive& archive) {
  torch::NoGradGuard no_grad;
  auto read_into = [&](const std::string& key, torch::Tensor& dst) {
    torch::Tensor t;
    if (!archive.try_read(key, t, /*is_buffer=*/true)) {
      throw RunError("checkpoint has no fused Adam state '" + key +
                     "' (written with --fused_adam 0, or for another model)");
    }
    if (!t.sizes().equals(dst.sizes())) {
      throw RunError("checkpoint's fused Adam state '" + key + "' has another shape");
    }
    dst.copy_(t);
  };
  for (size_t i = 0; i < params_.size(); ++i) {
    read_into("exp_avg." + std::to_string(i), exp_avgs_[i]);
    read_into("exp_avg_sq." + std::to_string(i), exp_avg_sqs_[i]);
    read_into("step." + std::to_string(i), steps_[i]);
  }
}

}  // namespace trainbench
