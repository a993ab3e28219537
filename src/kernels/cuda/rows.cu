// CUDA kernels of the fused path (see rows.h): the math of fused_math.h and the loads and
// stores of storage.h, the same functions the CPU rows call; one thread block per row for the
// row reductions (LayerNorm, softmax, cross-entropy) and per chunk of kChunkRows rows for the
// column reductions (bias, gamma and beta gradients), so the partial sums have the CPU's
// layout and order of addition per chunk. No LibTorch header.
#include <cuda_runtime.h>

#include <algorithm>
#include <type_traits>

#include "rows.h"
#include "rows_common.cuh"
#include "trainbench/kernels/fused_math.h"
#include "trainbench/kernels/storage.h"

namespace trainbench::kernels::cuda {
namespace {

namespace m = trainbench::kernels::math;
using namespace detail;  // NOLINT(google-build-using-namespace): rows_common.cuh

// Sum / max over the block; every thread gets the result. shm: 32 values.
template <typename A>
__device__ A block_sum(A v, A* shm) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  __syncthreads();
  if (lane == 0) shm[warp] = v;
  __syncthreads();
  A total = 0;
  for (int w = 0; w < static_cast<int>(blockDim.x / 32); ++w) total += shm[w];
  return total;
}
template <typename A>
__device__ A block_max(A v, A* shm) {
  for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_down_sync(0xffffffffu, v, o));
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  __syncthreads();
  if (lane == 0) shm[warp] = v;
  __syncthreads();
  A best = shm[0];
  for (int w = 1; w < static_cast<int>(blockDim.x / 32); ++w) best = max(best, shm[w]);
  return best;
}

// R: the 16-bit type float32 storage holds (the format's values), else R = S: rounded as read and
// as stored by the rule both backends share (fused_math.h rounded_as; cpu/rows.cpp says why).
template <typename A, typename Sb, typename So, typename R>
__global__ void drop_add_ln_kernel(DropAddLnArgs a) {
  __shared__ A shm[32];
  const int64_t r = blockIdx.x, d = a.cols, o = r * d;
  const DropoutArgs drop = m::at_step(a.drop);  // the step's key, read once
  const A* resid = static_cast<const A*>(a.resid);
  const A* bias = static_cast<const A*>(a.bias);
  const A* gamma = static_cast<const A*>(a.gamma);
  const A* beta = static_cast<const A*>(a.beta);
  A* x = static_cast<A*>(a.resid_out) + o;
  So* y = static_cast<So*>(a.y) + o;
  A sum = 0;
  for (int64_t c = threadIdx.x; c < d; c += blockDim.x) {
    const A v = ld<A>(static_cast<const Sb*>(a.branch), o + c) + bias[c];
    const A f = m::dropout_factor<A>(drop, static_cast<uint64_t>(o + c));
    x[c] = m::dropped_add(resid ? resid[o + c] : A(0), v, f);
    sum += x[c];
  }
  if (!gamma) {
    for (int64_t c = threadIdx.x; c < d; c += blockDim.x) st(y, c, m::rounded_as<A, So, R>(x[c]));
    return;
  }
  const A mean0 = block_sum(sum, shm) / static_cast<A>(d);
  A sq = 0;
  for (int64_t c = threadIdx.x; c < d; c += blockDim.x) sq += (x[c] - mean0) * (x[c] - mean0);
  sq = block_sum(sq, shm);
  const A mean = mean0, rstd = m::row_rstd(sq, d, static_cast<A>(a.eps));
  if (threadIdx.x == 0) {
    static_cast<A*>(a.mean)[r] = mean;
    static_cast<A*>(a.rstd)[r] = rstd;
  }
  for (int64_t c = threadIdx.x; c < d; c += blockDim.x) {
    st(y, c, m::rounded_as<A, So, R>(m::layer_norm_value(x[c], mean, rstd, gamma[c], beta[c])));
  }
}

