// Each part of a profiled step beside its limit: the work each profile category does in one
// step (GEMM FLOPs, or bytes the row kernels, copies and the optimizer move), a measured
// memory bandwidth, and the bound that work gives at the probed GEMM rate and that bandwidth.
// A user reads how far each part is from the machine and where the time above it goes.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include <torch/types.h>
#include <nlohmann/json.hpp>

#include "trainbench/core/plan.h"

namespace trainbench {

// One category's work per step of one process.
struct CategoryWork {
  double flops = 0;  // GEMM-like FLOPs, bounded by the GEMM rate
  double bytes = 0;  // memory traffic, bounded by the bandwidth
};

// The work of one step by profile category (measure/profile.h's names), from the model's shapes:
// N = batch * seq rows, e = the compute dtype's bytes (4, or 2 for bfloat16/float16), L layers.
//   gemm: 6 x the matmul weights x N (forward, input and weight gradients), plus the attention
//     products 12 L S d N with explicit scores (with --flash 1 they are the attention kernel's);
//   attention (explicit scores): the softmax over [B*H, S, S] scores, 2e each forward (read,
//     write) and 3e backward (probabilities, their gradient, the scores' gradient), per layer;
//   normalisation: per LayerNorm boundary (2 per layer) the residual add, dropout and
//     LayerNorm, forward (8 + 2e) d bytes per row, backward (12 + 2e) d;
//   pointwise: the FF hidden's bias, ReLU and dropout, 2e forward and 3e backward per element
//     of [N, ff] per layer;
//   copy: the conversions the math needs: the weights rounded to the dtype each step (4 + e per
//     parameter, bfloat16/float16, none where fused Adam writes the copies), and the attention's
//     heads passes (explicit scores); the float32 route converts nothing else (its GEMM
//     operands are float32 storage), and every other copy is above the bound;
//   loss: the head's logits [N, 256]: written, read and overwritten by their gradient, 3e (on
//     the float32 route 3 x 4: float32 storage);
//   optimizer: Adam reads parameter, gradient and two moments and writes three, 28 bytes per
//     parameter.
// These are the fused kernels' one pass each way; eager paths move more and show it as time
// above the bound.
std::map<std::string, CategoryWork> step_work(const RunPlan& plan, int64_t params);

// A STREAM-style triad, a = b + s c (LibTorch's add kernel on the run's threads) over arrays of
// `array_bytes` each (well beyond the caches): the best bytes/s of `trials`, counting the 4
// transfers the memory really makes (b and c read, a written, and a read first: a store to a
// line not in cache loads it), so that Adam's in-place pass, which writes only what it has
// just read, is not measured faster than the machine.
double memory_bandwidth_probe(const torch::Device& device, int64_t array_bytes = 64 << 20,
                              int trials = 5);

// summary.json's profile "bounds": for each category with work {"ms" (profiled), "flops",
// "bytes", "bound_ms" = (flops / gemm_flops_per_s + bytes / bytes_per_s) in ms, "times"
// (ms / bound_ms)}, "step" {"ms", "bound_ms" (the categories' bounds together), "times"}, and
// the two rates. ms_per_step: the profile's {category: ms}.
nlohmann::json step_bounds(const nlohmann::json& ms_per_step,
                           const std::map<std::string, CategoryWork>& work, double gemm_flops_per_s,
                           double bytes_per_s);

}  // namespace trainbench
