// The v2 CUDA row kernels (--gpu_kernels v2; rows.h): the math of fused_math.h and the loads and
// stores of storage.h, as the v1 kernels of rows.cu, laid out for the memory system: a warp per
// row (LayerNorm, softmax) or per chunk of kChunkRows rows (the head's cross-entropy), each
// lane's columns read once into registers, kV2Vec consecutive columns a load (one 16-byte word
// of 16-bit values, two of float32); LayerNorm's backward, ReLU's and the column sums a block per
// chunk, a thread per kV2Vec columns. A chunk's rows go in order and its column sums stay in
// registers until written once: each column's is added as the CPU's (the same bits). Sums along a
// row are a warp's butterfly (every lane gets the same total). Rows wider than the registers hold,
// and pointers off 16 bytes, take v1 (launch.cpp's v2_fits_). No LibTorch header.
#include <cuda_runtime.h>

#include <cstdint>

#include "rows.h"
#include "rows_common.cuh"
#include "trainbench/kernels/fused_math.h"
#include "trainbench/kernels/storage.h"

namespace trainbench::kernels::cuda {
namespace {

namespace m = trainbench::kernels::math;
using namespace detail;  // NOLINT(google-build-using-namespace): rows_common.cuh

constexpr int kWarp = 32, kWarps = 4;  // a block: 4 warps, each its own row or chunk
constexpr int kVec = static_cast<int>(kV2Vec), kGroups = static_cast<int>(kV2Groups);
constexpr int kKeys = static_cast<int>(kV2Keys / kWarp);  // a softmax row's keys per lane
static_assert(kV2Cols == kWarp * kV2Vec, "a group: a warp's loads of kVec columns");

template <typename A>
__device__ A warp_sum(A v) {
  for (int o = kWarp / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
template <typename A>
__device__ A warp_max(A v) {
  for (int o = kWarp / 2; o > 0; o >>= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// kVec consecutive elements of S as the 16-byte words they move in.
template <typename S>
union Pack {
  uint4 w[kVec * sizeof(S) / 16];
  S v[kVec];
};
// p + i on 16 bytes (v2_fits_ checks the bases; i is a multiple of kVec).
template <typename A, typename S>
__device__ void load_(const S* p, int64_t i, A (&out)[kVec]) {
  Pack<S> k;
  const uint4* src = reinterpret_cast<const uint4*>(p + i);
#pragma unroll
  for (int w = 0; w < static_cast<int>(sizeof(k.w) / 16); ++w) k.w[w] = src[w];
#pragma unroll
  for (int j = 0; j < kVec; ++j) out[j] = ld<A>(k.v, j);
}
// Stores in[] as S; *as_stored (if given): the values as stored (a column sum of them).
template <typename S, typename A>
__device__ void store_(S* p, int64_t i, const A (&in)[kVec], A (*as_stored)[kVec] = nullptr) {
  Pack<S> k;
#pragma unroll
  for (int j = 0; j < kVec; ++j) st(k.v, j, in[j]);
  uint4* dst = reinterpret_cast<uint4*>(p + i);
#pragma unroll
  for (int w = 0; w < static_cast<int>(sizeof(k.w) / 16); ++w) dst[w] = k.w[w];
  if (as_stored != nullptr) {
#pragma unroll
    for (int j = 0; j < kVec; ++j) (*as_stored)[j] = ld<A>(k.v, j);
  }
}

__device__ int lane_() { return static_cast<int>(threadIdx.x) % kWarp; }
// This warp's row (or chunk): kWarps a block.
__device__ int64_t warp_item_() {
  return static_cast<int64_t>(blockIdx.x) * kWarps + static_cast<int64_t>(threadIdx.x) / kWarp;
}
// The first column of group g of this lane.
__device__ int64_t col_(int g) { return (static_cast<int64_t>(g) * kWarp + lane_()) * kVec; }

// As rows.cu's drop_add_ln_kernel: r' = resid + dropout(branch + bias), y = LayerNorm(r') or r'.
template <typename A, typename Sb, typename So, typename R>
__global__ void __launch_bounds__(kWarps* kWarp) drop_add_ln_v2(DropAddLnArgs a) {
  const int64_t r = warp_item_(), d = a.cols, o = r * d;
  if (r >= a.rows) return;
  const int groups = static_cast<int>(d / kV2Cols);
  const DropoutArgs drop = m::at_step(a.drop);
  const A* resid = static_cast<const A*>(a.resid);
  A x[kGroups][kVec];
  A sum = 0;
#pragma unroll
  for (int g = 0; g < kGroups; ++g) {
    if (g >= groups) break;
    const int64_t c = col_(g);
    A br[kVec], bias[kVec], re[kVec] = {};
    load_(static_cast<const Sb*>(a.branch), o + c, br);
    load_(static_cast<const A*>(a.bias), c, bias);
    if (resid != nullptr) load_(resid, o + c, re);
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      const A f = m::dropout_factor<A>(drop, static_cast<uint64_t>(o + c + j));
      x[g][j] = m::dropped_add(re[j], br[j] + bias[j], f);
      sum += x[g][j];
    }
    store_(static_cast<A*>(a.resid_out), o + c, x[g]);
  }
  So* y = static_cast<So*>(a.y);
  A mean = 0, rstd = 0;
  if (a.gamma != nullptr) {
    mean = warp_sum(sum) / static_cast<A>(d);
    A sq = 0;
#pragma unroll
    for (int g = 0; g < kGroups; ++g) {
      if (g >= groups) break;
#pragma unroll
      for (int j = 0; j < kVec; ++j) sq += (x[g][j] - mean) * (x[g][j] - mean);
    }
    rstd = m::row_rstd(warp_sum(sq), d, static_cast<A>(a.eps));
    if (lane_() == 0) {
      static_cast<A*>(a.mean)[r] = mean;
      static_cast<A*>(a.rstd)[r] = rstd;
    }
  }
#pragma unroll
  for (int g = 0; g < kGroups; ++g) {
    if (g >= groups) break;
    const int64_t c = col_(g);
    A out[kVec], gamma[kVec], beta[kVec];
    if (a.gamma != nullptr) {
      load_(static_cast<const A*>(a.gamma), c, gamma);
      load_(static_cast<const A*>(a.beta), c, beta);
    }
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      const A v = a.gamma != nullptr ? m::layer_norm_value(x[g][j], mean, rstd, gamma[j], beta[j])
                                     : x[g][j];
      out[j] = m::rounded_as<A, So, R>(v);
    }
    store_(y, o + c, out);
  }
}

// Two sums over the block (a row's), every thread gets both; shm: this row's buffer of two
// (alternate rows alternate buffers, so one barrier a row keeps a row's reads before the
// next-but-one row's writes).
template <typename A>
__device__ void block_sums_(A& s1, A& s2, A (*shm)[2]) {
  s1 = warp_sum(s1);
  s2 = warp_sum(s2);
  const int warp = static_cast<int>(threadIdx.x) / kWarp;
  if (lane_() == 0) {
    shm[warp][0] = s1;
    shm[warp][1] = s2;
  }
  __syncthreads();
  s1 = 0;
  s2 = 0;
  for (int w = 0; w < static_cast<int>(blockDim.x) / kWarp; ++w) {
    s1 += shm[w][0];
    s2 += shm[w][1];
  }
}

// As rows.cu's drop_add_ln_grad_kernel: a block per chunk, a thread per kVec columns (d / kVec
// threads), the chunk's rows in order, so each column's d_bias, d_gamma and d_beta sums are
// added as the CPU's (in registers, written once).
template <typename A, typename Sb, typename So, typename R>
__global__ void __launch_bounds__(kV2Groups* kWarp) drop_add_ln_grad_v2(DropAddLnGradArgs a) {
  __shared__ A shm[2][kV2Groups][2];
  const int64_t chunk = blockIdx.x, d = a.cols, c = static_cast<int64_t>(threadIdx.x) * kVec;
  const DropoutArgs drop = m::at_step(a.drop);
  const bool ln = a.gamma != nullptr;
  A gamma[kVec] = {}, d_bias[kVec] = {}, d_gamma[kVec] = {}, d_beta[kVec] = {};
  if (ln) load_(static_cast<const A*>(a.gamma), c, gamma);
  const int64_t r_end = min(a.rows, (chunk + 1) * kChunkRows);
  for (int64_t r = chunk * kChunkRows; r < r_end; ++r) {
    const int64_t o = r * d;
    A dyv[kVec], xhat[kVec] = {}, grad[kVec], db[kVec];
    load_(static_cast<const So*>(a.dy), o + c, dyv);
#pragma unroll
    for (int j = 0; j < kVec; ++j) dyv[j] = m::rounded_as<A, So, R>(dyv[j]);
    A rstd = 0, c1 = 0, c2 = 0;
    if (ln) {
      const A mean = static_cast<const A*>(a.mean)[r];
      rstd = static_cast<const A*>(a.rstd)[r];
      A ro[kVec];
      load_(static_cast<const A*>(a.resid_out), o + c, ro);
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        xhat[j] = (ro[j] - mean) * rstd;
        c1 += dyv[j] * gamma[j];
        c2 += dyv[j] * gamma[j] * xhat[j];
        d_gamma[j] += dyv[j] * xhat[j];
        d_beta[j] += dyv[j];
      }
      block_sums_(c1, c2, shm[r & 1]);
      c1 /= static_cast<A>(d);
      c2 /= static_cast<A>(d);
    }
    load_(static_cast<const A*>(a.d_resid_out), o + c, grad);
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      grad[j] += ln ? m::layer_norm_grad(dyv[j], gamma[j], xhat[j], rstd, c1, c2) : dyv[j];
      db[j] = grad[j] * m::dropout_factor<A>(drop, static_cast<uint64_t>(o + c + j));
      d_bias[j] += db[j];
    }
    if (a.d_resid != nullptr) store_(static_cast<A*>(a.d_resid), o + c, grad);
    store_(static_cast<Sb*>(a.d_branch), o + c, db);
  }
  A* pb = static_cast<A*>(a.partials) + chunk * 3 * d;  // [3, d]: d_bias, d_gamma, d_beta
  store_(pb, c, d_bias);
  store_(pb, d + c, d_gamma);
  store_(pb, 2 * d + c, d_beta);
}

// As rows.cu's bias_relu_dropout_kernel, kVec elements a thread (columns a multiple of kVec).
template <typename A, typename S, typename R>
__global__ void bias_relu_dropout_v2(BiasReluDropoutArgs a) {
  const int64_t packs = a.rows * a.cols / kVec;
  S* x = static_cast<S*>(a.a);
  const DropoutArgs drop = m::at_step(a.drop);
  for (int64_t p = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; p < packs;
       p += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = p * kVec;
    A v[kVec], bias[kVec];
    load_(x, i, v);
    load_(static_cast<const A*>(a.bias), i % a.cols, bias);
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      const A f = m::dropout_factor<A>(drop, static_cast<uint64_t>(i + j));
      v[j] = m::rounded_as<A, S, R>(m::bias_relu_dropout(m::rounded_as<A, S, R>(v[j]), bias[j], f));
    }
    store_(x, i, v);
  }
}

// As rows.cu's bias_relu_dropout_grad_kernel and column_sums_kernel: a block per chunk, a thread
// per kVec columns (cols / kVec threads), the chunk's rows in order, the column sums in
// registers.
template <typename A, typename S, typename R>
__global__ void __launch_bounds__(kV2Packs) bias_relu_dropout_grad_v2(BiasReluDropoutGradArgs a) {
  const int64_t chunk = blockIdx.x, f = a.cols, c = static_cast<int64_t>(threadIdx.x) * kVec;
  const A scale = static_cast<A>(a.scale);
  A sums[kVec] = {};
  const int64_t r_end = min(a.rows, (chunk + 1) * kChunkRows);
  for (int64_t r = chunk * kChunkRows; r < r_end; ++r) {
    A dout[kVec], out[kVec];
    load_(static_cast<const S*>(a.dout), r * f + c, dout);
    load_(static_cast<const S*>(a.out), r * f + c, out);
#pragma unroll
    for (int j = 0; j < kVec; ++j) {
      const A g = m::bias_relu_dropout_grad(m::rounded_as<A, S, R>(dout[j]), out[j], scale);
      dout[j] = m::rounded_as<A, S, R>(g);
      sums[j] += g;
    }
    store_(static_cast<S*>(a.da), r * f + c, dout);
  }
  store_(static_cast<A*>(a.partials) + chunk * f, c, sums);
}
template <typename A, typename S, typename R>
__global__ void __launch_bounds__(kV2Packs) column_sums_v2(ColumnSumsArgs a) {
  const int64_t chunk = blockIdx.x, w = a.cols, c = static_cast<int64_t>(threadIdx.x) * kVec;
  A sums[kVec] = {};
  const int64_t r_end = min(a.rows, (chunk + 1) * kChunkRows);
  for (int64_t r = chunk * kChunkRows; r < r_end; ++r) {
    A x[kVec];
    load_(static_cast<const S*>(a.x), r * w + c, x);
#pragma unroll
    for (int j = 0; j < kVec; ++j) sums[j] += x[j];
  }
  store_(static_cast<A*>(a.partials) + chunk * w, c, sums);
}

// As rows.cu's causal softmax kernels, a warp per row of up to kV2Keys keys: key j in lane
// j % 32's registers.
template <typename A, typename S, typename R>
__global__ void __launch_bounds__(kWarps* kWarp) causal_softmax_v2(CausalSoftmaxArgs a) {
  const int64_t r = warp_item_(), n = a.seq;
  if (r >= a.rows) return;
  const int64_t valid = r % n + 1;
  const m::ScoreRow row = m::score_row(r, n, a.rows, a.block);
  S* x = static_cast<S*>(a.x) + row.offset;
  const A scale = static_cast<A>(a.scale);
  A s[kKeys];
  A mx = -1e30;
#pragma unroll
  for (int t = 0; t < kKeys; ++t) {
    const int64_t j = lane_() + int64_t(t) * kWarp;
    s[t] = j < valid ? m::rounded_as<A, S, R>(ld<A>(x, j)) * scale : A(0);
    if (j < valid) mx = max(mx, s[t]);
  }
  mx = warp_max(mx);
  A sum = 0;
#pragma unroll
  for (int t = 0; t < kKeys; ++t) {
    if (lane_() + int64_t(t) * kWarp < valid) {
      s[t] = m::exp_nonpos(s[t] - mx);
      sum += s[t];
    }
  }
  const A inv = A(1) / warp_sum(sum);
#pragma unroll
  for (int t = 0; t < kKeys; ++t) {
    const int64_t j = lane_() + int64_t(t) * kWarp;
    if (j < row.len) st(x, j, j < valid ? m::rounded_as<A, S, R>(s[t] * inv) : A(0));
  }
}

template <typename A, typename S, typename R>
__global__ void __launch_bounds__(kWarps* kWarp) causal_softmax_grad_v2(CausalSoftmaxGradArgs a) {
  const int64_t r = warp_item_(), n = a.seq;
  if (r >= a.rows) return;
  const int64_t valid = r % n + 1;
  const m::ScoreRow row = m::score_row(r, n, a.rows, a.block);
  const S* p = static_cast<const S*>(a.p) + row.offset;
  S* dp = static_cast<S*>(a.dp) + row.offset;
  A pv[kKeys], gv[kKeys];
  A dot = 0;
#pragma unroll
  for (int t = 0; t < kKeys; ++t) {
    const int64_t j = lane_() + int64_t(t) * kWarp;
    pv[t] = j < valid ? ld<A>(p, j) : A(0);
    gv[t] = j < valid ? m::rounded_as<A, S, R>(ld<A>(dp, j)) : A(0);
    if (j < valid) dot += pv[t] * gv[t];
  }
  dot = warp_sum(dot);
#pragma unroll
  for (int t = 0; t < kKeys; ++t) {
    const int64_t j = lane_() + int64_t(t) * kWarp;
    const A g = j < valid ? m::softmax_grad(pv[t], gv[t], dot) : A(0);
    if (j < row.len) st(dp, j, m::rounded_as<A, S, R>(static_cast<A>(a.scale) * g));
  }
}

// As rows.cu's head_cross_entropy_kernel, a warp per chunk: a row's logits in registers, the
// chunk's bias-gradient column sums too (of the gradients as stored).
template <typename A, typename S, typename R>
__global__ void __launch_bounds__(kWarps* kWarp) head_cross_entropy_v2(HeadCrossEntropyArgs a) {
  const int64_t chunk = warp_item_(), v = a.cols;
  if (chunk * kChunkRows >= a.rows) return;
  const int groups = static_cast<int>(v / kV2Cols);
  S* z = static_cast<S*>(a.logits);
  const A* bias = static_cast<const A*>(a.bias);
  const A inv_rows = A(1) / static_cast<A>(a.rows);
  A d_bias[kGroups][kVec] = {};
  A loss = 0;
  const int64_t r_end = min(a.rows, (chunk + 1) * kChunkRows);
  for (int64_t r = chunk * kChunkRows; r < r_end; ++r) {
    const int64_t o = r * v, target = a.targets[r];
    A e[kGroups][kVec];
    A mx = -1e30;
#pragma unroll
    for (int g = 0; g < kGroups; ++g) {
      if (g >= groups) break;
      A b[kVec];
      load_(z, o + col_(g), e[g]);
      load_(bias, col_(g), b);
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        e[g][j] = m::rounded_as<A, S, R>(e[g][j]) + b[j];
        mx = max(mx, e[g][j]);
      }
    }
    mx = warp_max(mx);
    A sum = 0;
#pragma unroll
    for (int g = 0; g < kGroups; ++g) {
      if (g >= groups) break;
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        e[g][j] = m::exp_nonpos(e[g][j] - mx);
        sum += e[g][j];
      }
    }
    sum = warp_sum(sum);
    const A zt = m::rounded_as<A, S, R>(ld<A>(z, o + target)) + bias[target];
    __syncwarp();  // every lane has read z[target] before it is overwritten
    loss += m::log_(sum) - (zt - mx);
    const A inv = A(1) / sum;
#pragma unroll
    for (int g = 0; g < kGroups; ++g) {
      if (g >= groups) break;
      const int64_t c = col_(g);
      A grad[kVec], stored[kVec];
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        grad[j] =
            m::rounded_as<A, S, R>(m::cross_entropy_grad(e[g][j] * inv, c + j == target, inv_rows));
      }
      store_(z, o + c, grad, &stored);
#pragma unroll
      for (int j = 0; j < kVec; ++j) d_bias[g][j] += stored[j];
    }
  }
  if (a.bias_partials != nullptr) {
#pragma unroll
    for (int g = 0; g < kGroups; ++g) {
      if (g >= groups) break;
      store_(static_cast<A*>(a.bias_partials) + chunk * v, col_(g), d_bias[g]);
    }
  }
  if (lane_() == 0) static_cast<A*>(a.partials)[chunk] = loss;
}

