// What the two builds of the CPU rows (rows.cpp) share around the math: row buffers, float16
// rows through a float buffer, and the rounding of float32 storage to 16-bit values. Included by
// rows.cpp only, after it has named its build (TB_ROWS_ISA): everything here lands in that build's
// unnamed namespace, so no function compiled with the rows' flags is shared with the rest of the
// program (rows.cpp says why).
#pragma once

#include <immintrin.h>  // F16C: its functions are always inlined, never a shared symbol

#include <cstdlib>
#include <type_traits>

#include "trainbench/kernels/fused_math.h"
#include "trainbench/kernels/storage.h"

namespace trainbench::kernels::cpu::TB_ROWS_ISA {
namespace {

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
inline void to_floats(const Half* s, float* d, int64_t n) {
  int64_t c = 0;
  for (; c + 8 <= n; c += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + c));
    _mm256_storeu_ps(d + c, _mm256_cvtph_ps(h));
  }
  for (; c < n; ++c) d[c] = to_float(s[c]);
}
inline void from_floats(const float* s, Half* d, int64_t n) {
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

// ---- float32 storage of 16-bit values -------------------------------------------------
namespace m = trainbench::kernels::math;

// x[0, n) (plus add[0, n) where kAdd) rounded to R and back into float, into y (may be x; R
// float: copied); float16 by F16C both ways in one pass, 8 values at a time.
template <typename R, bool kAdd = false>
void round_row_(const float* x, float* y, int64_t n, const float* add = nullptr) {
  if constexpr (std::is_same_v<R, Half>) {
    constexpr int kNearest = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    int64_t c = 0;
    for (; c + 8 <= n; c += 8) {
      __m256 v = _mm256_loadu_ps(x + c);
      if constexpr (kAdd) v = _mm256_add_ps(v, _mm256_loadu_ps(add + c));
      _mm256_storeu_ps(y + c, _mm256_cvtph_ps(_mm256_cvtps_ph(v, kNearest)));
    }
    for (; c < n; ++c) y[c] = to_float(to_half(kAdd ? x[c] + add[c] : x[c]));
  } else {
#pragma omp simd
    for (int64_t c = 0; c < n; ++c) y[c] = m::rounded_to<R>(kAdd ? x[c] + add[c] : x[c]);
  }
}

// Float32 storage of R's values (R != float; else R = S: nothing is rounded), by the rule both
// backends share (fused_math.h rounded_as): bfloat16 rounds inside a kernel's loop (integer ops
// that vectorize), float16 in F16C passes over the row (round_row_) instead.
template <typename A, typename S, typename R>
struct Rounding {
  static constexpr bool kOn = m::kRounds<S, R>;
  static constexpr bool kHalves = kOn && std::is_same_v<R, Half>;
  static A in_loop(A v) {
    if constexpr (kHalves) return v;
    return m::rounded_as<A, S, R>(v);
  }
};

}  // namespace
}  // namespace trainbench::kernels::cpu::TB_ROWS_ISA
