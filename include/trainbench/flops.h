// Model FLOPs per token, peak FLOP/s (flag, GPU table or CPU GEMM probe) and MFU.
#pragma once

#include <string>

#include <torch/types.h>

#include "trainbench/config.h"

namespace trainbench {

// Weights that take part in matmuls: per block qkv 3d² + out d² + FF 2·d·ff, plus the
// output layer d·256. Embedding lookups and the positional table are not matmuls.
int64_t matmul_weight_count(const RunConfig& cfg);

// Training FLOPs per token: 6 × matmul weights + 12 × num_layer × seq_len × d_model
// (attention scores and values, forward + backward). Reference size, 8 layers: 164.4 M.
double flops_per_token(const RunConfig& cfg);

struct PeakFlops {
  double flops_per_s = 0;  // 0: unknown (MFU is then null)
  std::string source;      // "flag", "table:<gpu>", "gemm_probe", or "unknown"
};

// Dense peak of a known GPU for a dtype (float32 means TF32 tensor cores); 0 when unknown.
double gpu_peak_flops(const std::string& device_name, const std::string& dtype);

// Measured GEMM rate (FLOP/s) of square matmuls of size n in `dtype` on the CPU.
double gemm_probe_flops(const std::string& dtype, int64_t n = 1024, double min_seconds = 0.5);

PeakFlops resolve_peak_flops(const RunConfig& cfg, const torch::Device& device,
                             const std::string& device_name);

}  // namespace trainbench
