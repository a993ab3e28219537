// The v2 kernels a block per chunk of kChunkRows rows with a thread per kV2Vec columns
// (--gpu_kernels v2; rows_v2.cuh): LayerNorm's backward, ReLU's and the column sums, their column
// sums in registers; and kV2Vec elements a thread, bias + ReLU + dropout and the heads' layout.
#include "rows_v2.cuh"

namespace trainbench::kernels::cuda {
namespace {

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
    load_(static_cast<const A*>(a.d_resid_out), o + c, grad);  // in flight over the row's sums
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
#pragma unroll 4  // 4 rows a trip (each column's sum still adds them in row order)
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
#pragma unroll 4  // 4 rows a trip (each column's sum still adds them in row order)
  for (int64_t r = chunk * kChunkRows; r < r_end; ++r) {
    A x[kVec];
    load_(static_cast<const S*>(a.x), r * w + c, x);
#pragma unroll
    for (int j = 0; j < kVec; ++j) sums[j] += x[j];
  }
  store_(static_cast<A*>(a.partials) + chunk * w, c, sums);
}

// As rows.cu's heads_kernel, kVec columns a thread (hd a multiple of kVec: a pack never crosses
// a head), each pack moved as 16-byte words with its index arithmetic done once.
template <typename Src, typename Dst, typename R>
__global__ void heads_v2(HeadsArgs a) {
  using A = HeadsAcc<Src, Dst>;
  const int64_t packs = a.rows * a.parts * a.heads * a.hd / kVec;
  for (int64_t p = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; p < packs;
       p += int64_t(gridDim.x) * blockDim.x) {
    const int64_t i = p * kVec;
    const HeadsPlace at = heads_place(a, i);  // the pack's first element; the rest follow it
    A v[kVec];
    if (a.to_heads) {
      load_(static_cast<const Src*>(a.row_data), i, v);
      A bias[kVec] = {};
      if (a.bias != nullptr) load_(static_cast<const A*>(a.bias), at.col, bias);
#pragma unroll
      for (int j = 0; j < kVec; ++j) {
        if (a.bias != nullptr) v[j] += bias[j];
        v[j] = m::rounded_as<A, Dst, R>(v[j]);
      }
      store_(static_cast<Dst*>(at.part), at.offset, v);
    } else {
      load_(static_cast<const Src*>(at.part), at.offset, v);
#pragma unroll
      for (int j = 0; j < kVec; ++j) v[j] = m::rounded_as<A, Dst, R>(v[j]);
      store_(static_cast<Dst*>(a.row_data), i, v);
    }
  }
}

}  // namespace

TB_CUDA_DROP_ADD_LN_LAUNCH(launch_v2, DropAddLnGradArgs, drop_add_ln_grad_v2,
                           static_cast<unsigned>(num_chunks(a.rows)),
                           static_cast<unsigned>(a.cols / kVec))
TB_CUDA_ONE_FORMAT_LAUNCH(launch_v2, BiasReluDropoutArgs, bias_relu_dropout_v2,
                          grid_((a.rows * a.cols / kVec + kThreads - 1) / kThreads), kThreads)
TB_CUDA_ONE_FORMAT_LAUNCH(launch_v2, BiasReluDropoutGradArgs, bias_relu_dropout_grad_v2,
                          static_cast<unsigned>(num_chunks(a.rows)),
                          static_cast<unsigned>(a.cols / kVec))
TB_CUDA_ONE_FORMAT_LAUNCH(launch_v2, ColumnSumsArgs, column_sums_v2,
                          static_cast<unsigned>(num_chunks(a.rows)),
                          static_cast<unsigned>(a.cols / kVec))
cudaError_t launch_v2(const HeadsArgs& a, cudaStream_t stream) {
  const int64_t blocks = (a.rows * a.parts * a.heads * a.hd / kVec + kThreads - 1) / kThreads;
  return launched_(with_heads_formats(a, [&](auto src, auto dst) {
    using F = decltype(src);
    using Dst = typename decltype(dst)::S;
    heads_v2<typename F::S, Dst, HeadsRound<F, decltype(dst)>>
        <<<grid_(blocks), kThreads, 0, stream>>>(a);
    if (a.partials != nullptr && !a.to_heads) {  // the merged rows' column sums, after
      const ColumnSumsArgs sums =
          column_sums_args(a.rows, a.parts * a.heads * a.hd, a.row_data, a.partials, a.rows_format);
      column_sums_v2<HeadsAcc<typename F::S, Dst>, Dst, Dst>
          <<<static_cast<unsigned>(num_chunks(a.rows)), static_cast<unsigned>(sums.cols / kVec), 0,
             stream>>>(sums);
    }
  }));
}

}  // namespace trainbench::kernels::cuda
