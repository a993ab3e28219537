// The score-shaped GEMMs of causal attention (q k^T forward, dO v^T backward) computed only
// where the mask lets a query see a key: the [S, S] result in blocks of `block` query rows, each
// against the keys up to its own end, so the blocks above the diagonal are never multiplied.
// Measured (docs/BENCHMARKS.md): with float32 operands (float32 runs and the float32 GEMM route)
// blocks of 128 rows take 0.6x the time of the whole product at S = 256; with bfloat16 on
// oneDNN/AMX every block size was slower than one whole product, and the P v / P^T x products,
// whose blocked operands are strided, were slower in both dtypes: those stay whole (the zeros
// above the diagonal are in P).
#pragma once

#include <cstdint>

#include <torch/types.h>

namespace trainbench {

inline constexpr int64_t kCausalBlock = 128;  // query rows per block (block >= S: one product)

// The block the fused attention uses for operands of `dtype`: kCausalBlock for float32/float64,
// else the whole sequence (one product).
int64_t causal_block_for(c10::ScalarType dtype, int64_t seq);

// out [BH, S, S] (any float dtype; written by blocks in it) = a @ b^T on the blocks of `block`
// rows at or below the diagonal (a, b [BH, S, hd]); the rest of out is left as it is: the
// causal softmax neither reads it nor leaves it unwritten.
void causal_scores(const torch::Tensor& out, const torch::Tensor& a, const torch::Tensor& b,
                   int64_t block);

}  // namespace trainbench
