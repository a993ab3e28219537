// CPU rows of the fused kernels (see rows.h). This file is compiled twice (CMakeLists.txt): as
// itself with AVX2, FMA and F16C enabled, into namespace cpu::avx2, and through rows_avx512.cpp
// with AVX-512 F/BW/VL/DQ and 512-bit vectors, into cpu::avx512 (TB_ROWS_ISA names the
// namespace); both with -fopenmp-simd. It includes no LibTorch or other header with
// inline functions shared with the rest of the program: every function here, and in the
// kernels' headers it includes, is its own (static or in an unnamed namespace), so none
// compiled with these flags can be picked by the linker for a baseline caller. The loops are
// plain scalar code over one row at a time (the math of fused_math.h, the loads and stores of
// storage.h; float16 rows through a float buffer, RowIo below); `omp simd` lets the compiler
// vectorize the reductions.
#include "rows.h"

#include <immintrin.h>  // F16C: its functions are always inlined, never a shared symbol

#include <cstdlib>
#include <type_traits>

#include "trainbench/kernels/fused_math.h"
#include "trainbench/kernels/storage.h"

#ifndef TB_ROWS_ISA
#define TB_ROWS_ISA avx2
#define TB_ROWS_AVX2 1
#endif

namespace trainbench::kernels::cpu::TB_ROWS_ISA {
namespace {

namespace m = trainbench::kernels::math;

// Own helpers instead of std::vector / std::min: their out-of-line copies would be shared
// (weak) symbols that the rest of the program might bind to.
template <typename T>
inline T min_(T a, T b) {
  return b < a ? b : a;
}
template <typename T>
struct RowBuf {
  explicit RowBuf(int64_t n) : p(static_cast<T*>(std::malloc(sizeof(T) * (n > 0 ? n : 1)))) {}
  ~RowBuf() { std::free(p); }
  RowBuf(const RowBuf&) = delete;
  RowBuf& operator=(const RowBuf&) = delete;
  T* data() { return p; }
  T& operator[](int64_t i) { return p[i]; }
  T* p;
};

// ---- float16 rows through a float buffer ---------------------------------------------------
// GCC 12 converts _Float16 one element at a time even inside `omp simd` loops (a scalar
// vcvtph2ps/vcvtps2ph around every value: the float16 kernels ran 7-10x slower than float32,
// docs/BENCHMARKS.md), so a float16 row is converted whole into a float buffer first (F16C's
// vector instructions, 8 values each in both builds), the loops run on floats, and a row they
// wrote goes back the same way; the bits are the per-element conversions' (round to nearest
// even). bfloat16 stays in place: its integer conversion vectorizes inside the loops, and a
// buffer made its attention backward slower (softmax gradient: two more passes over the row).
void to_floats(const Half* s, float* d, int64_t n) {
  int64_t c = 0;
  for (; c + 8 <= n; c += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + c));
    _mm256_storeu_ps(d + c, _mm256_cvtph_ps(h));
  }
  for (; c < n; ++c) d[c] = to_float(s[c]);
}
void from_floats(const float* s, Half* d, int64_t n) {
  constexpr int kNearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  int64_t c = 0;
  for (; c + 8 <= n; c += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(s + c), kNearest);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(d + c), h);
  }
  for (; c < n; ++c) d[c] = to_half(s[c]);
}
// One row stream of storage S in a kernel accumulating in A: the loops read and write rows of
// T (S itself, or float for float16), through load() and row()/store().
template <typename A, typename S>
class RowIo {
 public:
  static constexpr bool kBuffered = std::is_same_v<S, Half> && std::is_same_v<A, float>;
  using T = std::conditional_t<kBuffered, float, S>;
  explicit RowIo(int64_t n) : buf_(kBuffered ? n : 1) {}
  // Where a loop writes the row dst[0, n): dst itself, or the buffer until store(dst, n).
  T* row(S* dst) { return kBuffered ? buf_.data() : reinterpret_cast<T*>(dst); }
  // The row src[0, n) as T: src itself, or its values converted into the buffer.
  const T* load(const S* src, int64_t n) { return load(const_cast<S*>(src), n); }
  T* load(S* src, int64_t n) {
    if constexpr (kBuffered) to_floats(src, buf_.data(), n);
    return row(src);
  }
  void store(S* dst, int64_t n) {
    if constexpr (kBuffered) from_floats(buf_.data(), dst, n);
  }

