// CUDA kernels of the fused path: the math of kernels/fused_math.h (the same functions the CPU
// row functions call), one thread block per row for the row reductions (LayerNorm, softmax,
// cross-entropy) and per chunk of kChunkRows rows for the column reductions (bias, gamma and
// beta gradients), so the partial sums have the CPU's layout and order of addition per chunk.
// No LibTorch header: the launchers take raw arguments and the caller's stream.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <type_traits>

#include "fused_kernels_cuda.h"
#include "trainbench/kernels/fused_math.h"

namespace trainbench::gpu::detail {
namespace {

namespace m = trainbench::kernels::math;
using kernels::Dt;
using kernels::kChunkRows;

constexpr int kThreads = 256;

template <typename A>
__device__ A ld(const float* p, int64_t i) {
  return static_cast<A>(p[i]);
}
template <typename A>
__device__ A ld(const double* p, int64_t i) {
  return static_cast<A>(p[i]);
}
template <typename A>
__device__ A ld(const __nv_bfloat16* p, int64_t i) {
  return static_cast<A>(__bfloat162float(p[i]));
}
template <typename A>
__device__ A ld(const __half* p, int64_t i) {
  return static_cast<A>(__half2float(p[i]));
}
template <typename A>
__device__ void st(float* p, int64_t i, A v) {
  p[i] = static_cast<float>(v);
}
template <typename A>
__device__ void st(double* p, int64_t i, A v) {
  p[i] = static_cast<double>(v);
}
template <typename A>
__device__ void st(__nv_bfloat16* p, int64_t i, A v) {
  p[i] = __float2bfloat16(static_cast<float>(v));
}
template <typename A>
__device__ void st(__half* p, int64_t i, A v) {
  p[i] = __float2half(static_cast<float>(v));
}

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

template <typename A, typename Sb, typename So>
__global__ void drop_add_ln_kernel(kernels::DropAddLnArgs a) {
  __shared__ A shm[32];
  const int64_t r = blockIdx.x, d = a.cols, o = r * d;
  const A* resid = static_cast<const A*>(a.resid);
  const A* bias = static_cast<const A*>(a.bias);
  const A* gamma = static_cast<const A*>(a.gamma);
  const A* beta = static_cast<const A*>(a.beta);
  A* x = static_cast<A*>(a.resid_out) + o;  // the CUDA path always keeps r'
  So* y = static_cast<So*>(a.y) + o;
  A sum = 0;
  for (int64_t c = threadIdx.x; c < d; c += blockDim.x) {
    const A v = ld<A>(static_cast<const Sb*>(a.branch), o + c) + (bias ? bias[c] : A(0));
    const A f = m::dropout_factor(a.key, static_cast<uint64_t>(o + c), a.threshold,
                                  static_cast<A>(a.scale));
    x[c] = m::dropped_add(resid ? resid[o + c] : A(0), v, f);
    sum += x[c];
  }
  if (!gamma) {
    for (int64_t c = threadIdx.x; c < d; c += blockDim.x) st(y, c, x[c]);
    return;
  }
  const A mean0 = block_sum(sum, shm) / static_cast<A>(d);
  A sq = 0;
  for (int64_t c = threadIdx.x; c < d; c += blockDim.x) sq += (x[c] - mean0) * (x[c] - mean0);
  sq = block_sum(sq, shm);
  A mean, rstd;
  m::row_stats(A(0), sq, mean0, d, static_cast<A>(a.eps), &mean, &rstd);
  if (threadIdx.x == 0) {
    static_cast<A*>(a.mean)[r] = mean;
    static_cast<A*>(a.rstd)[r] = rstd;
  }
  for (int64_t c = threadIdx.x; c < d; c += blockDim.x) {
    st(y, c, m::layer_norm_value(x[c], mean, rstd, gamma[c], beta[c]));
  }
}

template <typename A, typename Sb, typename So>
__global__ void drop_add_ln_grad_kernel(kernels::DropAddLnGradArgs a) {
  __shared__ A shm[32];
  const int64_t chunk = blockIdx.x, d = a.cols;
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
        const A xhat = (ro[o + c] - mean) * rstd, dyv = ld<A>(dy, o + c);
        s1 += dyv * gamma[c];
        s2 += dyv * gamma[c] * xhat;
        pb[d + c] += dyv * xhat;
        pb[2 * d + c] += dyv;
      }
      c1 = block_sum(s1, shm) / static_cast<A>(d);
      c2 = block_sum(s2, shm) / static_cast<A>(d);
    }
    for (int64_t c = threadIdx.x; c < d; c += blockDim.x) {
      A g = dro ? dro[o + c] : A(0);
      if (gamma) {
        g +=
            m::layer_norm_grad(ld<A>(dy, o + c), gamma[c], (ro[o + c] - mean) * rstd, rstd, c1, c2);
      } else if (dy) {
        g += ld<A>(dy, o + c);
      }
      if (a.d_resid) static_cast<A*>(a.d_resid)[o + c] = g;
      const A db = g * m::dropout_factor(a.key, static_cast<uint64_t>(o + c), a.threshold,
                                         static_cast<A>(a.scale));
      st(static_cast<Sb*>(a.d_branch), o + c, db);
      pb[c] += db;
    }
  }
}

