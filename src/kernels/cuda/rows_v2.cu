// The v2 kernels a warp per row (--gpu_kernels v2; rows_v2.cuh): LayerNorm forward, the causal
// softmax and its backward, and a warp per chunk of kChunkRows rows, the head's cross-entropy.
#include "rows_v2.cuh"

namespace trainbench::kernels::cuda {
namespace {

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
    A mx = -1e30, zt = 0;  // zt: the target's logit, in its lane alone until the warp's sum
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
        if (col_(g) + j == target) zt = e[g][j];
      }
    }
    mx = warp_max(mx);
    zt = warp_sum(zt);  // one lane's value plus zeros: that value
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

}  // namespace

TB_CUDA_DROP_ADD_LN_LAUNCH(launch_v2, DropAddLnArgs, drop_add_ln_v2, warps_grid_(a.rows),
                           kWarps* kWarp)
TB_CUDA_ONE_FORMAT_LAUNCH(launch_v2, CausalSoftmaxArgs, causal_softmax_v2, warps_grid_(a.rows),
                          kWarps* kWarp)
TB_CUDA_ONE_FORMAT_LAUNCH(launch_v2, CausalSoftmaxGradArgs, causal_softmax_grad_v2,
                          warps_grid_(a.rows), kWarps* kWarp)
TB_CUDA_ONE_FORMAT_LAUNCH(launch_v2, HeadCrossEntropyArgs, head_cross_entropy_v2,
                          warps_grid_(num_chunks(a.rows)), kWarps* kWarp)

}  // namespace trainbench::kernels::cuda