 private:
  RowBuf<T> buf_;
};

// ---- residual add + dropout + LayerNorm ----------------------------------------------------
// The inputs that may be null (kernel_args.h) are template flags, not pointer tests inside the
// loops: a load under a condition keeps the compiler from vectorizing.
template <typename A, typename Sb, typename So, bool kResid, bool kLn>
void drop_add_ln_(const DropAddLnArgs& a, int64_t c0, int64_t c1) {
  const int64_t d = a.cols;
  const A* resid = static_cast<const A*>(a.resid);
  const Sb* branch = static_cast<const Sb*>(a.branch);
  const A* bias = static_cast<const A*>(a.bias);
  const A* gamma = static_cast<const A*>(a.gamma);
  const A* beta = static_cast<const A*>(a.beta);
  const DropoutArgs drop = a.drop;  // a local copy: no store below may alias it
  RowIo<A, Sb> branch_io(d);
  RowIo<A, So> y_io(d);
  for (int64_t r = c0 * kChunkRows; r < min_(a.rows, c1 * kChunkRows); ++r) {
    const int64_t o = r * d;
    A* x = static_cast<A*>(a.resid_out) + o;
    const auto* br = branch_io.load(branch + o, d);
    So* y_row = static_cast<So*>(a.y) + o;
    auto* y = y_io.row(y_row);
    A sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int64_t c = 0; c < d; ++c) {
      const A f = m::dropout_factor<A>(drop, static_cast<uint64_t>(o + c));
      const A v = m::dropped_add(kResid ? resid[o + c] : A(0), ld<A>(br, c) + bias[c], f);
      x[c] = v;
      sum += v;
    }
    if constexpr (!kLn) {
#pragma omp simd
      for (int64_t c = 0; c < d; ++c) st(y, c, x[c]);
    } else {
      const A mean0 = sum / static_cast<A>(d);
      A sq = 0;  // a second pass over a row that is in L1: no cancellation in the variance
#pragma omp simd reduction(+ : sq)
      for (int64_t c = 0; c < d; ++c) sq += (x[c] - mean0) * (x[c] - mean0);
      const A mean = mean0, rstd = m::row_rstd(sq, d, static_cast<A>(a.eps));
      static_cast<A*>(a.mean)[r] = mean;
      static_cast<A*>(a.rstd)[r] = rstd;
#pragma omp simd
      for (int64_t c = 0; c < d; ++c) {
        st(y, c, m::layer_norm_value(x[c], mean, rstd, gamma[c], beta[c]));
      }
    }
    y_io.store(y_row, d);
  }
}

