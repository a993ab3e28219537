// Dropout with a parallel mask generator for the CPU. LibTorch's CPU dropout draws a full
// float mask with bernoulli_ and multiplies in a second pass; on LibTorch 2.11 the eager
// handcraft step is still 1.10x (float32) and 1.13x (bfloat16) faster with this kernel at the
// reference shape on 2 threads (scripts/libtorch_ab.sh; measured 2026-12-01). This one hashes (key,
// element index) with splitmix64 inside at::parallel_for: every thread fills its own range, and the
// mask depends only on the key, so it is the same for any thread count. The key is one draw from
// LibTorch's default CPU generator per call, so torch::manual_seed still fixes the run.
#pragma once

#include <torch/types.h>

namespace trainbench {

// One draw from LibTorch's default CPU generator: the key of one dropout mask, so
// torch::manual_seed and a checkpoint's generator state fix every mask.
uint64_t dropout_key();
// The fused kernels' first key (kernels/fused_math.h, model/fused_model.cpp): the default CPU
// generator's seed hashed, read without a draw (the ranks of a data-parallel run other than 0
// seed theirs each step, dist.h rank_step_seed, and so draw other masks).
uint64_t seed_key();

// mask[i] = 1/(1-p) with probability 1-p, else 0; same shape, dtype and device as `like`.
torch::Tensor parallel_dropout_mask(const torch::Tensor& like, double p, uint64_t key);

// x * mask in training (autograd: the gradient is grad * mask), x itself otherwise. CPU only:
// other devices take torch::dropout, whose kernels are already parallel.
torch::Tensor parallel_dropout(const torch::Tensor& x, double p, bool train);

// parallel_dropout when `parallel`, else torch::dropout.
inline torch::Tensor apply_dropout(const torch::Tensor& x, double p, bool train, bool parallel) {
  return parallel ? parallel_dropout(x, p, train) : torch::dropout(x, p, train);
}

}  // namespace trainbench