template <typename A, typename Sb, typename So, typename R>
__global__ void drop_add_ln_grad_kernel(DropAddLnGradArgs a) {
  __shared__ A shm[32];
  const int64_t chunk = blockIdx.x, d = a.cols;
  const DropoutArgs drop = m::at_step(a.drop);
  const So* dy = static_cast<const So*>(a.dy);
  const A* dro = static_cast<const A*>(a.d_resid_out);
  const A* ro = static_cast<const A*>(a.resid_out);
  const A* gamma = static_cast<const A*>(a.gamma);
  A* pb = static_cast<A*>(a.partials) + chunk * 3 * d;
  for (int64_t c = threadIdx.x; c < 3 * d; c += blockDim.x) pb[c] = 0;
  __syncthreads();  // another thread may own a zeroed column's accumulation below
  const int64_t r_end = min(a.rows, (chunk + 1) * kChunkRows);
  for (int64_t r = chunk * kChunkRows; r < r_end; ++r) {
    const int64_t o = r * d;
    A mean = 0, rstd = 0, c1 = 0, c2 = 0;
    if (gamma) {
      mean = static_cast<const A*>(a.mean)[r];
      rstd = static_cast<const A*>(a.rstd)[r];
      A s1 = 0, s2 = 0;
      for (int64_t c = threadIdx.x; c < d; c += blockDim.x) {
        const A xhat = (ro[o + c] - mean) * rstd, dyv = m::rounded_as<A, So, R>(ld<A>(dy, o + c));
        s1 += dyv * gamma[c];
        s2 += dyv * gamma[c] * xhat;
        pb[d + c] += dyv * xhat;
        pb[2 * d + c] += dyv;
      }
      c1 = block_sum(s1, shm) / static_cast<A>(d);
      c2 = block_sum(s2, shm) / static_cast<A>(d);
    }
    for (int64_t c = threadIdx.x; c < d; c += blockDim.x) {
      A g = dro[o + c];
      const A dyv = m::rounded_as<A, So, R>(ld<A>(dy, o + c));
      if (gamma) {
        g += m::layer_norm_grad(dyv, gamma[c], (ro[o + c] - mean) * rstd, rstd, c1, c2);
      } else {
        g += dyv;
      }
      if (a.d_resid) static_cast<A*>(a.d_resid)[o + c] = g;
      const A db = g * m::dropout_factor<A>(drop, static_cast<uint64_t>(o + c));
      st(static_cast<Sb*>(a.d_branch), o + c, db);
      pb[c] += db;
    }
  }
}

template <typename A, typename S, typename R>
__global__ void bias_relu_dropout_kernel(BiasReluDropoutArgs a) {
  const int64_t n = a.rows * a.cols;
  S* x = static_cast<S*>(a.a);
  const DropoutArgs drop = m::at_step(a.drop);
  const A* bias = static_cast<const A*>(a.bias);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const A f = m::dropout_factor<A>(drop, static_cast<uint64_t>(i));
    const A y = m::bias_relu_dropout(m::rounded_as<A, S, R>(ld<A>(x, i)), bias[i % a.cols], f);
    st(x, i, m::rounded_as<A, S, R>(y));
  }
}

template <typename A, typename S, typename R>
__global__ void bias_relu_dropout_grad_kernel(BiasReluDropoutGradArgs a) {
  const int64_t chunk = blockIdx.x, f = a.cols;
  A* pb = static_cast<A*>(a.partials) + chunk * f;
  const int64_t r_end = min(a.rows, (chunk + 1) * kChunkRows);
  for (int64_t c = threadIdx.x; c < f; c += blockDim.x) {
    A acc = 0;
    for (int64_t r = chunk * kChunkRows; r < r_end; ++r) {
      const A dout = m::rounded_as<A, S, R>(ld<A>(static_cast<const S*>(a.dout), r * f + c));
      const A g = m::bias_relu_dropout_grad(dout, ld<A>(static_cast<const S*>(a.out), r * f + c),
                                            static_cast<A>(a.scale));
      st(static_cast<S*>(a.da), r * f + c, m::rounded_as<A, S, R>(g));
      acc += g;
    }
    pb[c] = acc;
  }
}

template <typename A, typename S, typename R = S>  // R: the launch macro's; unused
__global__ void column_sums_kernel(ColumnSumsArgs a) {
  const int64_t chunk = blockIdx.x, w = a.cols;
  A* pb = static_cast<A*>(a.partials) + chunk * w;
  const int64_t r_end = min(a.rows, (chunk + 1) * kChunkRows);
  for (int64_t c = threadIdx.x; c < w; c += blockDim.x) {
    A acc = 0;
    for (int64_t r = chunk * kChunkRows; r < r_end; ++r) {
      acc += ld<A>(static_cast<const S*>(a.x), r * w + c);
    }
    pb[c] = acc;
  }
}

