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

#include "trainbench/core/choices.h"
#include "trainbench/model/causal_gemm.h"

namespace trainbench {

// Each GEMM op runs on a GemmRoute (core/choices.h: the dtype's own GEMM, or a float32 GEMM of
// the same operands rounded once to the dtype). Tensors kept for backward hold the dtype's
// values either way; on the float32 route the GEMMs' inputs, the FF hidden and the attention
// scores are kept as float32 storage of them. kAuto is refused.
// `dtype` of the GEMM ops: the dtype of x's values: x's own (Undefined), or on the float32 route
// the 16-bit dtype whose values a float32 x holds (drop_add_layer_norm's output there). Such an
// x gets a float32 gradient, the GEMM's product unrounded: the op that made x rounds it as it
// reads it, so no conversion runs either way.

// Dropout as the fused kernels apply it: probability p, key from dropout_key() (p == 0: off).
struct FusedDropout {
  double p = 0;
  uint64_t key = 0;
};

// x w^T (+ b): x [N, in], w [out, in] (x's dtype, or on the float32 route float32 holding
// values of x's dtype), b [out] accumulation dtype or undefined → [N, out] in x's dtype.
// Saves w, and x as its GEMMs read it (on the float32 route a float32 copy, so that the weight
// gradient does not convert it again). The other GEMM ops take w and keep x the same way.
// keep_float32: on the float32 route the product is returned unrounded in float32 (a residual
// branch, which the next drop_add_layer_norm reads in any dtype and nothing keeps; the qkv rows,
// which causal_attention rounds as it splits them), and its gradient is read so.
torch::Tensor fused_linear(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b,
                           GemmRoute route = GemmRoute::kNative, bool keep_float32 = false,
                           c10::ScalarType dtype = c10::ScalarType::Undefined);

// r' = resid + dropout(branch + bias), y = LayerNorm(r'; gamma, beta) in `out_dtype` (or r'
// itself in `out_dtype` when gamma is undefined). resid [N, d] accumulation dtype (float32, or
// float64) or undefined (r' = dropout(branch + bias)); branch [N, d] any float dtype; bias,
// gamma, beta [d] accumulation dtype or undefined. Returns {r' [N, d] accumulation, y [N, d]}.
// On the float32 route (16-bit out_dtype) y is float32 storage of out_dtype's values, as the
// GEMM ops read it (their `dtype`), and its gradient, their unrounded float32 product, is
// rounded to out_dtype as it is read.
std::vector<torch::Tensor> drop_add_layer_norm(
    const torch::Tensor& resid, const torch::Tensor& branch, const torch::Tensor& bias,
    const torch::Tensor& gamma, const torch::Tensor& beta, FusedDropout drop,
    c10::ScalarType out_dtype, GemmRoute route = GemmRoute::kNative);

// dropout(relu(x w^T + b)): x [N, in], w [f, in] (same dtype), b [f] accumulation dtype.
// Saves x (as above), w and the output only (the mask is regenerated, the output tells where
// ReLU was on).
// On the float32 route (16-bit x) the output is float32 holding values of x's dtype, and so is
// the gradient its backward passes on: the GEMMs on either side read them as they are.
torch::Tensor linear_relu_dropout(const torch::Tensor& x, const torch::Tensor& w,
                                  const torch::Tensor& b, FusedDropout drop,
                                  GemmRoute route = GemmRoute::kNative,
                                  c10::ScalarType dtype = c10::ScalarType::Undefined);

// Causal attention of a qkv linear's rows, with explicit scores: qkv [N = B*S, 3*H*hd] (row
// b*S + s holds q, k, v, each H heads of hd) → [N, H*hd] in the GEMMs' dtype (`dtype`, or
// float32 on the float32 route). q, k, v are split from the rows and the output merged back by
// one kernel pass each (HeadsArgs: no layout copy, no stack); scores and probabilities
// [B*H, S, S] in one buffer, softmax fused with the scale and the causal mask (no mask tensor)
// in one pass each way. On the float32 route (16-bit dtype) qkv may be the qkv GEMM's float32
// output (rounded to dtype as it is split; its gradient is then float32 holding dtype's
// values), the output is float32 holding dtype's values and its gradient may be a GEMM's
// unrounded float32 output (rounded as it is read), and q, k, v, the scores, the probabilities
// and their gradients are float32 holding dtype's values, as the FF hidden above. With float32
// or float64 GEMMs every product covers only the blocks of `block` query rows at or below the
// diagonal (causal_gemm.h; 0: the block for the GEMM dtype, causal_block_for; >= S: the whole
// products); 16-bit GEMMs take the whole products (in blocks the key and value gradients would
// add their blocks' products in 16 bits). bias: the qkv linear's [3*H*hd] (accumulation dtype),
// or undefined: added to the rows as they are split (before any rounding, so only where qkv is
// the unrounded float32 or float64 product: the linear then runs without its bias), its gradient
// the column sums of the rows' gradient, which the pass merging dq, dk, dv into rows adds as it
// writes them. bias_in_rows: the linear added the bias already (16-bit rows, rounded by their
// GEMM; it was given the bias detached): nothing is added, only its gradient comes from here.
torch::Tensor causal_attention(const torch::Tensor& qkv, int64_t seq, int64_t heads,
                               c10::ScalarType dtype, GemmRoute route = GemmRoute::kNative,
                               int64_t block = 0, const torch::Tensor& bias = {},
                               bool bias_in_rows = false);

// Mean cross-entropy of x w^T + b against targets: x [N, d], w [V, d] (same dtype), b [V]
// accumulation dtype, targets [N] int64 → scalar in the accumulation dtype. The logits buffer
// [N, V] (activation dtype; on the float32 route float32 storage of its values, rounded by the
// kernel) is turned into the loss gradient row by row in the forward pass, which also adds the
// bias gradient's column partials, and is all that is kept: no softmax tensor.
torch::Tensor head_cross_entropy(const torch::Tensor& x, const torch::Tensor& w,
                                 const torch::Tensor& b, const torch::Tensor& targets,
                                 GemmRoute route = GemmRoute::kNative,
                                 c10::ScalarType dtype = c10::ScalarType::Undefined);

}  // namespace trainbench