unsigned warps_grid_(int64_t items) { return static_cast<unsigned>((items + kWarps - 1) / kWarps); }

}  // namespace

// ---- launches (launch.cpp calls them where v2_fits_ holds) -------------------------------------
#define TB_CUDA_V2_DROP_ADD_LN_LAUNCH(Args, kernel, grid, threads)           \
  cudaError_t launch_v2(const Args& a, cudaStream_t stream) {                \
    bool held = false;                                                       \
    with_format(a.branch_format, [&](auto b) {                               \
      using B = decltype(b);                                                 \
      with_format(a.out_format, [&](auto o) {                                \
        using O = decltype(o);                                               \
        if constexpr (kDropAddLnHeld<B, O>) {                                \
          kernel<typename B::A, typename B::S, typename O::S, typename O::R> \
              <<<(grid), (threads), 0, stream>>>(a);                         \
          held = true;                                                       \
        }                                                                    \
      });                                                                    \
    });                                                                      \
    return launched_(held);                                                  \
  }
TB_CUDA_V2_DROP_ADD_LN_LAUNCH(DropAddLnArgs, drop_add_ln_v2, warps_grid_(a.rows), kWarps* kWarp)
TB_CUDA_V2_DROP_ADD_LN_LAUNCH(DropAddLnGradArgs, drop_add_ln_grad_v2,
                              static_cast<unsigned>(num_chunks(a.rows)),
                              static_cast<unsigned>(a.cols / kVec))