template <typename A, typename S, typename R>
__global__ void causal_softmax_kernel(CausalSoftmaxArgs a) {
  __shared__ A shm[32];
  const int64_t r = blockIdx.x, n = a.seq, valid = r % n + 1;
  const m::ScoreRow row = m::score_row(r, n, a.rows, a.block);  // the square's or a block's
  const int64_t o = row.offset;
  S* x = static_cast<S*>(a.x);
  const A scale = static_cast<A>(a.scale);
  const auto score = [&](int64_t j) { return m::rounded_as<A, S, R>(ld<A>(x, o + j)) * scale; };
  A mx = -1e30;
  for (int64_t j = threadIdx.x; j < valid; j += blockDim.x) mx = max(mx, score(j));
  mx = block_max(mx, shm);
  A sum = 0;
  for (int64_t j = threadIdx.x; j < valid; j += blockDim.x) sum += m::exp_nonpos(score(j) - mx);
  const A inv = A(1) / block_sum(sum, shm);
  for (int64_t j = threadIdx.x; j < row.len; j += blockDim.x) {
    st(x, o + j, j < valid ? m::rounded_as<A, S, R>(m::exp_nonpos(score(j) - mx) * inv) : A(0));
  }
}

template <typename A, typename S, typename R>
__global__ void causal_softmax_grad_kernel(CausalSoftmaxGradArgs a) {
  __shared__ A shm[32];
  const int64_t r = blockIdx.x, n = a.seq, valid = r % n + 1;
  const m::ScoreRow row = m::score_row(r, n, a.rows, a.block);
  const int64_t o = row.offset;
  const S* p = static_cast<const S*>(a.p);
  S* dp = static_cast<S*>(a.dp);
  const auto grad_in = [&](int64_t j) { return m::rounded_as<A, S, R>(ld<A>(dp, o + j)); };
  A dot = 0;
  for (int64_t j = threadIdx.x; j < valid; j += blockDim.x) dot += ld<A>(p, o + j) * grad_in(j);
  dot = block_sum(dot, shm);
  for (int64_t j = threadIdx.x; j < row.len; j += blockDim.x) {
    const A g = j < valid ? m::softmax_grad(ld<A>(p, o + j), grad_in(j), dot) : A(0);
    st(dp, o + j, m::rounded_as<A, S, R>(static_cast<A>(a.scale) * g));
  }
}

// Heads layout (HeadsArgs): a thread per element of the rows layout.
template <typename Src, typename Dst, typename R>
__global__ void heads_kernel(HeadsArgs a) {
  using A = HeadsAcc<Src, Dst>;
  const int64_t n = a.rows * a.parts * a.heads * a.hd;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const HeadsPlace at = heads_place(a, i);
    if (a.to_heads) {
      A v = ld<A>(static_cast<const Src*>(a.row_data), i);
      if (a.bias != nullptr) v += static_cast<const A*>(a.bias)[at.col];
      st(static_cast<Dst*>(at.part), at.offset, m::rounded_as<A, Dst, R>(v));
    } else {
      const A v = ld<A>(static_cast<const Src*>(at.part), at.offset);
      st(static_cast<Dst*>(a.row_data), i, m::rounded_as<A, Dst, R>(v));
    }
  }
}

