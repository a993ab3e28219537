// What both launchers of the fused kernels share below the math (kernels/cpu/rows.cpp for the
// CPU, kernels/cuda/rows.cu for CUDA; cf. ggml-common.h): the storage types of the tensors'
// elements, their loads and stores in the accumulation type, and the host-side dispatch from a
// Format to its C++ types (with_format, the one dispatch of every kernel). bfloat16 is rounded by
// the same integer arithmetic on both devices (round to nearest even, NaN kept quiet: LibTorch's
// rule), so a value stored on the GPU has the CPU's bits.
//
// Every function is `static` (inline): each translation unit, whatever its instruction-set
// flags (the CPU rows are compiled for AVX2), keeps its own copy, and the linker never picks
// an AVX2 copy for a baseline caller.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

#include "trainbench/kernels/kernel_args.h"

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#define TB_HOST_DEVICE __host__ __device__ static __forceinline__
#else
#define TB_HOST_DEVICE static inline
#endif
#define TB_HOST static inline

namespace trainbench::kernels {

// ---- bit casts (the vectorizer sees through them; a memcpy kept the CPU loops scalar) ------
#if defined(__CUDA_ARCH__)
TB_HOST_DEVICE float bits_to_float(int32_t bits) { return __int_as_float(bits); }
TB_HOST_DEVICE int32_t float_bits(float x) { return __float_as_int(x); }
#else
TB_HOST_DEVICE float bits_to_float(int32_t bits) { return __builtin_bit_cast(float, bits); }
TB_HOST_DEVICE int32_t float_bits(float x) { return __builtin_bit_cast(int32_t, x); }
#endif

// ---- 16-bit storage types: the bits alone, converted through float -------------------------
struct Bf16 {
  uint16_t bits;
};
struct Half {
  uint16_t bits;
};

TB_HOST_DEVICE float to_float(Bf16 v) { return bits_to_float(static_cast<int32_t>(v.bits) << 16); }
TB_HOST_DEVICE Bf16 to_bf16(float f) {
  const uint32_t u = static_cast<uint32_t>(float_bits(f));
  const uint32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  return Bf16{static_cast<uint16_t>(f != f ? 0x7FC0u : rounded)};
}
#if defined(__CUDACC__)
TB_HOST_DEVICE float to_float(Half v) { return __half2float(__ushort_as_half(v.bits)); }
TB_HOST_DEVICE Half to_half(float f) { return Half{__half_as_ushort(__float2half(f))}; }
#else
// _Float16 conversions: one F16C instruction per vector with -mf16c.
TB_HOST_DEVICE float to_float(Half v) {
  return static_cast<float>(__builtin_bit_cast(_Float16, v.bits));
}
TB_HOST_DEVICE Half to_half(float f) {
  return Half{__builtin_bit_cast(uint16_t, static_cast<_Float16>(f))};
}
#endif

// ---- loads and stores in the accumulation type A -------------------------------------------
template <typename A>
TB_HOST_DEVICE A ld(const float* p, int64_t i) {
  return static_cast<A>(p[i]);
}
template <typename A>
TB_HOST_DEVICE A ld(const double* p, int64_t i) {
  return static_cast<A>(p[i]);
}
template <typename A>
TB_HOST_DEVICE A ld(const Bf16* p, int64_t i) {
  return static_cast<A>(to_float(p[i]));
}
template <typename A>
TB_HOST_DEVICE A ld(const Half* p, int64_t i) {
  return static_cast<A>(to_float(p[i]));
}
template <typename A>
TB_HOST_DEVICE void st(float* p, int64_t i, A v) {
  p[i] = static_cast<float>(v);
}
template <typename A>
TB_HOST_DEVICE void st(double* p, int64_t i, A v) {
  p[i] = static_cast<double>(v);
}
template <typename A>
TB_HOST_DEVICE void st(Bf16* p, int64_t i, A v) {
  p[i] = to_bf16(static_cast<float>(v));
}
template <typename A>
TB_HOST_DEVICE void st(Half* p, int64_t i, A v) {
  p[i] = to_half(static_cast<float>(v));
}

// ---- host dispatch: a Format -> its C++ types ----------------------------------------------
// The element type stored as T.
template <StorageType T>
using CType =
    std::conditional_t<T == StorageType::kF64, double,
                       std::conditional_t<T == StorageType::kBF16, Bf16,
                                          std::conditional_t<T == StorageType::kF16, Half, float>>>;

// kFormats[I] (kernel_args.h) as types: S its elements', R its values' (S itself, or the 16-bit
// type float32 storage holds, which a kernel rounds to as it reads and writes), A the one its
// math accumulates in (float, or double for float64).
template <int I>
struct FormatTypes {
  static constexpr Format kFormat = kFormats[I];
  using S = CType<kFormat.storage>;
  using R = CType<kFormat.values>;
  using A = CType<kFormat.acc>;
};
// Whether a kernel of these formats has a float64 tensor: instantiated in the tests' float64
// build of the rows alone (cpu/rows.cpp kHeld; never on CUDA).
template <typename... F>
inline constexpr bool kAnyF64 = (std::is_same_v<typename F::A, double> || ...);

// The one dispatch of every kernel on both backends: fn(FormatTypes<I>{}) for the entry of
// kFormats that f is; false where f is none (format_of builds no other). A kernel of two formats
// nests two calls; each backend instantiates only the combinations its kernels hold (if
// constexpr in fn), so its binary has no code for formats a run cannot reach.
template <typename Fn, int... I>
TB_HOST bool with_format_(const Format& f, Fn& fn, std::integer_sequence<int, I...>) {
  return ((f == kFormats[I] && (fn(FormatTypes<I>{}), true)) || ...);
}
template <typename Fn>
TB_HOST bool with_format(const Format& f, Fn&& fn) {
  return with_format_(f, fn, std::make_integer_sequence<int, kNumFormats>{});
}

// The type a HeadsArgs element passes through between storages Src and Dst: double where either
// is, else float (both backends).
template <typename Src, typename Dst>
using HeadsAcc =
    std::conditional_t<std::is_same_v<Src, double> || std::is_same_v<Dst, double>, double, float>;
// The type HeadsArgs rounds to, from source format F to destination format G: G's values where
// the source is float32 (a GEMM's product, rounded as it moves), else G's storage (a 16-bit
// destination rounds as it stores).
template <typename F, typename G>
using HeadsRound =
    std::conditional_t<std::is_same_v<typename F::S, float>, typename G::R, typename G::S>;

}  // namespace trainbench::kernels
