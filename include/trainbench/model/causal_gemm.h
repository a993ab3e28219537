// The GEMMs of causal attention computed only where the mask lets a query see a key: the [S, S]
// scores, probabilities and their gradients in blocks of `block` query rows, each against the
// keys up to its own end, one contiguous block after another (the square and its zeros above
// the diagonal never exist), and every product on them: q k^T and dO v^T into the blocks, P v
// and dS k from them row-block by row-block, dS^T q and P^T dO key-block by key-block from the
// score blocks that reach those keys; their [BH, S, hd] results are in blocks of rows too, so
// that each product writes contiguous rows (LibTorch's CPU bmm runs one GEMM per head into a
// view that is not contiguous). Measured (docs/BENCHMARKS.md, seq 256, forward + backward of the
// whole op): with float32 operands on a CPU without AVX-512 (MKL's AVX2 GEMMs: float32 runs and the
// float32 GEMM route there) blocks of 128 rows took 0.92-0.98x the time with the score products
// alone in blocks and about 0.76x with all six; with AVX-512 float32 and with bfloat16 on
// oneDNN/AMX the score products in blocks were no faster or slower (1.00-1.15x), so those keep
// the whole products.
#pragma once

#include <array>
#include <cstdint>

#include <torch/types.h>

namespace trainbench {

inline constexpr int64_t kCausalBlock = 128;  // query rows per block (block >= S: one product)

// The block the fused attention uses for operands of `dtype`: kCausalBlock for float32/float64
// on a CPU without AVX-512 (after ONEDNN_MAX_CPU_ISA), else the whole sequence (one product; a
// GPU was not measured, so it stays whole there).
int64_t causal_block_for(c10::ScalarType dtype, int64_t seq, bool cuda);

// a @ b^T in `dtype` (a, b [BH, S, hd]): block >= S: [BH, S, S], one whole product; block < S:
// only the blocks of `block` query rows at or below the diagonal, each against the keys up to
// its own end, flat in the layout the causal softmax kernels work on in place
// (kernels/fused_math.h causal_block_row; CausalSoftmaxArgs::block): [causal_blocks_size].
torch::Tensor causal_scores(const torch::Tensor& a, const torch::Tensor& b, c10::ScalarType dtype,
                            int64_t block);
// Elements of that layout for bh heads: bh * S * S less the blocks above the diagonal.
int64_t causal_blocks_size(int64_t bh, int64_t seq, int64_t block);

// P V for probabilities p as causal_scores leaves them: whole, [BH, S, hd]; in blocks, each
// block's rows against the values of its keys, flat in blocks of query rows ([BH * S * hd]:
// kernels/fused_math.h head_block_row, HeadsArgs::block), so that every block's product writes
// contiguous rows.
torch::Tensor causal_pv(const torch::Tensor& p, const torch::Tensor& v, int64_t block);

// The attention's input gradients from the score gradient ds and p (both as causal_scores
// leaves them): dq = ds k, dk = ds^T q, dv = p^T dout; whole, [BH, S, hd] each; in blocks the
// products cover the blocks at or below the diagonal only, and the three are flat in blocks of
// query (dq) or key (dk, dv) rows, as P V.
std::array<torch::Tensor, 3> causal_grads(const torch::Tensor& ds, const torch::Tensor& p,
                                          const torch::Tensor& q, const torch::Tensor& k,
                                          const torch::Tensor& dout, int64_t block);

// t ([BH, S, hd], or flat in blocks of `block` rows as causal_pv leaves it) as [BH, S, hd];
// block <= 0 or >= S: t itself (as for causal_pv and causal_grads: the whole products).
torch::Tensor causal_unblocked(const torch::Tensor& t, int64_t bh, int64_t seq, int64_t block);

}  // namespace trainbench
