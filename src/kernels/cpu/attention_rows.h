// The attention's CPU rows (see rows.cpp, which includes this after row_io.h, once per build):
// the causal softmax and its gradient over the [B*H*S, S] scores, and the heads layout between a
// linear's rows and the attention GEMMs' [B*H, S, hd] tensors.
#pragma once

#include "row_io.h"

namespace trainbench::kernels::cpu::TB_ROWS_ISA {
namespace {

// ---- causal softmax ------------------------------------------------------------------------
// The sum of x[0, n) in the one order this function's loop adds it, whatever the storage type
// of the row the terms came from: a reduction inside each kernel's own loop is vectorized per
// instantiation (bfloat16 rows, float32 storage rounded to bfloat16), and its order, so the
// probabilities' last bit, could differ between them (measured: a few elements per 10^5).
template <typename A>
__attribute__((noinline)) A row_sum_(const A* x, int64_t n) {
  A sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t j = 0; j < n; ++j) sum += x[j];
  return sum;
}

// Where row r lies (score_row), out of line: a helper inlined into the float32 softmax row made
// GCC 12 compile that row 2.8x slower (kernel_bench BM_KernelCausalSoftmax 1.6 -> 4.5 ms).
__attribute__((noinline)) m::ScoreRow score_row_(int64_t r, int64_t seq, int64_t rows,
                                                 int64_t block) {
  return m::score_row(r, seq, rows, block);
}

// R as for bias + ReLU + dropout: the scores (the GEMM's float32 output) rounded as they are
// read, the probabilities as they are stored.
template <typename A, typename S, typename R>
void causal_softmax_(const CausalSoftmaxArgs& a, int64_t c0, int64_t c1) {
  using Round = Rounding<A, S, R>;
  constexpr bool kHalves = Round::kHalves;
  const int64_t n = a.seq;
  S* x_all = static_cast<S*>(a.x);
  const A scale = static_cast<A>(a.scale);
  RowBuf<A> e(n);
  RowIo<A, S> x_io(n);
  for (int64_t r = c0 * kChunkRows; r < min_(a.rows, c1 * kChunkRows); ++r) {
    const auto [o, len] = score_row_(r, n, a.rows, a.block);
    const int64_t valid = r % n + 1;  // query t sees keys 0..t
    auto* x = x_io.load(x_all + o, valid);
    if constexpr (kHalves) round_row_<R>(x, x, valid);
    A mx = Round::in_loop(ld<A>(x, 0)) * scale;
#pragma omp simd reduction(max : mx)
    for (int64_t j = 1; j < valid; ++j) {
      const A v = Round::in_loop(ld<A>(x, j)) * scale;
      mx = v > mx ? v : mx;
    }
#pragma omp simd
    for (int64_t j = 0; j < valid; ++j) {
      e[j] = m::exp_nonpos(Round::in_loop(ld<A>(x, j)) * scale - mx);
    }
    const A inv = A(1) / row_sum_(e.data(), valid);
#pragma omp simd
    for (int64_t j = 0; j < valid; ++j) st(x, j, Round::in_loop(e[j] * inv));
    if constexpr (kHalves) round_row_<R>(x, x, valid);
    for (int64_t j = valid; j < len; ++j) st(x, j, A(0));
    x_io.store(x_all + o, len);
  }
}

// R as above: p holds rounded values already, dp (a GEMM's float32 output) is rounded as it
// is read, the score gradient as it is stored.
template <typename A, typename S, typename R>
void causal_softmax_grad_(const CausalSoftmaxGradArgs& a, int64_t c0, int64_t c1) {
  using Round = Rounding<A, S, R>;
  constexpr bool kHalves = Round::kHalves;
  const int64_t n = a.seq;
  const S* p_all = static_cast<const S*>(a.p);
  S* dp_all = static_cast<S*>(a.dp);
  const A scale = static_cast<A>(a.scale);
  RowIo<A, S> p_io(n), dp_io(n);
  RowBuf<A> terms(n);
  for (int64_t r = c0 * kChunkRows; r < min_(a.rows, c1 * kChunkRows); ++r) {
    const auto [o, len] = score_row_(r, n, a.rows, a.block);
    const int64_t valid = r % n + 1;
    const auto* p = p_io.load(p_all + o, valid);
    auto* dp = dp_io.load(dp_all + o, valid);
    if constexpr (kHalves) round_row_<R>(dp, dp, valid);
#pragma omp simd
    for (int64_t j = 0; j < valid; ++j) terms[j] = ld<A>(p, j) * Round::in_loop(ld<A>(dp, j));
    const A dot = row_sum_(terms.data(), valid);
#pragma omp simd
    for (int64_t j = 0; j < valid; ++j) {
      const A g = m::softmax_grad(ld<A>(p, j), Round::in_loop(ld<A>(dp, j)), dot);
      st(dp, j, Round::in_loop(scale * g));
    }
    if constexpr (kHalves) round_row_<R>(dp, dp, valid);
    for (int64_t j = valid; j < len; ++j) st(dp, j, A(0));
    dp_io.store(dp_all + o, len);
  }
}

// ---- heads layout ------------------------------------------------------------------------------
// Src, Dst: the storages read and written; R: the 16-bit type a float32 destination holds (else
// R = Dst), as HeadsRound (storage.h) gives them; kBias: a.bias given (to_heads). A chunk is
// kChunkRows rows of the rows layout; each row moves P*H segments of hd contiguous elements to or
// from their [B*H, S, hd] places. a.partials (to rows): each written row, read back while it is
// in cache, added into its chunk's column sums.
template <typename Src, typename Dst, typename R, bool kBias>
void heads_(const HeadsArgs& a, int64_t c0, int64_t c1) {
  using A = HeadsAcc<Src, Dst>;
  using Round = Rounding<A, Dst, R>;
  // The same bits, moved.
  constexpr bool kCopy = std::is_same_v<Src, Dst> && !Round::kOn && !kBias;
  const int64_t hd = a.hd, heads = a.heads, seq = a.seq, width = a.parts * heads * hd;
  RowIo<A, Src> in(kCopy || Round::kHalves ? 1 : hd);
  RowIo<A, Dst> out(kCopy || Round::kHalves ? 1 : hd);
  const A* bias_all = static_cast<const A*>(a.bias);
  RowIo<A, Dst> written(a.partials != nullptr ? width : 1);  // float16 rows read back as floats
  const int64_t bh = a.rows / seq * heads;
  for (int64_t r = c0 * kChunkRows; r < min_(a.rows, c1 * kChunkRows); ++r) {
    const int64_t b = r / seq, s = r % seq;
    const m::HeadRow first = m::head_block_row(b * heads, s, bh, seq, a.block);
    for (int64_t p = 0; p < a.parts; ++p) {
      for (int64_t h = 0; h < heads; ++h) {
        const int64_t ro = r * width + (p * heads + h) * hd, ho = (first.row + h * first.step) * hd;
        const Src* src = a.to_heads ? static_cast<const Src*>(a.row_data) + ro
                                    : static_cast<const Src*>(a.head_data[p]) + ho;
        Dst* dst = a.to_heads ? static_cast<Dst*>(a.head_data[p]) + ho
                              : static_cast<Dst*>(a.row_data) + ro;
        if constexpr (kCopy) {
          // The bits as they are; 16-bit elements as integers (a loop over the storage structs
          // stayed scalar: 3.8x slower).
          using Bits = std::conditional_t<sizeof(Src) == 2, uint16_t, Src>;
          const Bits* from = reinterpret_cast<const Bits*>(src);
          Bits* to = reinterpret_cast<Bits*>(dst);
#pragma omp simd
          for (int64_t c = 0; c < hd; ++c) to[c] = from[c];
        } else if constexpr (Round::kHalves) {
          // float32 into float32 storage of float16 values
          round_row_<R, kBias>(src, dst, hd, kBias ? bias_all + (p * heads + h) * hd : nullptr);
        } else {
          const auto* x = in.load(src, hd);
          auto* y = out.row(dst);
          if constexpr (kBias) {
            const A* bias = bias_all + (p * heads + h) * hd;
#pragma omp simd
            for (int64_t c = 0; c < hd; ++c) st(y, c, Round::in_loop(ld<A>(x, c) + bias[c]));
          } else {
#pragma omp simd
            for (int64_t c = 0; c < hd; ++c) st(y, c, Round::in_loop(ld<A>(x, c)));
          }
          out.store(dst, hd);
        }
      }
    }
    if (a.partials != nullptr && !a.to_heads) {
      A* pb = static_cast<A*>(a.partials) + (r / kChunkRows) * width;
      const auto* row = written.load(static_cast<const Dst*>(a.row_data) + r * width, width);
      if (r % kChunkRows == 0) {
        for (int64_t c = 0; c < width; ++c) pb[c] = 0;
      }
#pragma omp simd
      for (int64_t c = 0; c < width; ++c) pb[c] += ld<A>(row, c);
    }
  }
}

}  // namespace
}  // namespace trainbench::kernels::cpu::TB_ROWS_ISA
