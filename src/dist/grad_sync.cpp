// Bucketed, overlapped gradient all-reduce (see grad_sync.h).
#include "trainbench/dist/grad_sync.h"

#include <chrono>

namespace trainbench {

GradSync::GradSync(const std::vector<torch::Tensor>& params, DistContext& dist,
                   int64_t bucket_bytes, bool overlap, std::function<bool()> local_stop)
    : dist_(dist), overlap_(overlap), local_stop_(std::move(local_stop)), params_(params) {
  const size_t n = params_.size();
  views_.resize(n);
  bucket_of_.resize(n);
  seen_.assign(n, false);
  // Group parameters from the last to the first: backward produces their gradients roughly in
  // that order, so early buckets fill (and launch) while backward is still running.
  std::vector<std::vector<size_t>> groups;
  int64_t filled = 0;
  for (size_t k = n; k-- > 0;) {
    const torch::Tensor& p = params_[k];
    const int64_t bytes = p.numel() * static_cast<int64_t>(p.element_size());
    const bool new_group = groups.empty() || (filled > 0 && filled + bytes > bucket_bytes) ||
                           params_[groups.back().front()].scalar_type() != p.scalar_type() ||
                           params_[groups.back().front()].device() != p.device();
    if (new_group) {
      groups.emplace_back();
      filled = 0;
    }
    groups.back().push_back(k);
    filled += bytes;
  }
  for (const auto& g : groups) {
    Bucket b;
    int64_t total = 0;
    for (size_t k : g) total += params_[k].numel();
    b.flat = torch::zeros({total}, params_[g.front()].options().requires_grad(false));
    int64_t offset = 0;
    for (size_t k : g) {
      const int64_t numel = params_[k].numel();
      views_[k] = b.flat.narrow(0, offset, numel).view(params_[k].sizes());
      bucket_of_[k] = buckets_.size();
      offset += numel;
    }
    b.params = g;
    buckets_.push_back(std::move(b));
  }
  // A leaf's hook sees its whole gradient once per backward, before it is accumulated.
  for (size_t k = 0; k < n; ++k) {
    hook_ids_.push_back(
        params_[k].register_hook([this, k](const torch::Tensor& grad) { on_grad_(k, grad); }));
  }
}

GradSync::~GradSync() {
  for (size_t k = 0; k < hook_ids_.size(); ++k) params_[k].remove_hook(hook_ids_[k]);
}

void GradSync::start_step(const torch::Tensor& loss) {
  const float stop = local_stop_ && local_stop_() ? 1.0f : 0.0f;
  loss_buf_ = torch::stack({loss.detach().to(torch::kFloat).reshape({}),
                            torch::full({}, stop, loss.options().dtype(torch::kFloat))});
  loss_wait_ = dist_.allreduce_async({loss_buf_}, ReduceOp::kSum);
  std::fill(seen_.begin(), seen_.end(), false);
  for (auto& b : buckets_) {
    b.ready = 0;
    b.wait = nullptr;
  }
  next_launch_ = 0;
}

void GradSync::on_grad_(size_t param, const torch::Tensor& grad) {
  if (seen_[param]) return;  // a second backward in one step is not ours to average
  seen_[param] = true;
  views_[param].copy_(grad);
  ++buckets_[bucket_of_[param]].ready;
  if (overlap_) launch_ready_();
}

void GradSync::launch_ready_() {
  // Strictly in bucket order, so every rank issues the same sequence of collectives.
  while (next_launch_ < buckets_.size() &&
         buckets_[next_launch_].ready == buckets_[next_launch_].params.size()) {
    Bucket& b = buckets_[next_launch_++];
    b.wait = dist_.allreduce_async({b.flat}, ReduceOp::kSum);
  }
}

void GradSync::finish_step() {
  const auto t0 = std::chrono::steady_clock::now();
  // A parameter that got no gradient this step contributes zeros (every rank must send the
  // same buckets).
  for (size_t k = 0; k < params_.size(); ++k) {
    if (!seen_[k]) {
      seen_[k] = true;
      views_[k].zero_();
      ++buckets_[bucket_of_[k]].ready;
    }
  }
  launch_ready_();
  const double inv_world = 1.0 / dist_.world_size();
  for (auto& b : buckets_) {
    b.wait();
    b.flat.mul_(inv_world);
  }
  for (size_t k = 0; k < params_.size(); ++k) params_[k].mutable_grad() = views_[k];
  loss_wait_();
  const torch::Tensor reduced = loss_buf_.to(torch::kCPU);
  mean_loss_ = reduced[0].item<double>() * inv_world;
  stop_ = reduced[1].item<double>() > 0;
  last_wait_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace trainbench