// R: the 16-bit type float32 logits hold (the format's values), rounded as read and as stored; each
// thread adds its columns' gradients as stored into the chunk's bias partials.
template <typename A, typename S, typename R>
__global__ void head_cross_entropy_kernel(HeadCrossEntropyArgs a) {
  __shared__ A shm[32];
  const int64_t chunk = blockIdx.x, v = a.cols;
  S* z = static_cast<S*>(a.logits);
  const A* bias = static_cast<const A*>(a.bias);
  A* pb = a.bias_partials != nullptr ? static_cast<A*>(a.bias_partials) + chunk * v : nullptr;
  const A inv_rows = A(1) / static_cast<A>(a.rows);
  const auto logit = [&](int64_t i, int64_t c) {
    return m::rounded_as<A, S, R>(ld<A>(z, i)) + bias[c];
  };
  A loss = 0;
  const int64_t r_end = min(a.rows, (chunk + 1) * kChunkRows);
  if (pb != nullptr) {
    for (int64_t c = threadIdx.x; c < v; c += blockDim.x) pb[c] = 0;
  }
  for (int64_t r = chunk * kChunkRows; r < r_end; ++r) {
    const int64_t o = r * v, target = a.targets[r];
    A mx = -1e30;
    for (int64_t c = threadIdx.x; c < v; c += blockDim.x) mx = max(mx, logit(o + c, c));
    mx = block_max(mx, shm);
    A sum = 0;
    for (int64_t c = threadIdx.x; c < v; c += blockDim.x)
      sum += m::exp_nonpos(logit(o + c, c) - mx);
    sum = block_sum(sum, shm);
    const A zt = logit(o + target, target);
    __syncthreads();  // every thread has read z[target] before it is overwritten
    loss += m::log_(sum) - (zt - mx);
    const A inv = A(1) / sum;
    for (int64_t c = threadIdx.x; c < v; c += blockDim.x) {
      const A e = m::exp_nonpos(logit(o + c, c) - mx);
      st(z, o + c, m::rounded_as<A, S, R>(m::cross_entropy_grad(e * inv, c == target, inv_rows)));
      if (pb != nullptr) pb[c] += ld<A>(z, o + c);  // the column's own thread, every row
    }
  }
  if (threadIdx.x == 0) static_cast<A*>(a.partials)[chunk] = loss;
}

// One thread per element, grid-stride over blockIdx.x; G, C, R as the CPU rows' adam_. A list
// (--adam_kernel multi): a row of blocks per item (blockIdx.y).
template <typename G, typename C, typename R>
__device__ void adam_elements_(const AdamArgs& a) {
  if (a.found_inf != nullptr && *a.found_inf != 0) return;
  const m::AdamCoefs k = m::adam_coefs(a, *a.step);
  const float scale = a.grad_scale != nullptr ? *a.grad_scale : 1.0f;
  float* p = static_cast<float*>(a.param);
  float* mo = static_cast<float*>(a.exp_avg);
  float* vo = static_cast<float*>(a.exp_avg_sq);
  const int64_t n = a.rows * a.cols;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    float mi = mo[i], vi = vo[i];
    const float g = ld<float>(static_cast<const G*>(a.grad), i);
    const float pn = m::adam_param(p[i], g / scale, mi, vi, k);
    mo[i] = mi;
    vo[i] = vi;
    p[i] = pn;
    if (a.copy != nullptr) st(static_cast<C*>(a.copy), i, m::rounded_to<R>(pn));
  }
}
template <typename G, typename C, typename R>
__global__ void adam_kernel(AdamArgs a) {
  adam_elements_<G, C, R>(a);
}
template <typename G, typename C, typename R>
__global__ void adam_list_kernel(AdamListArgs l) {
  adam_elements_<G, C, R>(l.items[blockIdx.y]);
}

}  // namespace

cudaError_t has_code_for(int device, int* major, int* minor, std::string* name) {
  cudaDeviceProp prop{};
  cudaError_t err = cudaGetDeviceProperties(&prop, device);
  if (err != cudaSuccess) return err;
  *major = prop.major;
  *minor = prop.minor;
  *name = prop.name;
  int current = 0;
  err = cudaGetDevice(&current);
  if (err != cudaSuccess) return err;
  if (current != device && (err = cudaSetDevice(device)) != cudaSuccess) return err;
  cudaFuncAttributes attr{};
  err = cudaFuncGetAttributes(&attr, column_sums_kernel<float, float>);
  if (current != device) cudaSetDevice(current);
  if (err != cudaSuccess) cudaGetLastError();  // clear it: the caller reports it, nobody else
  return err;
}

