// The fused Adam step (the AdamArgs kernel per parameter), its state and weight copies.
#include "trainbench/train/fused_adam.h"

#include "trainbench/core/errors.h"
#include "trainbench/kernels/fused_kernels.h"

namespace trainbench {

namespace k = trainbench::kernels;

FusedAdam::FusedAdam(std::vector<torch::Tensor> params, const FusedAdamOptions& options,
                     std::vector<torch::Tensor> copies, k::Format copy_format, bool multi_tensor)
    : params_(std::move(params)),
      copies_(std::move(copies)),
      copy_format_(copy_format),
      options_(options),
      multi_tensor_(multi_tensor) {
  torch::NoGradGuard no_grad;
  copies_.resize(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    const torch::Tensor& p = params_[i];
    if (p.scalar_type() != torch::kFloat || !p.is_contiguous()) {
      throw RunError("fused Adam: parameters must be contiguous float32 (the master weights)");
    }
    const torch::Tensor& c = copies_[i];
    if (c.defined() &&
        (!c.sizes().equals(p.sizes()) || !c.is_contiguous() || c.device() != p.device())) {
      throw RunError("fused Adam: a weight copy must be contiguous, of its parameter's shape");
    }
    if (c.defined() && (!k::traits(copy_format.values).half ||
                        c.scalar_type() != k::dtype_of(copy_format.storage))) {
      throw RunError(
          "fused Adam: a weight copy holds bfloat16 or float16 values, stored as such or in "
          "float32 as its format says");
    }
    exp_avgs_.push_back(torch::zeros_like(p, torch::MemoryFormat::Preserve));
    exp_avg_sqs_.push_back(torch::zeros_like(p, torch::MemoryFormat::Preserve));
    // [] float32, as PyTorch keeps them; the kernel reads it on the device.
    steps_.push_back(torch::zeros(at::IntArrayRef{},
                                  torch::TensorOptions().dtype(torch::kFloat).device(p.device())));
  }
}

std::vector<torch::Tensor> FusedAdam::grads() const {
  std::vector<torch::Tensor> out;
  out.reserve(params_.size());
  for (size_t i = 0; i < params_.size(); ++i) {
    out.push_back(copies_[i].defined() ? copies_[i].grad() : params_[i].grad());
  }
  return out;
}

void FusedAdam::drop_grads() {
  for (size_t i = 0; i < params_.size(); ++i) {
    params_[i].mutable_grad() = torch::Tensor();
    if (copies_[i].defined()) copies_[i].mutable_grad() = torch::Tensor();
  }
}

void FusedAdam::step(const c10::optional<torch::Tensor>& grad_scale,
                     const c10::optional<torch::Tensor>& found_inf) {
  torch::NoGradGuard no_grad;
  const std::vector<torch::Tensor> grads = this->grads();
  for (const auto& g : grads) TORCH_CHECK(g.defined(), "fused Adam: a parameter has no gradient");
  bool any_copy = false;
  for (const auto& c : copies_) any_copy = any_copy || c.defined();
  // The step counts are ours (as in PyTorch's _fused_adam): one multi-tensor add.
  at::_foreach_add_(steps_, 1.0);
  if (!any_copy && !params_.empty() && params_[0].is_cpu() &&
      !k::cpu_kernels_unavailable().empty()) {
    // A CPU without the rows' instruction sets (AVX2/FMA/F16C): LibTorch's fused Adam, which
    // runs anywhere (copies exist only on the fused path, which such a CPU is refused).
    at::_fused_adam_(params_, grads, exp_avgs_, exp_avg_sqs_, {}, steps_, options_.lr,
                     options_.beta1, options_.beta2, 0.0, options_.eps, false, false, grad_scale,
                     found_inf);
  } else {
    const torch::Tensor scale = grad_scale.value_or(torch::Tensor()),
                        inf = found_inf.value_or(torch::Tensor());  // undefined: 1 and 0
    std::vector<torch::Tensor> dense;  // the gradients as the kernels read them, kept alive
    std::vector<k::AdamArgs> args;
    for (size_t i = 0; i < params_.size(); ++i) {
      if (params_[i].numel() == 0) continue;
      dense.push_back(grads[i].contiguous());
      args.push_back(k::adam_args(params_[i], exp_avgs_[i], exp_avg_sqs_[i], steps_[i],
                                  dense.back(), copies_[i], copy_format_, scale, inf, options_));
    }
    const auto device = params_.empty() ? c10::DeviceType::CPU : params_[0].device().type();
    if (multi_tensor_) {
      run_lists_(args, device);
    } else {
      for (const k::AdamArgs& a : args) k::run(a, device);
    }
  }
  if (found_inf.has_value()) {
    // A skipped step must not count: subtract found_inf (0 or 1) on the device, no sync.
    at::_foreach_sub_(steps_, std::vector<torch::Tensor>(steps_.size(), found_inf->reshape({})));
  }
}

void FusedAdam::run_lists_(const std::vector<k::AdamArgs>& args, c10::DeviceType device) {
  // A pass per gradient and copy format, kAdamListSize parameters at most, in parameter order.
  std::vector<bool> done(args.size(), false);
  for (size_t i = 0; i < args.size(); ++i) {
    if (done[i]) continue;
    std::vector<k::AdamArgs> list;
    for (size_t j = i; j < args.size() && list.size() < k::kAdamListSize; ++j) {
      if (!done[j] && args[j].formats() == args[i].formats()) {
        list.push_back(args[j]);
        done[j] = true;
      }
    }
    k::run(k::adam_list_args(list), device);
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
