// Data-parallel gradient averaging: gradients are copied into flat buckets as the backward
// pass produces them and each full bucket is all-reduced at once, in a fixed bucket order, so
// communication overlaps the rest of the backward pass (as PyTorch's DDP reducer does).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include <torch/types.h>

#include "trainbench/dist/dist.h"

namespace trainbench {

class GradSync {
 public:
  // params: the model's parameters in registration order. Buckets hold about bucket_bytes of
  // gradients each, filled from the last parameter backwards (the order backward reaches
  // them). overlap false launches every bucket only after backward (for measuring).
  // local_stop tells whether this rank was asked to stop (a signal); the ranks agree on it
  // each step, so that they all stop after the same step.
  GradSync(const std::vector<torch::Tensor>& params, DistContext& dist, int64_t bucket_bytes,
           bool overlap, std::function<bool()> local_stop);
  ~GradSync();  // removes the gradient hooks
  GradSync(const GradSync&) = delete;
  GradSync& operator=(const GradSync&) = delete;

  // Before backward: starts the all-reduce of [loss, stop].
  void start_step(const torch::Tensor& loss);
  // After backward: launches what is left, waits for every bucket, divides by the world size
  // and makes each parameter's .grad a view of its bucket. Throws CollectiveError.
  void finish_step();

  double mean_loss() const { return mean_loss_; }      // the loss averaged over the ranks
  bool stop_requested() const { return stop_; }        // some rank saw a stop signal
  double last_wait_s() const { return last_wait_s_; }  // finish_step's wait: exposed comms
  int64_t num_buckets() const { return static_cast<int64_t>(buckets_.size()); }

 private:
  struct Bucket {
    torch::Tensor flat;          // [n] gradients of its parameters, back to back
    std::vector<size_t> params;  // indices into params_
    size_t ready = 0;            // gradients copied in this step
    std::function<void()> wait;  // set once launched
  };
  void on_grad_(size_t param, const torch::Tensor& grad);
  void launch_ready_();

  DistContext& dist_;
  bool overlap_;
  std::function<bool()> local_stop_;
  std::vector<torch::Tensor> params_;
  std::vector<torch::Tensor> views_;  // per parameter: its slice of a bucket, param-shaped
  std::vector<size_t> bucket_of_;     // per parameter
  std::vector<bool> seen_;            // per parameter: gradient arrived this step
  std::vector<unsigned> hook_ids_;
  std::vector<Bucket> buckets_;
  size_t next_launch_ = 0;  // buckets launch strictly in order on every rank
  torch::Tensor loss_buf_;  // [2] float32: loss, stop
  std::function<void()> loss_wait_;
  double mean_loss_ = 0, last_wait_s_ = 0;
  bool stop_ = false;
};

}  // namespace trainbench
