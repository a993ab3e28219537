// The fused operations of the `--compile fused` model as autograd functions with hand-written
// backward passes. Each wraps one or two GEMMs (LibTorch's BLAS: MKL / oneDNN on the CPU,
// cuBLAS on CUDA) and a fused kernel (kernels/fused_kernels.h: CPU rows or CUDA kernels) for
// everything around them, so that each boundary of the block is one pass over the
// activations each way. Why per-op functions and not one backward over the whole block: the
// GEMMs between them (qkv, attention, output projections) are LibTorch's own ops with their own
// backward, and the engine already writes each parameter's gradient once (the trainer drops
// .grad before the step, so the first gradient is stolen, never added to a zero tensor).
// Rows are batch-major: [N = batch * seq, width].
#pragma once

#include <cstdint>
#include <vector>

#include <torch/types.h>

#include "trainbench/kernels/kernel_args.h"
#include "trainbench/model/causal_gemm.h"

namespace trainbench {

// Every op takes the run's format f (kernels::run_format, built once in ModelOptions): the
// dtype whose values the GEMMs read and the ops keep for backward (f.values), stored as
// f.storage: the dtype's own, or on the float32 GEMM route float32 storage of bfloat16/float16
// values, so that the GEMMs (float32 GEMMs of the same values, rounded once) and the kernels
// between them read each other's tensors without a conversion; a kernel rounds what it reads
// and writes to f.values. A GEMM op's x is stored as f.storage or f.values (on the float32 route
// a 16-bit x is copied to float32 once); x's gradient comes back in x's dtype.

// Dropout as the fused kernels apply it: probability p (0: off), the op's key, and the step
// counter the kernels move it by where they run (kernels::DropoutArgs::step; or null).
struct FusedDropout {
  double p = 0;
  uint64_t key = 0;
  const int64_t* step = nullptr;
  kernels::DropoutArgs args() const;
};

// x w^T (+ b): x [N, in], w [out, in] (f.storage), b [out] accumulation dtype or undefined →
// [N, out] in `out`: values_format(f) (rounded to f's values, in their own storage) or
// product_format(f) (the GEMM's product unrounded: float32 on the float32 route; a residual
// branch, which the next drop_add_layer_norm reads in any dtype, or the qkv rows, which
// causal_attention rounds as it splits them); its gradient is read in the same format. Saves w
// and x as its GEMMs read it. The other GEMM ops take w and keep x the same way.
torch::Tensor fused_linear(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b,
                           const kernels::Format& f, const kernels::Format& out);

// r' = resid + dropout(branch + bias), y = LayerNorm(r'; gamma, beta) in f (or r' itself when
// gamma is undefined). resid [N, d] accumulation dtype (float32, or float64) or undefined (r' =
// dropout(branch + bias)); branch [N, d] any float dtype; bias, gamma, beta [d] accumulation
// dtype or undefined. Returns {r' [N, d] accumulation, y [N, d] f.storage}; y's gradient (a
// GEMM's unrounded product on the float32 route) is rounded to f's values as it is read.
std::vector<torch::Tensor> drop_add_layer_norm(const torch::Tensor& resid,
                                               const torch::Tensor& branch,
                                               const torch::Tensor& bias,
                                               const torch::Tensor& gamma,
                                               const torch::Tensor& beta, FusedDropout drop,
                                               const kernels::Format& f);

// dropout(relu(x w^T + b)) [N, f] in f.storage: x [N, in], w [f, in], b [f] accumulation dtype.
// Saves x (as above), w and the output only (the mask is regenerated, the output tells where
// ReLU was on).
torch::Tensor linear_relu_dropout(const torch::Tensor& x, const torch::Tensor& w,
                                  const torch::Tensor& b, FusedDropout drop,
                                  const kernels::Format& f);

// Causal attention of a qkv linear's rows, with explicit scores: qkv [N = B*S, 3*H*hd] (row
// b*S + s holds q, k, v, each H heads of hd; f.storage or f.values) → [N, H*hd] in f.storage.
// q, k, v are split from the rows and the output merged back by one kernel pass each (HeadsArgs:
// no layout copy, no stack), rounded to f's values as they move; scores and probabilities
// [B*H, S, S] in one buffer, softmax fused with the scale and the causal mask (no mask tensor)
// in one pass each way. With float32 or float64 storage every product covers only the blocks
// of `block` query rows at or below the diagonal (causal_gemm.h; 0: the block for the GEMM
// dtype, causal_block_for; >= S: the whole products); 16-bit GEMMs take the whole products (in
// blocks the key and value gradients would add their blocks' products in 16 bits). bias: the qkv
// linear's [3*H*hd] (accumulation dtype), or undefined: added to float32 or float64 rows as they
// are split (before any rounding: the linear then runs without it); 16-bit rows, rounded by
// their GEMM, hold it already (the linear was given it detached). Either way its gradient is the
// column sums of the rows' gradient, which the pass merging dq, dk, dv into rows adds.
torch::Tensor causal_attention(const torch::Tensor& qkv, int64_t seq, int64_t heads,
                               const kernels::Format& f, int64_t block = 0,
                               const torch::Tensor& bias = {});

// Mean cross-entropy of x w^T + b against targets: x [N, d], w [V, d], b [V] accumulation
// dtype, targets [N] int64 → scalar in the accumulation dtype. The logits buffer [N, V]
// (f.storage, rounded to f's values by the kernel) is turned into the loss gradient row by row
// in the forward pass, which also adds the bias gradient's column partials, and is all that is
// kept: no softmax tensor.
torch::Tensor head_cross_entropy(const torch::Tensor& x, const torch::Tensor& w,
                                 const torch::Tensor& b, const torch::Tensor& targets,
                                 const kernels::Format& f);

}  // namespace trainbench