template <typename A, typename Sb, typename So, bool kDResid, bool kLn>
void drop_add_ln_grad_(const DropAddLnGradArgs& a, int64_t c0, int64_t c1) {
  const int64_t d = a.cols;
  const So* dy_all = static_cast<const So*>(a.dy);
  const A* dro = static_cast<const A*>(a.d_resid_out);
  const A* ro = static_cast<const A*>(a.resid_out);
  const A* gamma = static_cast<const A*>(a.gamma);
  A* d_resid = static_cast<A*>(a.d_resid);
  Sb* d_branch_all = static_cast<Sb*>(a.d_branch);
  const DropoutArgs drop = a.drop;  // a local copy: no store below may alias it
  RowIo<A, So> dy_io(d);
  RowIo<A, Sb> d_branch_io(d);
  for (int64_t chunk = c0; chunk < c1; ++chunk) {
    A* pb = static_cast<A*>(a.partials) + chunk * 3 * d;  // d_bias, then d_gamma, d_beta
    A* pg = pb + d;
    A* pe = pb + 2 * d;
    for (int64_t c = 0; c < 3 * d; ++c) pb[c] = 0;
    for (int64_t r = chunk * kChunkRows; r < min_(a.rows, (chunk + 1) * kChunkRows); ++r) {
      const int64_t o = r * d;
      const auto* dy = dy_io.load(dy_all + o, d);
      auto* d_branch = d_branch_io.row(d_branch_all + o);
      A mean = 0, rstd = 0, c1m = 0, c2m = 0;
      if constexpr (kLn) {
        mean = static_cast<const A*>(a.mean)[r];
        rstd = static_cast<const A*>(a.rstd)[r];
        A s1 = 0, s2 = 0;
#pragma omp simd reduction(+ : s1, s2)
        for (int64_t c = 0; c < d; ++c) {
          const A xhat = (ro[o + c] - mean) * rstd, dyv = ld<A>(dy, c);
          s1 += dyv * gamma[c];
          s2 += dyv * gamma[c] * xhat;
          pg[c] += dyv * xhat;
          pe[c] += dyv;
        }
        c1m = s1 / static_cast<A>(d);
        c2m = s2 / static_cast<A>(d);
      }
#pragma omp simd
      for (int64_t c = 0; c < d; ++c) {
        A g;
        if constexpr (kLn) {
          const A xhat = (ro[o + c] - mean) * rstd;
          g = m::layer_norm_grad(ld<A>(dy, c), gamma[c], xhat, rstd, c1m, c2m) + dro[o + c];
        } else {
          g = ld<A>(dy, c) + dro[o + c];
        }
        if constexpr (kDResid) d_resid[o + c] = g;
        const A db = g * m::dropout_factor<A>(drop, static_cast<uint64_t>(o + c));
        st(d_branch, c, db);
        pb[c] += db;
      }
      d_branch_io.store(d_branch_all + o, d);
    }
  }
}

// ---- bias + ReLU + dropout ---------------------------------------------------------------
template <typename A, typename S>
void bias_relu_dropout_(const BiasReluDropoutArgs& a, int64_t c0, int64_t c1) {
  const int64_t f = a.cols;
  S* x_all = static_cast<S*>(a.a);
  const A* bias = static_cast<const A*>(a.bias);
  const DropoutArgs drop = a.drop;  // a local copy: no store below may alias it
  RowIo<A, S> x_io(f);
  for (int64_t r = c0 * kChunkRows; r < min_(a.rows, c1 * kChunkRows); ++r) {
    const int64_t o = r * f;
    auto* x = x_io.load(x_all + o, f);
#pragma omp simd
    for (int64_t c = 0; c < f; ++c) {
      const A fac = m::dropout_factor<A>(drop, static_cast<uint64_t>(o + c));
      st(x, c, m::bias_relu_dropout(ld<A>(x, c), bias[c], fac));
    }
    x_io.store(x_all + o, f);
  }
}

template <typename A, typename S>
void bias_relu_dropout_grad_(const BiasReluDropoutGradArgs& a, int64_t c0, int64_t c1) {
  const int64_t f = a.cols;
  const S* dout_all = static_cast<const S*>(a.dout);
  const S* out_all = static_cast<const S*>(a.out);
  S* da_all = static_cast<S*>(a.da);
  const A scale = static_cast<A>(a.scale);
  RowIo<A, S> dout_io(f), out_io(f), da_io(f);
  for (int64_t chunk = c0; chunk < c1; ++chunk) {
    A* pb = static_cast<A*>(a.partials) + chunk * f;
    for (int64_t c = 0; c < f; ++c) pb[c] = 0;
    for (int64_t r = chunk * kChunkRows; r < min_(a.rows, (chunk + 1) * kChunkRows); ++r) {
      const int64_t o = r * f;
      const auto* dout = dout_io.load(dout_all + o, f);
      const auto* out = out_io.load(out_all + o, f);
      auto* da = da_io.row(da_all + o);
#pragma omp simd
      for (int64_t c = 0; c < f; ++c) {
        const A g = m::bias_relu_dropout_grad(ld<A>(dout, c), ld<A>(out, c), scale);
        st(da, c, g);
        pb[c] += g;
      }
      da_io.store(da_all + o, f);
    }
  }
}

