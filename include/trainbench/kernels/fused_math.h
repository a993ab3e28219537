// The per-element and per-row math of the fused kernels, written once for the CPU rows
// (kernels/cpu/rows.cpp) and the CUDA kernels (kernels/cuda/rows.cu). Everything here is plain
// arithmetic on scalars: no LibTorch, no allocation, no reductions across threads (each
// backend reduces in its own way: a loop on the CPU, warp shuffles on the GPU). Functions are
// `static inline` (TB_HOST_DEVICE, storage.h) for the reason storage.h gives.
#pragma once

#include <cstdint>

#include "trainbench/core/hash.h"
#include "trainbench/kernels/storage.h"

namespace trainbench::kernels::math {

// Square root, exp and log for float and double, the builtins on the host (no libstdc++ inline
// wrappers, see above) and CUDA's functions on the device.
#if defined(__CUDA_ARCH__)
TB_HOST_DEVICE float sqrt_(float x) { return sqrtf(x); }
TB_HOST_DEVICE double sqrt_(double x) { return sqrt(x); }
TB_HOST_DEVICE float exp_(float x) { return expf(x); }
TB_HOST_DEVICE double exp_(double x) { return exp(x); }
TB_HOST_DEVICE float log_(float x) { return logf(x); }
TB_HOST_DEVICE double log_(double x) { return log(x); }
TB_HOST_DEVICE double pow_(double x, double y) { return pow(x, y); }
#else
TB_HOST_DEVICE float sqrt_(float x) { return __builtin_sqrtf(x); }
TB_HOST_DEVICE double sqrt_(double x) { return __builtin_sqrt(x); }
TB_HOST_DEVICE float exp_(float x) { return __builtin_expf(x); }
TB_HOST_DEVICE double exp_(double x) { return __builtin_exp(x); }
TB_HOST_DEVICE float log_(float x) { return __builtin_logf(x); }
TB_HOST_DEVICE double log_(double x) { return __builtin_log(x); }
TB_HOST_DEVICE double pow_(double x, double y) { return __builtin_pow(x, y); }
#endif

// ---- dropout: a counter-based mask, the same on every device and thread count -------------
// keep(key, i) hashes (key, element index) with 32-bit multiply-xorshift rounds (32-bit lanes
// vectorize on the CPU and are native on the GPU) and keeps the element when the hash reaches
// p * 2^32. Forward and backward regenerate the same mask from the key, so no mask tensor is
// ever stored. The index's high half enters with the key's, so tensors past 2^32 elements
// do not repeat their masks.
TB_HOST_DEVICE uint32_t dropout_bits(uint64_t key, uint64_t index) {
  uint32_t x = static_cast<uint32_t>(index) * 0x9e3779b1u + static_cast<uint32_t>(key);
  x ^= x >> 16;
  x *= 0x21f0aaadu;
  x ^= x >> 15;
  x ^= static_cast<uint32_t>(key >> 32) + static_cast<uint32_t>(index >> 32) * 0x85ebca6bu;
  x *= 0x735a2d97u;
  x ^= x >> 15;
  x *= 0x2c1b3c6du;
  return x ^ (x >> 12);
}
// threshold = p * 2^32 (dropout_threshold); 0 keeps everything (every hash reaches 0).
TB_HOST_DEVICE bool dropout_keep(uint64_t key, uint64_t index, uint32_t threshold) {
  return dropout_bits(key, index) >= threshold;
}
// The factor an element is multiplied by: 1 / (1 - p) when kept, 0 when dropped.
template <typename A>
TB_HOST_DEVICE A dropout_factor(uint64_t key, uint64_t index, uint32_t threshold, A scale) {
  return dropout_keep(key, index, threshold) ? scale : A(0);
}
// A kernel's dropout arguments with the key of the step they read (DropoutArgs::step): the key
// moved by step * 2^64 / phi (kGoldenGamma), read once, where the kernel runs.
TB_HOST_DEVICE DropoutArgs at_step(DropoutArgs d) {
  if (d.step != nullptr) d.key += static_cast<uint64_t>(*d.step) * kGoldenGamma;
  d.step = nullptr;
  return d;
}
// The factor of element `index` under a kernel's dropout arguments (after at_step).
template <typename A>
TB_HOST_DEVICE A dropout_factor(const DropoutArgs& d, uint64_t index) {
  return dropout_factor(d.key, index, d.threshold, static_cast<A>(d.scale));
}
// The threshold and the multiplier of a kept element, 1 / (1 - p), as the host computes them.
TB_HOST_DEVICE uint32_t dropout_threshold(double p) {
  return static_cast<uint32_t>(p * 4294967296.0);
}
TB_HOST_DEVICE double dropout_scale(double p) { return 1.0 / (1.0 - p); }
// A kernel's dropout arguments for probability p and a key (p == 0: every element kept, x1).
TB_HOST_DEVICE DropoutArgs dropout_args(double p, uint64_t key) {
  DropoutArgs d;
  d.key = key;
  d.threshold = dropout_threshold(p);
  d.scale = p > 0 ? dropout_scale(p) : 1.0;
  return d;
}

// ---- residual add + dropout (+ LayerNorm) --------------------------------------------------
// r' = r + factor * (branch + bias), factor = dropout_factor(...)
template <typename A>
TB_HOST_DEVICE A dropped_add(A resid, A branch_plus_bias, A factor) {
  return resid + factor * branch_plus_bias;
}
// LayerNorm of one value given its row's mean and 1/sqrt(var + eps).
template <typename A>
TB_HOST_DEVICE A layer_norm_value(A x, A mean, A rstd, A gamma, A beta) {
  return (x - mean) * rstd * gamma + beta;
}
// 1 / sqrt(var + eps) of a row of n values (biased variance, as LayerNorm) from the sum of their
// squared deviations from the row's mean: both backends take the mean first and sum
// (x - mean)^2 in a second pass over the row (in L1, or in the block's shared memory), so the
// variance does not cancel catastrophically.
template <typename A>
TB_HOST_DEVICE A row_rstd(A centered_sum_sq, int64_t n, A eps) {
  return A(1) / sqrt_(centered_sum_sq / static_cast<A>(n) + eps);
}
// LayerNorm backward for one value: dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) with
// g = dy * gamma, given the row means c1 = mean(g), c2 = mean(g * xhat).
template <typename A>
TB_HOST_DEVICE A layer_norm_grad(A dy, A gamma, A xhat, A rstd, A c1, A c2) {
  return rstd * (dy * gamma - c1 - xhat * c2);
}

// ---- bias + ReLU + dropout -----------------------------------------------------------------
// Selects, not branches: the CPU loops vectorize.
template <typename A>
TB_HOST_DEVICE A bias_relu_dropout(A a, A bias, A factor) {
  const A v = a + bias;
  return (v > A(0) ? v : A(0)) * factor;
}
// The gradient needs only the output: out > 0 exactly where the unit was active and kept (a
// dropped or inactive unit is 0), and there d out / d a = scale.
template <typename A>
TB_HOST_DEVICE A bias_relu_dropout_grad(A dout, A out, A scale) {
  return dout * (out > A(0) ? scale : A(0));
}

// ---- softmax pieces (causal attention rows, cross-entropy rows) ----------------------------
// exp(x) for x <= 0 to float precision in plain arithmetic (vectorizes on the CPU; the same on
// the GPU): x = n ln2 + r with n = round(x / ln2) (the 1.5 * 2^23 trick, no float-to-int
// conversion), exp(r) by a degree-6 polynomial, times 2^n built from n's bits.
TB_HOST_DEVICE float exp_nonpos(float x) {
  x = x > -87.0f ? x : -87.0f;  // exp(-87) ~ 1.6e-38: zero next to the row's largest term
  const float t = x * 1.44269504f + 12582912.0f;
  const float n = t - 12582912.0f;
  const int32_t ni = float_bits(t) - 0x4B400000;
  const float r = x - n * 0.693145751953125f - n * 1.428606765330187e-06f;
  float p = 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  return p * bits_to_float((ni + 127) << 23);
}
TB_HOST_DEVICE double exp_nonpos(double x) { return exp_(x); }

// Softmax backward for one value: ds = p * (dp - sum_k p_k dp_k).
template <typename A>
TB_HOST_DEVICE A softmax_grad(A p, A dp, A dot) {
  return p * (dp - dot);
}
// Row t's block of `block` query rows: its first row and its row count (block but in the
// last), for the blocked layouts of the attention (model/causal_gemm.h) below.
struct RowBlock {
  int64_t r0, rows;
};
TB_HOST_DEVICE RowBlock row_block(int64_t t, int64_t seq, int64_t block) {
  const int64_t r0 = t / block * block;
  return {r0, seq - r0 < block ? seq - r0 : block};
}
// Blocked causal scores (model/causal_gemm.h): for every j, query rows [j*block, j*block + rows_j)
// of all `heads` (B*H) heads against keys [0, j*block + rows_j), one contiguous [heads, rows_j,
// keys_j] block after another (rows_j = block but in the last). The offset of row t of head h.
TB_HOST_DEVICE int64_t causal_block_row(int64_t h, int64_t t, int64_t heads, int64_t seq,
                                        int64_t block) {
  const RowBlock b = row_block(t, seq, block);
  const int64_t j = b.r0 / block, keys = b.r0 + b.rows;
  // Blocks 0..j-1 hold block rows and (i + 1) * block keys each, per head.
  return heads * block * block * (j * (j + 1) / 2) + (h * b.rows + (t - b.r0)) * keys;
}
// The attention's [B*H, S, hd] products in blocks of query rows (model/causal_gemm.h): block j
// holds rows [j*block, j*block + rows_j) of all `heads` (B*H) heads, [heads, rows_j, hd]
// contiguous, one block after another, so that each block's product writes one contiguous
// tensor; block <= 0 or >= seq: the plain layout. Row t of head h (in rows of hd elements), and
// the rows from it to row t of head h + 1.
struct HeadRow {
  int64_t row, step;
};
TB_HOST_DEVICE HeadRow head_block_row(int64_t h, int64_t t, int64_t heads, int64_t seq,
                                      int64_t block) {
  if (block <= 0 || block >= seq) return {h * seq + t, seq};
  const RowBlock b = row_block(t, seq, block);
  return {heads * b.r0 + h * b.rows + (t - b.r0), b.rows};
}
// Score row r (= h * seq + t) of `rows` (B*H*S): its offset and length, in the blocked causal
// layout where 0 < block < seq, else in the square [rows, seq].
struct ScoreRow {
  int64_t offset, len;
};
TB_HOST_DEVICE ScoreRow score_row(int64_t r, int64_t seq, int64_t rows, int64_t block) {
  if (block <= 0 || block >= seq) return {r * seq, seq};
  const int64_t t = r % seq;
  const RowBlock b = row_block(t, seq, block);
  return {causal_block_row(r / seq, t, rows / seq, seq, block), b.r0 + b.rows};
}
// Cross-entropy gradient for one logit: softmax - one-hot, divided by the row count.
template <typename A>
TB_HOST_DEVICE A cross_entropy_grad(A prob, bool is_target, A inv_rows) {
  return (is_target ? prob - A(1) : prob) * inv_rows;
}

// ---- Adam (AdamArgs) -------------------------------------------------------------------------
// The step's coefficients as LibTorch's fused CPU Adam forms them: bias corrections in double
// from the step count t, then every factor in float.
struct AdamCoefs {
  float beta1, beta2, c1, c2, step_size, bc2_sqrt, eps;
};
TB_HOST_DEVICE AdamCoefs adam_coefs(const AdamArgs& a, float t) {
  const AdamOptions& o = a.options;
  const double bc1 = 1 - pow_(o.beta1, t), bc2 = 1 - pow_(o.beta2, t);
  return {static_cast<float>(o.beta1),     static_cast<float>(o.beta2),
          static_cast<float>(1 - o.beta1), static_cast<float>(1 - o.beta2),
          static_cast<float>(o.lr / bc1),  static_cast<float>(sqrt_(bc2)),
          static_cast<float>(o.eps)};
}
// One element: updates the moments m, v with gradient g and returns the new parameter.
TB_HOST_DEVICE float adam_param(float p, float g, float& m, float& v, const AdamCoefs& k) {
  m = m * k.beta1 + g * k.c1;
  v = v * k.beta2 + g * g * k.c2;
  return p - k.step_size * m / (sqrt_(v) / k.bc2_sqrt + k.eps);
}
// x rounded to the storage type R and read back (R float: x itself): a weight copy's value.
template <typename R>
TB_HOST_DEVICE float rounded_to(float x) {
  R r[1];
  st(r, 0, x);
  return ld<float>(r, 0);
}
// The one rounding rule of both backends: a value of storage S holding R's values (FormatTypes'
// S and R) is rounded to R where float32 storage holds 16-bit values, else left as it is.
template <typename S, typename R>
inline constexpr bool kRounds = std::is_same_v<S, float> && !std::is_same_v<R, float>;
template <typename A, typename S, typename R>
TB_HOST_DEVICE A rounded_as(A x) {
  if constexpr (kRounds<S, R>) {
    return static_cast<A>(rounded_to<R>(static_cast<float>(x)));
  } else {
    return x;
  }
}

}  // namespace trainbench::kernels::math
