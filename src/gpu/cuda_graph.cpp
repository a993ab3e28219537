// Whole-step CUDA graph: side-stream warm-up, capture, replay (LIBTORCH_NOTES §4). The only file
// with CUDA graph code; a CPU build compiles the rules and a constructor that refuses.
#include "trainbench/gpu/cuda_graph.h"

#include <torch/version.h>

#ifdef TB_WITH_CUDA
#include <ATen/autocast_mode.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace trainbench {

std::string cuda_graph_config_error(const RunPlan& plan) {
  const RunConfig& cfg = plan.cfg;
  if (!cfg.cuda_graph) return "";
  if (!cfg.fused_adam) {
    return "--cuda_graph: 1 needs --fused_adam 1 (torch::optim::Adam keeps its step count on the "
           "host, which a captured graph would freeze); use --fused_adam 1 or --cuda_graph 0";
  }
  if (cfg.compile == CompilePath::kTorchScript) {
    return "--cuda_graph: 1 is not allowed with --compile torchscript (the TorchScript executor "
           "re-optimizes its graph during the first runs); use --compile none or --cuda_graph 0";
  }
  if (cfg.dropout_impl == DropoutImpl::kParallel) {
    return "--cuda_graph: 1 is not allowed with --dropout_impl parallel (a CPU-only kernel); use "
           "--dropout_impl auto|native";
  }
  if (cfg.warmup_steps < kCudaGraphWarmupSteps) {
    return "--warmup_steps: " + std::to_string(cfg.warmup_steps) +
           " with --cuda_graph 1; allowed: >= " + std::to_string(kCudaGraphWarmupSteps) +
           " (eager steps on a side stream, then the capture)";
  }
  if (cfg.fault_nan_step != 0) {
    return "--fault_nan_step: not supported with --cuda_graph 1 (the captured step cannot "
           "branch on the host's step count); use --cuda_graph 0";
  }
  // float16 needs the sync-free loss scaler: CUDA + --fused_adam 1, both required here anyway.
  if (!plan.cuda()) {
    return std::string("--cuda_graph: 1 needs a CUDA device (this run is on ") +
           plan.device_name() + "); use --cuda_graph 0";
  }
  return "";
}

#ifdef TB_WITH_CUDA

struct StepGraph::Impl {
  Impl(Body b, int64_t n) : body(std::move(b)), eager_steps(n) {}
  Body body;
  int64_t eager_steps;
  int64_t calls = 0;
  c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool();  // warm-up and capture stream
  at::cuda::CUDAGraph graph;
  bool captured = false;
  torch::Tensor static_bytes;  // [S, B] int64 on the device: every batch is copied in here
  torch::Tensor static_loss;   // [] float32: the captured body's output
};

StepGraph::StepGraph(Body body, torch::Device device, int64_t eager_steps)
    : impl_(std::make_unique<Impl>(std::move(body), eager_steps)) {
  TORCH_CHECK(device.is_cuda(), "StepGraph needs a CUDA device, got ", device.str());
}

torch::Tensor StepGraph::step(const torch::Tensor& bytes) {
  Impl& s = *impl_;
  const c10::cuda::CUDAStream current = c10::cuda::getCurrentCUDAStream();
  if (!s.static_bytes.defined()) {
    s.static_bytes = torch::empty(bytes.sizes(), torch::TensorOptions()
                                                     .dtype(bytes.scalar_type())
                                                     .device(torch::kCUDA, current.device_index()));
  }
  TORCH_CHECK(bytes.sizes() == s.static_bytes.sizes(), "CUDA graph step: batch shape ",
              bytes.sizes(), " differs from the captured ", s.static_bytes.sizes());
  s.static_bytes.copy_(bytes, /*non_blocking=*/true);  // on the current stream
  if (s.captured) {
    s.graph.replay();
    return s.static_loss;
  }
  // Warm-up or capture on the side stream, ordered after the copy (and all earlier work).
  at::cuda::CUDAEvent ready;
  ready.record(current);
  ready.block(s.side);
  torch::Tensor loss;
  {
    const c10::cuda::CUDAStreamGuard guard(s.side);
    if (++s.calls <= s.eager_steps) {
      loss = s.body(s.static_bytes);
    } else {
      // Autocast's weight-cast cache would give the capture tensors freed right after it.
      const bool cache = at::autocast::is_autocast_cache_enabled();
      at::autocast::set_autocast_cache_enabled(false);
      try {
        // Thread-local mode: the batch loader's thread may allocate pinned memory meanwhile.
        s.graph.capture_begin({0, 0}, cudaStreamCaptureModeThreadLocal);
        s.static_loss = s.body(s.static_bytes);
        s.graph.capture_end();
      } catch (...) {
        at::autocast::set_autocast_cache_enabled(cache);
        throw;
      }
      at::autocast::set_autocast_cache_enabled(cache);
      s.captured = true;
    }
  }
  at::cuda::CUDAEvent done;
  done.record(s.side);
  done.block(current);
  if (!s.captured) return loss;
  s.graph.replay();  // capturing ran nothing: this is the step's real work
  return s.static_loss;
}

#else  // a build without CUDA

struct StepGraph::Impl {
  bool captured = false;
};

StepGraph::StepGraph(Body, torch::Device, int64_t) {
  throw RunError(std::string("--cuda_graph: this build has no CUDA (LibTorch ") + TORCH_VERSION +
                 " without TB_WITH_CUDA); use --cuda_graph 0");
}

torch::Tensor StepGraph::step(const torch::Tensor&) {
  throw RunError("--cuda_graph: this build has no CUDA");
}

#endif

StepGraph::~StepGraph() = default;

}  // namespace trainbench
