// One training step (forward, loss, backward, optimizer; precision and gradient sync around it)
// and evaluation sums; the run around it is app/run.h.
#pragma once

#include <memory>
#include <string>

#include <torch/optim/adam.h>
#include <nlohmann/json.hpp>

#include "trainbench/core/plan.h"
#include "trainbench/data/corpus.h"
#include "trainbench/data/sampler.h"
#include "trainbench/dist/dist.h"
#include "trainbench/gpu/cuda_graph.h"
#include "trainbench/kernels/fused_kernels.h"
#include "trainbench/model/model.h"
#include "trainbench/model/sdpa_backend.h"
#include "trainbench/train/fused_adam.h"
#include "trainbench/train/precision.h"

namespace trainbench {

// One optimizer step and evaluation on a model; no timing, no files. Used by run_benchmark
// and directly by tests.
class GradSync;

class Trainer {
 public:
  // The plan's model on the plan's device, its optimizer, loss scaler and attention backend.
  explicit Trainer(const RunPlan& plan);

  // Data parallelism: gradients (and the loss) are averaged over the ranks through `sync`
  // from the next step on; nullptr detaches. The caller owns it.
  void attach(GradSync* sync) { sync_ = sync; }

  // Forward (under autocast, but for the fused model), loss, scaled backward, [gradient
  // all-reduce,] unscale/skip, Adam step; with --cuda_graph 1 a replay of the captured step after
  // the warm-up (StepGraph). bytes: [seq, batch] int64 on any device. Returns the loss (a float32
  // scalar on device; with a GradSync attached, the mean over the ranks as a CPU scalar).
  torch::Tensor step(const torch::Tensor& bytes);
  // Cross-entropy over the given batches, dropout off, as a sum in nats over the predicted
  // bytes and their count (so that ranks can add theirs before dividing).
  struct EvalSums {
    double loss_sum = 0;
    int64_t count = 0;
  };
  EvalSums evaluate_sums(const ByteCorpus& corpus,
                         const std::vector<std::vector<int64_t>>& batches);

  LanguageModel& model() { return *model_; }
  // The optimizer: torch::optim::Adam, or with --fused_adam 1 the fused one (then
  // optimizer() must not be called).
  torch::optim::Adam& optimizer() { return *optimizer_; }
  FusedAdam* fused_adam() { return fused_adam_.get(); }
  const LossScaler& scaler() const { return scaler_; }
  // Restores the step count and the loss scaler from a checkpoint (checkpoint.h).
  void restore(int64_t steps_done, double scale, int64_t growth_tracker, int64_t skipped);

 private:
  // The step on device bytes; capturable with --fused_adam 1 on CUDA (no host sync).
  torch::Tensor step_body_(const torch::Tensor& bytes);
  // Unscale/check, optimizer step (or skip), loss-scaler update.
  void apply_gradients_();

  RunPlan plan_;
  torch::Device device_;
  Precision autocast_;  // the forward's autocast: the run's dtype, float32 (off) when fused
  SdpaBackendGuard sdpa_guard_;     // --sdpa_backend for the trainer's lifetime
  kernels::GpuRowsScope gpu_rows_;  // --gpu_kernels for the trainer's lifetime
  std::shared_ptr<LanguageModel> model_;
  std::unique_ptr<torch::optim::Adam> optimizer_;  // --fused_adam 0
  std::unique_ptr<FusedAdam> fused_adam_;          // --fused_adam 1
  LossScaler scaler_;
  std::unique_ptr<StepGraph> graph_;  // --cuda_graph 1
  int64_t steps_done_ = 0;
  GradSync* sync_ = nullptr;
};

}  // namespace trainbench
