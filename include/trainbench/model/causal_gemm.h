// The score-shaped GEMMs of causal attention (q k^T forward, dO v^T backward) computed only
// where the mask lets a query see a key: the [S, S] result in blocks of `block` query rows, each
// against the keys up to its own end, so the blocks above the diagonal are never multiplied.
// Measured (docs/BENCHMARKS.md, seq 256, forward + backward of the whole op): with float32
// operands on a CPU without AVX-512 (MKL's AVX2 GEMMs: float32 runs and the float32 GEMM route
// there) blocks of 128 rows took 0.92-0.98x the time; with AVX-512 float32 and with bfloat16 on
// oneDNN/AMX they were no faster or slower (1.00-1.15x), so those keep one whole product. The
// P v / P^T x products, whose blocked operands are strided, were slower everywhere and stay
// whole (the zeros above the diagonal are in P).
#pragma once

#include <cstdint>

#include <torch/types.h>

namespace trainbench {

inline constexpr int64_t kCausalBlock = 128;  // query rows per block (block >= S: one product)

// The block the fused attention uses for operands of `dtype`: kCausalBlock for float32/float64
// on a CPU without AVX-512 (after ONEDNN_MAX_CPU_ISA), else the whole sequence (one product; a
// GPU was not measured, so it stays whole there).
int64_t causal_block_for(c10::ScalarType dtype, int64_t seq, bool cuda);

// a @ b^T [BH, S, S] in `dtype` (a, b [BH, S, hd]) on the blocks of `block` rows at or below the
// diagonal; with block < S the blocks above are left unwritten: the causal softmax neither reads
// them nor leaves them unwritten. block >= S: one whole product, no copy.
torch::Tensor causal_scores(const torch::Tensor& a, const torch::Tensor& b, c10::ScalarType dtype,
                            int64_t block);

}  // namespace trainbench