// ---- launches: each kernel's instantiation for its Args' formats ------------------------------
// The formats a run reaches, as the CPU's run build holds them (cpu/rows.cpp; rows_common.cuh).
// Adam and its list: `blocks` for the largest item's elements, a row of them per item.
int64_t adam_blocks_(const AdamArgs& a) { return (a.rows * a.cols + kThreads - 1) / kThreads; }
template <typename Args>
cudaError_t adam_launch_(const Args& a, int64_t blocks, unsigned items, cudaStream_t stream) {
  if (blocks == 0) return cudaSuccess;  // empty parameters: nothing to launch
  const dim3 grid(grid_(blocks), items);
  const auto f = a.formats();
  bool held = false;
  with_format(f[0], [&](auto g) {
    using G = decltype(g);
    with_format(f[1], [&](auto c) {
      using C = decltype(c);
      if constexpr (kHeld<G, C>) {
        if constexpr (std::is_same_v<Args, AdamListArgs>) {
          adam_list_kernel<typename G::S, typename C::S, typename C::R>
              <<<grid, kThreads, 0, stream>>>(a);
        } else {
          adam_kernel<typename G::S, typename C::S, typename C::R>
              <<<grid, kThreads, 0, stream>>>(a);
        }
        held = true;
      }
    });
  });
  return launched_(held);
}

cudaError_t launch(const AdamArgs& a, cudaStream_t stream) {
  return adam_launch_(a, adam_blocks_(a), 1, stream);
}
cudaError_t launch(const AdamListArgs& a, cudaStream_t stream) {
  int64_t blocks = 0;
  for (int32_t i = 0; i < a.count; ++i) blocks = std::max(blocks, adam_blocks_(a.items[i]));
  return adam_launch_(a, blocks, static_cast<unsigned>(a.count), stream);
}
TB_CUDA_DROP_ADD_LN_LAUNCH(launch, DropAddLnArgs, drop_add_ln_kernel, a.rows, kThreads)
TB_CUDA_DROP_ADD_LN_LAUNCH(launch, DropAddLnGradArgs, drop_add_ln_grad_kernel, num_chunks(a.rows),
                           kThreads)
cudaError_t launch(const HeadsArgs& a, cudaStream_t stream) {
  const int64_t blocks = (a.rows * a.parts * a.heads * a.hd + kThreads - 1) / kThreads;
  if (blocks == 0) return cudaSuccess;
  return launched_(with_heads_formats(a, [&](auto src, auto dst) {
    using F = decltype(src);
    using Dst = typename decltype(dst)::S;
    heads_kernel<typename F::S, Dst, HeadsRound<F, decltype(dst)>>
        <<<grid_(blocks), kThreads, 0, stream>>>(a);
    if (a.partials != nullptr && !a.to_heads) {
      // The merged rows' column sums: a thread per element leaves no row to one thread, so
      // the column-sum kernel reads them after (the same per-chunk order as the CPU's pass).
      const ColumnSumsArgs sums =
          column_sums_args(a.rows, a.parts * a.heads * a.hd, a.row_data, a.partials, a.rows_format);
      column_sums_kernel<HeadsAcc<typename F::S, Dst>, Dst>
          <<<static_cast<unsigned>(num_chunks(a.rows)), kThreads, 0, stream>>>(sums);
    }
  }));
}
// One format: a block per row or chunk (bias + ReLU + dropout: a thread per element, grid-stride).
TB_CUDA_ONE_FORMAT_LAUNCH(launch, BiasReluDropoutArgs, bias_relu_dropout_kernel,
                          grid_((a.rows * a.cols + kThreads - 1) / kThreads), kThreads)
TB_CUDA_ONE_FORMAT_LAUNCH(launch, BiasReluDropoutGradArgs, bias_relu_dropout_grad_kernel,
                          num_chunks(a.rows), kThreads)
TB_CUDA_ONE_FORMAT_LAUNCH(launch, CausalSoftmaxArgs, causal_softmax_kernel, a.rows, kThreads)
TB_CUDA_ONE_FORMAT_LAUNCH(launch, CausalSoftmaxGradArgs, causal_softmax_grad_kernel, a.rows,
                          kThreads)
TB_CUDA_ONE_FORMAT_LAUNCH(launch, HeadCrossEntropyArgs, head_cross_entropy_kernel,
                          num_chunks(a.rows), kThreads)
TB_CUDA_ONE_FORMAT_LAUNCH(launch, ColumnSumsArgs, column_sums_kernel, num_chunks(a.rows), kThreads)

}  // namespace trainbench::kernels::cuda
