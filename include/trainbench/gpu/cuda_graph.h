// The whole training step (forward, backward, optimizer, loss-scaler update) captured once as
// a CUDA graph and replayed (--cuda_graph 1): one launch per step instead of hundreds of
// kernel launches from the host. The batch is copied into a static input buffer and the loss
// read from a static output; everything else lives at fixed addresses in the graph's pool.
// The CUDA code sits in cuda_graph.cpp behind TB_WITH_CUDA; a CPU build has the rules only.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include <torch/types.h>

#include "trainbench/core/plan.h"

namespace trainbench {

class StepGraph {
 public:
  // body(bytes [S, B] int64 on the device) → the loss (float32 scalar on the device). It must
  // be capturable: no host sync, no host-side branching on device values.
  using Body = std::function<torch::Tensor(const torch::Tensor& bytes)>;

  // The first eager_steps calls run body eagerly on a side stream (creating lazily allocated
  // state and library workspaces), the next call captures it on that stream and replays it,
  // every later call only replays. Throws RunError in a build without CUDA.
  StepGraph(Body body, torch::Device device, int64_t eager_steps);
  ~StepGraph();
  StepGraph(const StepGraph&) = delete;
  StepGraph& operator=(const StepGraph&) = delete;

  // One step on bytes [S, B] (host or device; the shape must not change). The returned loss is
  // the graph's static output: read it before the next call.
  torch::Tensor step(const torch::Tensor& bytes);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Warm-up steps --cuda_graph 1 needs: eager steps on the side stream, then the capture, all
// inside the untimed warm-up.
inline constexpr int64_t kCudaGraphWarmupSteps = 3;

// The --cuda_graph rules: "" when fine, else the one-line ConfigError message. Called by
// validate() (an explicit --dropout_impl parallel, plan.cfg's, is what the message names).
std::string cuda_graph_config_error(const RunPlan& plan);

}  // namespace trainbench