#undef TB_CUDA_V2_DROP_ADD_LN_LAUNCH

#define TB_CUDA_V2_LAUNCH(Args, grid, threads, kernel)                                            \
  cudaError_t launch_v2(const Args& a, cudaStream_t stream) {                                     \
    bool held = false;                                                                            \
    with_format(a.format, [&](auto f) {                                                           \
      using F = decltype(f);                                                                      \
      if constexpr (kHeld<F>) {                                                                   \
        kernel<typename F::A, typename F::S, typename F::R><<<(grid), (threads), 0, stream>>>(a); \
        held = true;                                                                              \
      }                                                                                           \
    });                                                                                           \
    return launched_(held);                                                                       \
  }
TB_CUDA_V2_LAUNCH(BiasReluDropoutArgs, grid_((a.rows * a.cols / kVec + kThreads - 1) / kThreads),
                  kThreads, bias_relu_dropout_v2)
TB_CUDA_V2_LAUNCH(BiasReluDropoutGradArgs, static_cast<unsigned>(num_chunks(a.rows)),
                  static_cast<unsigned>(a.cols / kVec), bias_relu_dropout_grad_v2)
TB_CUDA_V2_LAUNCH(ColumnSumsArgs, static_cast<unsigned>(num_chunks(a.rows)),
                  static_cast<unsigned>(a.cols / kVec), column_sums_v2)
TB_CUDA_V2_LAUNCH(CausalSoftmaxArgs, warps_grid_(a.rows), kWarps* kWarp, causal_softmax_v2)
TB_CUDA_V2_LAUNCH(CausalSoftmaxGradArgs, warps_grid_(a.rows), kWarps* kWarp, causal_softmax_grad_v2)
TB_CUDA_V2_LAUNCH(HeadCrossEntropyArgs, warps_grid_(num_chunks(a.rows)), kWarps* kWarp,
                  head_cross_entropy_v2)
#undef TB_CUDA_V2_LAUNCH

}  // namespace trainbench::kernels::cuda