// ---- causal softmax ------------------------------------------------------------------------
template <typename A, typename S>
void causal_softmax_(const CausalSoftmaxArgs& a, int64_t c0, int64_t c1) {
  const int64_t n = a.seq;
  S* x_all = static_cast<S*>(a.x);
  const A scale = static_cast<A>(a.scale);
  RowBuf<A> e(n);
  RowIo<A, S> x_io(n);
  for (int64_t r = c0 * kChunkRows; r < min_(a.rows, c1 * kChunkRows); ++r) {
    const int64_t o = r * n, valid = r % n + 1;  // query t sees keys 0..t
    auto* x = x_io.load(x_all + o, valid);
    A mx = ld<A>(x, 0) * scale;
#pragma omp simd reduction(max : mx)
    for (int64_t j = 1; j < valid; ++j) {
      const A v = ld<A>(x, j) * scale;
      mx = v > mx ? v : mx;
    }
    A sum = 0;
#pragma omp simd reduction(+ : sum)
    for (int64_t j = 0; j < valid; ++j) {
      e[j] = m::exp_nonpos(ld<A>(x, j) * scale - mx);
      sum += e[j];
    }
    const A inv = A(1) / sum;
#pragma omp simd
    for (int64_t j = 0; j < valid; ++j) st(x, j, e[j] * inv);
    for (int64_t j = valid; j < n; ++j) st(x, j, A(0));
    x_io.store(x_all + o, n);
  }
}

template <typename A, typename S>
void causal_softmax_grad_(const CausalSoftmaxGradArgs& a, int64_t c0, int64_t c1) {
  const int64_t n = a.seq;
  const S* p_all = static_cast<const S*>(a.p);
  S* dp_all = static_cast<S*>(a.dp);
  const A scale = static_cast<A>(a.scale);
  RowIo<A, S> p_io(n), dp_io(n);
  for (int64_t r = c0 * kChunkRows; r < min_(a.rows, c1 * kChunkRows); ++r) {
    const int64_t o = r * n, valid = r % n + 1;
    const auto* p = p_io.load(p_all + o, valid);
    auto* dp = dp_io.load(dp_all + o, valid);
    A dot = 0;
#pragma omp simd reduction(+ : dot)
    for (int64_t j = 0; j < valid; ++j) dot += ld<A>(p, j) * ld<A>(dp, j);
#pragma omp simd
    for (int64_t j = 0; j < valid; ++j) {
      st(dp, j, scale * m::softmax_grad(ld<A>(p, j), ld<A>(dp, j), dot));
    }
    for (int64_t j = valid; j < n; ++j) st(dp, j, A(0));
    dp_io.store(dp_all + o, n);
  }
}