template <typename A, typename S>
__global__ void bias_relu_dropout_kernel(kernels::BiasReluDropoutArgs a) {
  const int64_t n = a.rows * a.cols;
  S* x = static_cast<S*>(a.a);
  const A* bias = static_cast<const A*>(a.bias);
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const A f =
        m::dropout_factor(a.key, static_cast<uint64_t>(i), a.threshold, static_cast<A>(a.scale));
    st(x, i, m::bias_relu_dropout(ld<A>(x, i), bias[i % a.cols], f));
  }
}

template <typename A, typename S>
__global__ void bias_relu_dropout_grad_kernel(kernels::BiasReluDropoutGradArgs a) {
  const int64_t chunk = blockIdx.x, f = a.cols;
  A* pb = static_cast<A*>(a.partials) + chunk * f;
  const int64_t r_end = min(a.rows, (chunk + 1) * kChunkRows);
  for (int64_t c = threadIdx.x; c < f; c += blockDim.x) {
    A acc = 0;
    for (int64_t r = chunk * kChunkRows; r < r_end; ++r) {
      const A g = m::bias_relu_dropout_grad(ld<A>(static_cast<const S*>(a.dout), r * f + c),
                                            ld<A>(static_cast<const S*>(a.out), r * f + c),
                                            static_cast<A>(a.scale));
      st(static_cast<S*>(a.da), r * f + c, g);
      acc += g;
    }
    pb[c] = acc;
  }
}

template <typename A, typename S>
__global__ void causal_softmax_kernel(kernels::CausalSoftmaxArgs a) {
  __shared__ A shm[32];
  const int64_t r = blockIdx.x, n = a.seq, o = r * n, valid = r % n + 1;
  S* x = static_cast<S*>(a.x);
  const A scale = static_cast<A>(a.scale);
  A mx = -1e30;
  for (int64_t j = threadIdx.x; j < valid; j += blockDim.x) mx = max(mx, ld<A>(x, o + j) * scale);
  mx = block_max(mx, shm);
  A sum = 0;
  for (int64_t j = threadIdx.x; j < valid; j += blockDim.x) {
    sum += m::exp_nonpos(ld<A>(x, o + j) * scale - mx);
  }
  const A inv = A(1) / block_sum(sum, shm);
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    st(x, o + j, j < valid ? m::exp_nonpos(ld<A>(x, o + j) * scale - mx) * inv : A(0));
  }
}

template <typename A, typename S>
__global__ void causal_softmax_grad_kernel(kernels::CausalSoftmaxGradArgs a) {
  __shared__ A shm[32];
  const int64_t r = blockIdx.x, n = a.seq, o = r * n, valid = r % n + 1;
  const S* p = static_cast<const S*>(a.p);
  S* dp = static_cast<S*>(a.dp);
  A dot = 0;
  for (int64_t j = threadIdx.x; j < valid; j += blockDim.x)
    dot += ld<A>(p, o + j) * ld<A>(dp, o + j);
  dot = block_sum(dot, shm);
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    const A g = j < valid ? m::softmax_grad(ld<A>(p, o + j), ld<A>(dp, o + j), dot) : A(0);
    st(dp, o + j, static_cast<A>(a.scale) * g);
  }
}

template <typename A, typename S>
__global__ void head_cross_entropy_kernel(kernels::HeadCrossEntropyArgs a) {
  __shared__ A shm[32];
  const int64_t chunk = blockIdx.x, v = a.cols;
  S* z = static_cast<S*>(a.logits);
  const A* bias = static_cast<const A*>(a.bias);
  const A inv_rows = A(1) / static_cast<A>(a.rows);
  A loss = 0;
  const int64_t r_end = min(a.rows, (chunk + 1) * kChunkRows);
  for (int64_t r = chunk * kChunkRows; r < r_end; ++r) {
    const int64_t o = r * v, target = a.targets[r];
    A mx = -1e30;
    for (int64_t c = threadIdx.x; c < v; c += blockDim.x) mx = max(mx, ld<A>(z, o + c) + bias[c]);
    mx = block_max(mx, shm);
    A sum = 0;
    for (int64_t c = threadIdx.x; c < v; c += blockDim.x) {
      sum += m::exp_nonpos(ld<A>(z, o + c) + bias[c] - mx);
    }
    sum = block_sum(sum, shm);
    const A zt = ld<A>(z, o + target) + bias[target];
    __syncthreads();  // every thread has read z[target] before it is overwritten
    loss += m::log_(sum) - (zt - mx);
    const A inv = A(1) / sum;
    for (int64_t c = threadIdx.x; c < v; c += blockDim.x) {
      const A e = m::exp_nonpos(ld<A>(z, o + c) + bias[c] - mx);
      st(z, o + c, m::cross_entropy_grad(e * inv, c == target, inv_rows));
    }
  }
  if (threadIdx.x == 0) static_cast<A*>(a.partials)[chunk] = loss;
}

