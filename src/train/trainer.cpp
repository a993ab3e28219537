// Trainer: one training step and evaluation. The step is what the benchmark times.
#include "trainbench/train/trainer.h"

#include <limits>

#include <ATen/record_function.h>

#include "trainbench/data/batch_loader.h"
#include "trainbench/dist/grad_sync.h"

namespace trainbench {
namespace {

// The precision autocast runs a forward in: the run's for the eager and TorchScript models
// (LibTorch's own mixed precision is what they measure); float32, which leaves autocast off,
// for the fused model, which casts to its compute dtype itself (model/fused_model.cpp).
Precision autocast_precision_(const RunConfig& cfg) {
  return cfg.compile == CompilePath::kFused ? Precision::kFloat32 : cfg.dtype;
}

}  // namespace

Trainer::Trainer(const RunPlan& plan)
    : plan_(plan),
      device_(plan.device),
      autocast_(autocast_precision_(plan.cfg)),
      sdpa_guard_(plan.cfg.flash ? plan.cfg.sdpa_backend : SdpaBackend::kAuto),
      gpu_rows_(plan.cfg.gpu_kernels),
      scaler_(row_of(plan.cfg.dtype).loss_scaled, {}, plan.device, plan.cfg.fused_adam) {
  const RunConfig& cfg = plan.cfg;
  model_ = make_model(plan);
  model_->to(device_);
  if (cfg.fused_adam) {
    FusedAdamOptions o;
    o.lr = cfg.lr;
    fused_adam_ = std::make_unique<FusedAdam>(
        model_->parameters(), o,
        plan.weight_copies() ? model_->make_weight_copies() : std::vector<torch::Tensor>{},
        model_->options().format, cfg.adam_kernel == AdamKernel::kMulti);
  } else {
    optimizer_ = std::make_unique<torch::optim::Adam>(model_->parameters(),
                                                      torch::optim::AdamOptions(cfg.lr));
  }
  if (cfg.cuda_graph) {
    // Eager steps until the last warm-up step, which captures (and replays) the graph.
    graph_ = std::make_unique<StepGraph>([this](const torch::Tensor& b) { return step_body_(b); },
                                         device_, cfg.warmup_steps - 1);
  }
}

torch::Tensor Trainer::step(const torch::Tensor& bytes_in) {
  ++steps_done_;
  if (graph_) return graph_->step(bytes_in);
  const torch::Tensor loss = step_body_(bytes_in.to(device_, /*non_blocking=*/true));
  if (sync_) return torch::scalar_tensor(sync_->mean_loss(), torch::kFloat64);
  return loss;
}

torch::Tensor Trainer::step_body_(const torch::Tensor& bytes) {
  model_->train();
  // Gradients are dropped, not zeroed (PyTorch's set_to_none): backward then writes fresh
  // gradient tensors instead of a memset plus an accumulate into every one.
  if (fused_adam_) {
    fused_adam_->drop_grads();
  } else {
    for (auto& p : model_->parameters()) p.mutable_grad() = torch::Tensor();
  }
  torch::Tensor loss;
  {
    AutocastGuard autocast(device_.type(), autocast_);
    loss = model_->loss(bytes);
  }
  if (plan_.cfg.fault_nan_step > 0 && steps_done_ == plan_.cfg.fault_nan_step) {
    loss = loss + std::numeric_limits<float>::quiet_NaN();  // injected fault (tests)
  }
  if (sync_) sync_->start_step(loss);
  scaler_.scale_loss(loss).backward();
  if (sync_) sync_->finish_step();  // every rank now holds the same averaged gradients
  apply_gradients_();
  return loss.detach();
}

void Trainer::apply_gradients_() {
  RECORD_FUNCTION("trainbench::optimizer", std::vector<c10::IValue>());  // --profile_steps
  std::vector<torch::Tensor> grads;
  if (fused_adam_) {
    grads = fused_adam_->grads();
  } else if (scaler_.enabled()) {
    for (const auto& p : model_->parameters()) grads.push_back(p.grad());
  }
  if (fused_adam_ && scaler_.on_device()) {
    // Sync-free float16 (the scaler keeps its state in tensors with fused Adam, on the CPU
    // too): the kernel unscales by the scale and skips on found_inf itself; the gradients
    // stay scaled (a float16 copy's gradient unscaled in place would lose its small values).
    scaler_.check_(grads);
    fused_adam_->step(scaler_.scale_tensor(), scaler_.found_inf());
    scaler_.update_on_device();
    return;
  }
  const bool found_inf = scaler_.unscale_(grads);  // a host sync when scaling
  if (!found_inf && fused_adam_) fused_adam_->step();
  if (!found_inf && optimizer_) optimizer_->step();
  if (scaler_.on_device()) {
    scaler_.update_on_device();
  } else {
    scaler_.update(found_inf);
  }
}

void Trainer::restore(int64_t steps_done, double scale, int64_t growth_tracker, int64_t skipped) {
  steps_done_ = steps_done;
  model_->resume_at(steps_done);
  scaler_.restore(scale, growth_tracker, skipped);
}

Trainer::EvalSums Trainer::evaluate_sums(const ByteCorpus& corpus,
                                         const std::vector<std::vector<int64_t>>& batches) {
  torch::NoGradGuard no_grad;
  model_->eval();
  double total = 0;
  int64_t count = 0;
  for (const auto& starts : batches) {
    const torch::Tensor bytes = make_batch(corpus, starts, plan_.cfg.seq_len, false).to(device_);
    AutocastGuard autocast(device_.type(), autocast_);
    const double loss = model_->loss(bytes).item<double>();
    total += loss * static_cast<double>(bytes.numel());
    count += bytes.numel();
  }
  model_->train();
  return {total, count};
}

}  // namespace trainbench