// ---- output head + cross-entropy ---------------------------------------------------------
template <typename A, typename S>
void head_cross_entropy_(const HeadCrossEntropyArgs& a, int64_t c0, int64_t c1) {
  const int64_t v = a.cols;
  S* z_all = static_cast<S*>(a.logits);
  const A* bias = static_cast<const A*>(a.bias);
  const A inv_rows = A(1) / static_cast<A>(a.rows);
  RowBuf<A> e(v);
  RowIo<A, S> z_io(v);
  for (int64_t chunk = c0; chunk < c1; ++chunk) {
    A loss = 0;
    for (int64_t r = chunk * kChunkRows; r < min_(a.rows, (chunk + 1) * kChunkRows); ++r) {
      const int64_t o = r * v, target = a.targets[r];
      auto* z = z_io.load(z_all + o, v);
      A mx = ld<A>(z, 0) + bias[0];
#pragma omp simd reduction(max : mx)
      for (int64_t c = 1; c < v; ++c) {
        const A zc = ld<A>(z, c) + bias[c];
        mx = zc > mx ? zc : mx;
      }
      A sum = 0;
#pragma omp simd reduction(+ : sum)
      for (int64_t c = 0; c < v; ++c) {
        e[c] = m::exp_nonpos(ld<A>(z, c) + bias[c] - mx);
        sum += e[c];
      }
      // loss = lse - z[target] = log(sum) - (z[target] - mx)
      loss += m::log_(sum) - (ld<A>(z, target) + bias[target] - mx);
      const A inv = A(1) / sum;
#pragma omp simd
      for (int64_t c = 0; c < v; ++c) {
        st(z, c, m::cross_entropy_grad(e[c] * inv, c == target, inv_rows));
      }
      z_io.store(z_all + o, v);
    }
    static_cast<A*>(a.partials)[chunk] = loss;
  }
}

// ---- column sums -----------------------------------------------------------------------------
template <typename A, typename S>
void column_sums_(const ColumnSumsArgs& a, int64_t c0, int64_t c1) {
  const int64_t w = a.cols;
  const S* x_all = static_cast<const S*>(a.x);
  RowIo<A, S> x_io(w);
  for (int64_t chunk = c0; chunk < c1; ++chunk) {
    A* pb = static_cast<A*>(a.partials) + chunk * w;
    for (int64_t c = 0; c < w; ++c) pb[c] = 0;
    for (int64_t r = chunk * kChunkRows; r < min_(a.rows, (chunk + 1) * kChunkRows); ++r) {
      const auto* x = x_io.load(x_all + r * w, w);
#pragma omp simd
      for (int64_t c = 0; c < w; ++c) pb[c] += ld<A>(x, c);
    }
  }
}

}  // namespace

void rows(const DropAddLnArgs& a, int64_t c0, int64_t c1) {
  with_types(a.acc, a.branch_type, [&](auto acc, auto branch) {
    with_storage(a.out_type, [&](auto out) {
      with_switches(a.resid != nullptr, a.gamma != nullptr, [&](auto resid, auto ln) {
        drop_add_ln_<decltype(acc), Elem<decltype(branch)>, Elem<decltype(out)>, resid(), ln()>(
            a, c0, c1);
      });
    });
  });
}
void rows(const DropAddLnGradArgs& a, int64_t c0, int64_t c1) {
  with_types(a.acc, a.branch_type, [&](auto acc, auto branch) {
    with_storage(a.out_type, [&](auto out) {
      with_switches(a.d_resid != nullptr, a.gamma != nullptr, [&](auto d_resid, auto ln) {
        drop_add_ln_grad_<decltype(acc), Elem<decltype(branch)>, Elem<decltype(out)>, d_resid(),
                          ln()>(a, c0, c1);
      });
    });
  });
}
// The other kernels have one accumulation and one storage type.
#define TB_CPU_ROWS(Args, body)                                                                   \
  void rows(const Args& a, int64_t c0, int64_t c1) {                                              \
    with_types(a.acc, a.type,                                                                     \
               [&](auto acc, auto tag) { body<decltype(acc), Elem<decltype(tag)>>(a, c0, c1); }); \
  }
TB_CPU_ROWS(BiasReluDropoutArgs, bias_relu_dropout_)
TB_CPU_ROWS(BiasReluDropoutGradArgs, bias_relu_dropout_grad_)
TB_CPU_ROWS(CausalSoftmaxArgs, causal_softmax_)
TB_CPU_ROWS(CausalSoftmaxGradArgs, causal_softmax_grad_)
TB_CPU_ROWS(HeadCrossEntropyArgs, head_cross_entropy_)
TB_CPU_ROWS(ColumnSumsArgs, column_sums_)
#undef TB_CPU_ROWS

}  // namespace trainbench::kernels::cpu::TB_ROWS_ISA
