// Model FLOPs per token, peak FLOP/s (flag, GPU table or CPU GEMM probe) and MFU.
#pragma once

#include <string>
#include <vector>

#include <torch/types.h>
#include <nlohmann/json.hpp>

#include "trainbench/core/config.h"

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
MemoryEstimate estimate_memory(const RunConfig& cfg, int64_t params);
// Parameters of the model the flags describe (embedding, positions, blocks, head), without
// building it.
int64_t parameter_count(const RunConfig& cfg);

struct PeakFlops {
  double flops_per_s = 0;  // 0: unknown (MFU is then null)
  std::string source;      // "flag", "table:<gpu>", "gemm_probe", or "unknown"
  std::string gemm_path;   // the path probed (core/cpu_isa.h gemm_path_name), or ""
  nlohmann::json probe;    // gemm_probe: the shapes, their best rates and the trials; else null
};

// Dense peak of a known GPU for a dtype (float32 means TF32 tensor cores); 0 when unknown.
double gpu_peak_flops(const std::string& device_name, Precision dtype);

// One GEMM shape of the model: [m, k] x [k, n].
struct GemmShape {
  int64_t m = 0, k = 0, n = 0;
};
// The GEMM shapes that carry most of the step's FLOPs: rows [batch * seq, d] against the qkv,
// FF-in and FF-out weights ([d, 3d], [d, ff], [ff, d]).
std::vector<GemmShape> model_gemm_shapes(const RunConfig& cfg);

// The best rate (FLOP/s) of one GEMM shape in `dtype` (torch::kFloat, kBFloat16, kHalf), as
// the run computes it: in the dtype itself, or (float32_rounded) as a float32 GEMM of dtype
// operands with its conversions. Rows are cut down so that one product takes about
// `seconds / trials` (a reference GEMM at 1 GFLOP/s must not stall the start); the best of
// `trials`, since a shared machine's load only ever slows a trial down. *rows_used gets the rows.
double gemm_rate(c10::ScalarType dtype, bool float32_rounded, GemmShape shape, int trials,
                 double seconds, int64_t* rows_used = nullptr);

// The peak for a CPU run: the best rate over model_gemm_shapes(cfg) on the GEMM path the run
// uses (its dtype through LibTorch, or float32 for --compile fused's float32 route), 7 trials
// each within about `seconds` in all.
PeakFlops gemm_probe(const RunConfig& cfg, double seconds = 1.5);

PeakFlops resolve_peak_flops(const RunConfig& cfg, const torch::Device& device,
                             const std::string& device_name);

}  // namespace trainbench
