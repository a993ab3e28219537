// CPU rows of the fused kernels (see rows.h). This file is compiled twice (CMakeLists.txt): as
// itself with AVX2, FMA and F16C enabled, into namespace cpu::avx2, and through rows_avx512.cpp
// with AVX-512 F/BW/VL/DQ and 512-bit vectors, into cpu::avx512 (TB_ROWS_ISA names the
// namespace); both with -fopenmp-simd. It includes no LibTorch or other header with
// inline functions shared with the rest of the program: every function here, and in the
// kernels' headers it includes, is its own (static or in an unnamed namespace), so none
// compiled with these flags can be picked by the linker for a baseline caller. The loops are
// plain scalar code over one row at a time (the math of fused_math.h, the loads and stores of
// storage.h; float16 rows through a float buffer, RowIo in row_io.h); `omp simd` lets the
// compiler vectorize the reductions.
#include "rows.h"

#include "trainbench/kernels/fused_math.h"
#include "trainbench/kernels/storage.h"

#ifndef TB_ROWS_ISA
#define TB_ROWS_ISA avx2
#endif

#include "row_io.h"
// After row_io.h: the causal softmax and the heads layout (attention_rows.h).
#include "attention_rows.h"

namespace trainbench::kernels::cpu::TB_ROWS_ISA {
namespace {

// ---- residual add + dropout + LayerNorm ----------------------------------------------------
// The inputs that may be null (kernel_args.h) are template flags, not pointer tests inside the
// loops: a load under a condition keeps the compiler from vectorizing. Float32 storage of 16-bit
// values (the format's values) is rounded a row at a time (round_rows_), outside the loops and
// their template parameters: a rounding type there multiplied the instantiations and made this
// file's compile 1.3x longer.
template <typename A, typename So>
void round_rows_(StorageType values, const So* x, float* y, int64_t n) {
  if constexpr (std::is_same_v<A, float> && std::is_same_v<So, float>) {
    if (values == StorageType::kBF16) round_row_<Bf16>(x, y, n);
    if (values == StorageType::kF16) round_row_<Half>(x, y, n);
  }
}
template <typename A, typename Sb, typename So, bool kResid, bool kLn>
void drop_add_ln_(const DropAddLnArgs& a, int64_t c0, int64_t c1) {
  const int64_t d = a.cols;
  const A* resid = static_cast<const A*>(a.resid);
  const Sb* branch = static_cast<const Sb*>(a.branch);
  const A* bias = static_cast<const A*>(a.bias);
  const A* gamma = static_cast<const A*>(a.gamma);
  const A* beta = static_cast<const A*>(a.beta);
  const DropoutArgs drop = m::at_step(a.drop);  // a local copy: no store may alias it
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
    if constexpr (std::is_same_v<So, float>) round_rows_<A>(a.out_format.values, y, y, d);
    y_io.store(y_row, d);
  }
}

template <typename A, typename Sb, typename So, bool kDResid, bool kLn>
void drop_add_ln_grad_(const DropAddLnGradArgs& a, int64_t c0, int64_t c1) {
  const int64_t d = a.cols;
  const bool rounds = std::is_same_v<A, float> && std::is_same_v<So, float> &&
                      a.out_format.values != StorageType::kF32;
  const So* dy_all = static_cast<const So*>(a.dy);
  const A* dro = static_cast<const A*>(a.d_resid_out);
  const A* ro = static_cast<const A*>(a.resid_out);
  const A* gamma = static_cast<const A*>(a.gamma);
  A* d_resid = static_cast<A*>(a.d_resid);
  Sb* d_branch_all = static_cast<Sb*>(a.d_branch);
  const DropoutArgs drop = m::at_step(a.drop);  // a local copy: no store may alias it
  RowIo<A, So> dy_io(d);
  RowIo<A, Sb> d_branch_io(d);
  RowBuf<float> dy_rounded(rounds ? d : 1);
  for (int64_t chunk = c0; chunk < c1; ++chunk) {
    A* pb = static_cast<A*>(a.partials) + chunk * 3 * d;  // d_bias, then d_gamma, d_beta
    A* pg = pb + d;
    A* pe = pb + 2 * d;
    for (int64_t c = 0; c < 3 * d; ++c) pb[c] = 0;
    for (int64_t r = chunk * kChunkRows; r < min_(a.rows, (chunk + 1) * kChunkRows); ++r) {
      const int64_t o = r * d;
      const auto* dy = dy_io.load(dy_all + o, d);
      if constexpr (std::is_same_v<So, float>) {
        if (rounds) {  // the GEMM's float32 product, rounded as a 16-bit gradient would be
          round_rows_<A>(a.out_format.values, dy, dy_rounded.data(), d);
          dy = dy_rounded.data();
        }
      }
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
// R: the 16-bit type float32 storage holds (the float32 route; the format's values), else R = S and
// nothing is rounded. The rounding keeps the bits of a 16-bit tensor: the GEMM's output rounded
// before the math, the result rounded as it is stored.
template <typename A, typename S, typename R>
void bias_relu_dropout_(const BiasReluDropoutArgs& a, int64_t c0, int64_t c1) {
  using Round = Rounding<A, S, R>;
  constexpr bool kHalves = Round::kHalves;
  const int64_t f = a.cols;
  S* x_all = static_cast<S*>(a.a);
  const A* bias = static_cast<const A*>(a.bias);
  const DropoutArgs drop = m::at_step(a.drop);  // a local copy: no store may alias it
  RowIo<A, S> x_io(f);
  for (int64_t r = c0 * kChunkRows; r < min_(a.rows, c1 * kChunkRows); ++r) {
    const int64_t o = r * f;
    auto* x = x_io.load(x_all + o, f);
    if constexpr (kHalves) round_row_<R>(x, x, f);  // in place: a's own row
#pragma omp simd
    for (int64_t c = 0; c < f; ++c) {
      const A fac = m::dropout_factor<A>(drop, static_cast<uint64_t>(o + c));
      st(x, c, Round::in_loop(m::bias_relu_dropout(Round::in_loop(ld<A>(x, c)), bias[c], fac)));
    }
    if constexpr (kHalves) round_row_<R>(x, x, f);
    x_io.store(x_all + o, f);
  }
}

// R as above: dout (the next GEMM's float32 output) is rounded as it is read, out holds
// rounded values already, da is rounded as it is stored; the bias sums take the unrounded
// gradient, as they do for a 16-bit da.
template <typename A, typename S, typename R>
void bias_relu_dropout_grad_(const BiasReluDropoutGradArgs& a, int64_t c0, int64_t c1) {
  using Round = Rounding<A, S, R>;
  constexpr bool kHalves = Round::kHalves;
  const int64_t f = a.cols;
  const S* dout_all = static_cast<const S*>(a.dout);
  const S* out_all = static_cast<const S*>(a.out);
  S* da_all = static_cast<S*>(a.da);
  const A scale = static_cast<A>(a.scale);
  RowIo<A, S> dout_io(f), out_io(f), da_io(f);
  RowBuf<float> dout_rounded(kHalves ? f : 1);
  for (int64_t chunk = c0; chunk < c1; ++chunk) {
    A* pb = static_cast<A*>(a.partials) + chunk * f;
    for (int64_t c = 0; c < f; ++c) pb[c] = 0;
    for (int64_t r = chunk * kChunkRows; r < min_(a.rows, (chunk + 1) * kChunkRows); ++r) {
      const int64_t o = r * f;
      const auto* dout = dout_io.load(dout_all + o, f);
      if constexpr (kHalves) {
        round_row_<R>(dout, dout_rounded.data(), f);
        dout = dout_rounded.data();
      }
      const auto* out = out_io.load(out_all + o, f);
      auto* da = da_io.row(da_all + o);
#pragma omp simd
      for (int64_t c = 0; c < f; ++c) {
        const A g = m::bias_relu_dropout_grad(Round::in_loop(ld<A>(dout, c)), ld<A>(out, c), scale);
        st(da, c, Round::in_loop(g));
        pb[c] += g;
      }
      if constexpr (kHalves) round_row_<R>(da, da, f);
      da_io.store(da_all + o, f);
    }
  }
}

// ---- output head + cross-entropy ---------------------------------------------------------
// Float32 logits of 16-bit values (the format's values) are rounded in place as a row is read, and
// its gradient as it is written (round_rows_, a row at a time); the bias partials add the gradient
// as stored (a float16 row's buffer is rounded before it is stored, exactly as the store does).
template <typename A, typename S>
void head_cross_entropy_(const HeadCrossEntropyArgs& a, int64_t c0, int64_t c1) {
  constexpr bool kRound = std::is_same_v<A, float> && std::is_same_v<S, float>;
  const int64_t v = a.cols;
  S* z_all = static_cast<S*>(a.logits);
  const A* bias = static_cast<const A*>(a.bias);
  const A inv_rows = A(1) / static_cast<A>(a.rows);
  RowBuf<A> e(v);
  RowIo<A, S> z_io(v);
  for (int64_t chunk = c0; chunk < c1; ++chunk) {
    A loss = 0;
    A* pb = a.bias_partials != nullptr ? static_cast<A*>(a.bias_partials) + chunk * v : nullptr;
    if (pb != nullptr) {
      for (int64_t c = 0; c < v; ++c) pb[c] = 0;
    }
    for (int64_t r = chunk * kChunkRows; r < min_(a.rows, (chunk + 1) * kChunkRows); ++r) {
      const int64_t o = r * v, target = a.targets[r];
      auto* z = z_io.load(z_all + o, v);
      if constexpr (kRound) round_rows_<A, S>(a.format.values, z, z, v);
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
      if constexpr (kRound) round_rows_<A, S>(a.format.values, z, z, v);
      if (pb != nullptr) {
        if constexpr (RowIo<A, S>::kBuffered) round_row_<Half>(z, z, v);
#pragma omp simd
        for (int64_t c = 0; c < v; ++c) pb[c] += ld<A>(z, c);
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

// ---- Adam -------------------------------------------------------------------------------------
// G: the gradient's storage; C, R: the weight copy's storage and values (its format's S and R).
// A float32 copy of 16-bit values (the float32 GEMM route) has a float32 gradient, read as it
// is: the float32 GEMM's own result (autograd's cast of the weight rounded it to R, and a
// float16 gradient past 65504 became inf there, a skipped step).
template <typename G, typename C, typename R>
void adam_(const AdamArgs& a, int64_t c0, int64_t c1) {
  if (a.found_inf != nullptr && *a.found_inf != 0) return;
  constexpr bool kRoute = m::kRounds<C, R>;  // the float32 route's copy
  const m::AdamCoefs k = m::adam_coefs(a, *a.step);
  const float scale = a.grad_scale != nullptr ? *a.grad_scale : 1.0f;
  const int64_t w = a.cols;
  RowIo<float, G> g_io(w);
  RowIo<float, C> c_io(w);
  for (int64_t r = c0 * kChunkRows; r < min_(a.rows, c1 * kChunkRows); ++r) {
    const int64_t o = r * w;
    float* p = static_cast<float*>(a.param) + o;
    float* mo = static_cast<float*>(a.exp_avg) + o;
    float* vo = static_cast<float*>(a.exp_avg_sq) + o;
    const auto* g = g_io.load(static_cast<const G*>(a.grad) + o, w);
#pragma omp simd
    for (int64_t c = 0; c < w; ++c) {
      p[c] = m::adam_param(p[c], ld<float>(g, c) / scale, mo[c], vo[c], k);
    }
    if (a.copy == nullptr) continue;
    C* copy = static_cast<C*>(a.copy) + o;
    if constexpr (kRoute) {
      round_row_<R>(p, copy, w);
    } else {
      auto* cp = c_io.row(copy);
#pragma omp simd
      for (int64_t c = 0; c < w; ++c) st(cp, c, p[c]);
      c_io.store(copy, w);
    }
  }
}
// A list (--adam_kernel multi): chunks c0..c1 of the items' chunks, each item's in turn.
template <typename G, typename C, typename R>
void adam_list_(const AdamListArgs& l, int64_t c0, int64_t c1) {
  int64_t first = 0;  // the list's chunk where item i starts
  for (int32_t i = 0; i < l.count && first < c1; ++i) {
    const int64_t n = num_chunks(l.items[i].rows);
    if (first + n > c0) {
      adam_<G, C, R>(l.items[i], (c0 > first ? c0 : first) - first, min_(c1, first + n) - first);
    }
    first += n;
  }
}

// ---- dispatch: each kernel's instantiation for its Args' formats ----------------------------
// This build holds the formats a run reaches, or (TB_ROWS_F64: rows_f64.cpp, the test binary's)
// the combinations with a float64 tensor: a kernel of formats F... is instantiated here when
// kHeld<F...>, and rows_for returns null for any other.
#ifdef TB_ROWS_F64
constexpr bool kF64Build = true;
#else
constexpr bool kF64Build = false;
#endif
template <typename... F>
constexpr bool kHeld = kAnyF64<F...> == kF64Build;

// The optional first input (resid, d_resid) and the LayerNorm as template flags.
template <template <typename, typename, typename, bool, bool> class Body, typename A, typename Sb,
          typename So>
auto drop_add_ln_switched_(bool first_input, bool ln) {
  if (first_input)
    return ln ? &Body<A, Sb, So, true, true>::run : &Body<A, Sb, So, true, false>::run;
  return ln ? &Body<A, Sb, So, false, true>::run : &Body<A, Sb, So, false, false>::run;
}
// DropAddLn(Grad): A and the branch's storage from its format; y in the branch's storage, in
// float32 storage (of the values the out format names, rounded a row at a time: round_rows_),
// or, from a float32 branch, in any storage.
template <typename Args, template <typename, typename, typename, bool, bool> class Body>
Rows<Args> drop_add_ln_rows_(const Args& a, bool first_input) {
  Rows<Args> fn = nullptr;
  with_format(a.branch_format, [&](auto b) {
    using B = decltype(b);
    with_format(a.out_format, [&](auto o) {
      using O = decltype(o);
      using A = typename B::A;
      constexpr bool kOut = std::is_same_v<typename O::S, typename B::S> ||
                            (std::is_same_v<A, float> && (std::is_same_v<typename O::S, float> ||
                                                          std::is_same_v<typename B::S, float>));
      if constexpr (kOut && std::is_same_v<typename O::A, A> && kHeld<B, O>) {
        fn = drop_add_ln_switched_<Body, A, typename B::S, typename O::S>(first_input,
                                                                          a.gamma != nullptr);
      }
    });
  });
  return fn;
}
template <typename A, typename Sb, typename So, bool kResid, bool kLn>
struct DropAddLnBody {
  static void run(const DropAddLnArgs& a, int64_t c0, int64_t c1) {
    drop_add_ln_<A, Sb, So, kResid, kLn>(a, c0, c1);
  }
};
template <typename A, typename Sb, typename So, bool kDResid, bool kLn>
struct DropAddLnGradBody {
  static void run(const DropAddLnGradArgs& a, int64_t c0, int64_t c1) {
    drop_add_ln_grad_<A, Sb, So, kDResid, kLn>(a, c0, c1);
  }
};

}  // namespace

Rows<DropAddLnArgs> rows_for(const DropAddLnArgs& a) {
  return drop_add_ln_rows_<DropAddLnArgs, DropAddLnBody>(a, a.resid != nullptr);
}
Rows<DropAddLnGradArgs> rows_for(const DropAddLnGradArgs& a) {
  return drop_add_ln_rows_<DropAddLnGradArgs, DropAddLnGradBody>(a, a.d_resid != nullptr);
}
// One format: bias + ReLU + dropout, the causal softmax and their gradients round to its values
// (R), the head's cross-entropy and the column sums read its storage.
#define TB_CPU_ROWS(Args, ...)                   \
  Rows<Args> rows_for(const Args& a) {           \
    Rows<Args> fn = nullptr;                     \
    with_format(a.format, [&](auto f) {          \
      using F = decltype(f);                     \
      using A = typename F::A;                   \
      using S = typename F::S;                   \
      using R = typename F::R;                   \
      (void)sizeof(R);                           \
      if constexpr (kHeld<F>) fn = &__VA_ARGS__; \
    });                                          \
    return fn;                                   \
  }
TB_CPU_ROWS(BiasReluDropoutArgs, bias_relu_dropout_<A, S, R>)
TB_CPU_ROWS(BiasReluDropoutGradArgs, bias_relu_dropout_grad_<A, S, R>)
TB_CPU_ROWS(CausalSoftmaxArgs, causal_softmax_<A, S, R>)
TB_CPU_ROWS(CausalSoftmaxGradArgs, causal_softmax_grad_<A, S, R>)
TB_CPU_ROWS(HeadCrossEntropyArgs, head_cross_entropy_<A, S>)
TB_CPU_ROWS(ColumnSumsArgs, column_sums_<A, S>)
#undef TB_CPU_ROWS
// Heads: the source's storage to the destination's, rounded as HeadsRound says; a bias is added
// to float32 or float64 rows only (fused_ops.h causal_attention).
Rows<HeadsArgs> rows_for(const HeadsArgs& a) {
  Rows<HeadsArgs> fn = nullptr;
  with_format(a.to_heads ? a.rows_format : a.heads_format, [&](auto src) {
    using F = decltype(src);
    with_format(a.to_heads ? a.heads_format : a.rows_format, [&](auto dst) {
      using G = decltype(dst);
      using Src = typename F::S;
      if constexpr (kHeld<F, G>) {
        using Dst = typename G::S;
        using R = HeadsRound<F, G>;
        fn = &heads_<Src, Dst, R, false>;
        if constexpr (std::is_same_v<Src, float> || std::is_same_v<Src, double>) {
          if (a.to_heads && a.bias != nullptr) fn = &heads_<Src, Dst, R, true>;
        }
      }
    });
  });
  return fn;
}
// Adam: the gradient's storage; the weight copy's storage and values (no copy: float32's).
// Never float64 (a float32 parameter's gradient and copy): none in the float64 build.
// pick: the row function of (G, C, R), the formats' types (a template lambda).
template <typename Args, typename Pick>
Rows<Args> adam_rows_(const Args& a, Pick pick) {
  Rows<Args> fn = nullptr;
  const auto f = a.formats();
  with_format(f[0], [&](auto g) {
    using G = decltype(g);
    with_format(f[1], [&](auto c) {
      using C = decltype(c);
      if constexpr (!kF64Build && kHeld<G, C>)
        fn = pick.template operator()<typename G::S, typename C::S, typename C::R>();
    });
  });
  return fn;
}
Rows<AdamArgs> rows_for(const AdamArgs& a) {
  return adam_rows_(a, []<typename G, typename C, typename R>() { return &adam_<G, C, R>; });
}
Rows<AdamListArgs> rows_for(const AdamListArgs& a) {
  return adam_rows_(a, []<typename G, typename C, typename R>() { return &adam_list_<G, C, R>; });
}

}  // namespace trainbench::kernels::cpu::TB_ROWS_ISA