// Calls fn(tag) with a null pointer of the device storage type of dt.
template <typename Fn>
void with_storage(Dt dt, Fn&& fn) {
  switch (dt) {
    case Dt::kF32:
      return fn(static_cast<float*>(nullptr));
    case Dt::kF64:
      return fn(static_cast<double*>(nullptr));
    case Dt::kBF16:
      return fn(static_cast<__nv_bfloat16*>(nullptr));
    case Dt::kF16:
      return fn(static_cast<__half*>(nullptr));
  }
}
template <typename T>
using Elem = std::remove_pointer_t<T>;

int64_t chunks_(int64_t rows) { return kernels::num_chunks(rows); }

}  // namespace

#define TB_ACC_SWITCH(ACC, ...) \
  if ((ACC) == Dt::kF64) {      \
    using A = double;           \
    __VA_ARGS__;                \
  } else {                      \
    using A = float;            \
    __VA_ARGS__;                \
  }

cudaError_t launch(const kernels::DropAddLnArgs& a, cudaStream_t s) {
  with_storage(a.branch_dt, [&](auto bt) {
    with_storage(a.out_dt, [&](auto ot) {
      using Sb = Elem<decltype(bt)>;
      using So = Elem<decltype(ot)>;
      TB_ACC_SWITCH(a.acc, (drop_add_ln_kernel<A, Sb, So><<<a.rows, kThreads, 0, s>>>(a)))
    });
  });
  return cudaGetLastError();
}
cudaError_t launch(const kernels::DropAddLnGradArgs& a, cudaStream_t s) {
  with_storage(a.branch_dt, [&](auto bt) {
    with_storage(a.out_dt, [&](auto ot) {
      using Sb = Elem<decltype(bt)>;
      using So = Elem<decltype(ot)>;
      TB_ACC_SWITCH(a.acc,
                    (drop_add_ln_grad_kernel<A, Sb, So><<<chunks_(a.rows), kThreads, 0, s>>>(a)))
    });
  });
  return cudaGetLastError();
}
cudaError_t launch(const kernels::BiasReluDropoutArgs& a, cudaStream_t s) {
  const int64_t blocks = (a.rows * a.cols + kThreads - 1) / kThreads;
  with_storage(a.dt, [&](auto t) {
    using S = Elem<decltype(t)>;
    TB_ACC_SWITCH(a.acc,
                  (bias_relu_dropout_kernel<A, S>
                   <<<static_cast<unsigned>(blocks < 65535 ? blocks : 65535), kThreads, 0, s>>>(a)))
  });
  return cudaGetLastError();
}
cudaError_t launch(const kernels::BiasReluDropoutGradArgs& a, cudaStream_t s) {
  with_storage(a.dt, [&](auto t) {
    using S = Elem<decltype(t)>;
    TB_ACC_SWITCH(a.acc,
                  (bias_relu_dropout_grad_kernel<A, S><<<chunks_(a.rows), kThreads, 0, s>>>(a)))
  });
  return cudaGetLastError();
}
cudaError_t launch(const kernels::CausalSoftmaxArgs& a, cudaStream_t s) {
  with_storage(a.dt, [&](auto t) {
    using S = Elem<decltype(t)>;
    TB_ACC_SWITCH(a.dt, (causal_softmax_kernel<A, S><<<a.rows, kThreads, 0, s>>>(a)))
  });
  return cudaGetLastError();
}
cudaError_t launch(const kernels::CausalSoftmaxGradArgs& a, cudaStream_t s) {
  with_storage(a.dt, [&](auto t) {
    using S = Elem<decltype(t)>;
    TB_ACC_SWITCH(a.dt, (causal_softmax_grad_kernel<A, S><<<a.rows, kThreads, 0, s>>>(a)))
  });
  return cudaGetLastError();
}
cudaError_t launch(const kernels::HeadCrossEntropyArgs& a, cudaStream_t s) {
  with_storage(a.dt, [&](auto t) {
    using S = Elem<decltype(t)>;
    TB_ACC_SWITCH(a.acc, (head_cross_entropy_kernel<A, S><<<chunks_(a.rows), kThreads, 0, s>>>(a)))
  });
  return cudaGetLastError();
}

}  // namespace trainbench::gpu::detail
