// Model FLOPs per token, peak FLOP/s (flag, GPU table or CPU GEMM probe) and MFU.
#pragma once

#include <string>
#include <vector>

#include <torch/types.h>
#include <nlohmann/json.hpp>

#include "trainbench/measure/gemm_probe.h"

namespace trainbench {

// Weights that take part in matmuls: per block qkv 3d² + out d² + FF 2·d·ff, plus the
// output layer d·256. Embedding lookups and the positional table are not matmuls.
int64_t matmul_weight_count(const RunConfig& cfg);

// Training FLOPs per token: 6 × matmul weights + 12 × num_layer × seq_len × d_model
// (attention scores and values, forward + backward). Reference size, 8 layers: 164.4 M.
double flops_per_token(const RunConfig& cfg);

// Host memory one training process needs, estimated before anything is allocated. Fitted to
// peak RSS measured at the reference width (1-4 layers, batch 8-16, float32/bfloat16, naive and
// flash; within 10%): the process itself (LibTorch, buffers) ~0.5 GB; per parameter 16 bytes
// (weights, gradients, Adam's two moments) plus 2 for the half-precision copy; per sequence and
// layer the tensors backward keeps, 10·S·d + 3·S·ff + (3 naive | 2 flash)·H·S² elements of 4
// bytes (float32) or 2 (float16/bfloat16); the output layer's logits 3·B·S·256 floats.
struct MemoryEstimate {
  double state_bytes = 0;       // parameters, gradients, optimizer state
  double activation_bytes = 0;  // what the forward pass keeps for backward, whole batch
  double total_bytes = 0;       // with the process's own ~0.5 GB and the logits
};
MemoryEstimate estimate_memory(const RunPlan& plan, int64_t params);
// Parameters of the model the flags describe (embedding, positions, blocks, head), without
// building it.
int64_t parameter_count(const RunConfig& cfg);

struct PeakFlops {
  double flops_per_s = 0;  // 0: unknown (MFU is then null)
  std::string source;      // "flag", "table:<gpu>", "gemm_probe", or "unknown"
  std::string gemm_path;   // the probed path that set the peak (core/cpu_isa.h), or ""
  nlohmann::json probe;    // gemm_probe: GemmProbe::to_json() (every route measured); else null
};

// The peak of a run: --peak_tflops, the GPU table, or on the CPU the fastest product over every
// route the probe measured for the dtype (one peak per dtype and machine, whatever the run's
// route; gemm_path names the route that set it); probe.to_json() goes to summary.json's
// peak_probe.
PeakFlops resolve_peak_flops(const RunPlan& plan, const std::string& device_name,
                             const GemmProbe& probe);

}  // namespace trainbench
