// What both launchers of the fused kernels share below the math (kernels/cpu/rows.cpp for the
// CPU, kernels/cuda/rows.cu for CUDA; cf. ggml-common.h): the storage types of the tensors'
// elements, their loads and stores in the accumulation type, and the host-side dispatch from a
// StorageType to a C++ type. bfloat16 is rounded by the same integer arithmetic on both
// devices (round to nearest even, NaN kept quiet: LibTorch's rule), so a value stored on the
// GPU has the CPU's bits.
//
// Every function is `static` (inline): each translation unit, whatever its instruction-set
// flags (the CPU rows are compiled for AVX2), keeps its own copy, and the linker never picks
// an AVX2 copy for a baseline caller.
#pragma once

#include <cstdint>
#include <type_traits>

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

// ---- host dispatch: StorageType -> C++ type ------------------------------------------------
// The element type behind a tag pointer: Elem<decltype(tag)>.
template <typename T>
using Elem = std::remove_pointer_t<T>;

// fn(tag): tag is a null pointer of the element type stored as `type`.
template <typename Fn>
TB_HOST void with_storage(StorageType type, Fn&& fn) {
  switch (type) {
    case StorageType::kF32:
      return fn(static_cast<float*>(nullptr));
    case StorageType::kF64:
      return fn(static_cast<double*>(nullptr));
    case StorageType::kBF16:
      return fn(static_cast<Bf16*>(nullptr));
    case StorageType::kF16:
      return fn(static_cast<Half*>(nullptr));
  }
}

// fn(acc, tag): acc is a float (or, for kF64, a double) value of f's accumulation type; tag
// as with_storage's for f's storage.
template <typename Fn>
TB_HOST void with_types(const Format& f, Fn&& fn) {
  with_storage(f.storage, [&](auto tag) {
    if (f.acc == StorageType::kF64) {
      fn(double{}, tag);
    } else {
      fn(float{}, tag);
    }
  });
}

// fn(tag, values_tag) for format f in a kernel accumulating in A: the storage's tag and, for
// float32 storage of 16-bit values with a float accumulation, theirs (Bf16, Half); any other
// storage is its own values_tag.
template <typename A, typename Fn>
TB_HOST void with_rounded_storage(const Format& f, Fn&& fn) {
  with_storage(f.storage, [&](auto tag) {
    if constexpr (std::is_same_v<A, float> && std::is_same_v<Elem<decltype(tag)>, float>) {
      if (f.values == StorageType::kBF16) return fn(tag, static_cast<Bf16*>(nullptr));
      if (f.values == StorageType::kF16) return fn(tag, static_cast<Half*>(nullptr));
    }
    fn(tag, tag);
  });
}

// fn(copy_tag, values_tag) for AdamArgs' weight copy: bf16/bf16, f16/f16, float/bf16,
// float/f16, else float/float (float32, or no copy).
template <typename Fn>
TB_HOST void with_copy_types(const Format& copy, Fn&& fn) {
  if (copy.storage == StorageType::kBF16)
    return fn(static_cast<Bf16*>(nullptr), static_cast<Bf16*>(nullptr));
  if (copy.storage == StorageType::kF16)
    return fn(static_cast<Half*>(nullptr), static_cast<Half*>(nullptr));
  if (copy.values == StorageType::kBF16)
    return fn(static_cast<float*>(nullptr), static_cast<Bf16*>(nullptr));
  if (copy.values == StorageType::kF16)
    return fn(static_cast<float*>(nullptr), static_cast<Half*>(nullptr));
  return fn(static_cast<float*>(nullptr), static_cast<float*>(nullptr));
}

// fn(acc, tag, values_tag) for args with one format (the bias-ReLU-dropout, causal softmax and
// head cross-entropy args): acc as with_types', tag and values_tag as with_rounded_storage's.
template <typename Args, typename Fn>
TB_HOST void with_rounded_types(const Args& a, Fn&& fn) {
  auto in = [&](auto acc) {
    with_rounded_storage<decltype(acc)>(a.format, [&](auto tag, auto r) { fn(acc, tag, r); });
  };
  if (a.format.acc == StorageType::kF64) return in(double{});
  in(float{});
}

// The type a HeadsArgs element passes through between storages Src and Dst: double where either
// is, else float (both backends).
template <typename Src, typename Dst>
using HeadsAcc =
    std::conditional_t<std::is_same_v<Src, double> || std::is_same_v<Dst, double>, double, float>;

// fn(src_tag, dst_tag, round_tag) for HeadsArgs: the storages read and written, and for a
// float32 copy into float32 storage of 16-bit values the type they are rounded to (bf16, f16);
// any other pair is its own round_tag (dst's: a 16-bit destination rounds as it stores).
template <typename Fn>
TB_HOST void with_heads_types(const HeadsArgs& a, Fn&& fn) {
  const Format& src_format = a.to_heads ? a.rows_format : a.heads_format;
  const Format& dst_format = a.to_heads ? a.heads_format : a.rows_format;
  with_storage(src_format.storage, [&](auto src) {
    // Named here: GCC 12 took decltype(src) in the inner lambda's `if constexpr` as false.
    constexpr bool kFloatSrc = std::is_same_v<Elem<decltype(src)>, float>;
    with_storage(dst_format.storage, [&](auto dst) {
      if constexpr (kFloatSrc && std::is_same_v<Elem<decltype(dst)>, float>) {
        if (dst_format.values == StorageType::kBF16) {
          return fn(src, dst, static_cast<Bf16*>(nullptr));
        }
        if (dst_format.values == StorageType::kF16) {
          return fn(src, dst, static_cast<Half*>(nullptr));
        }
      }
      fn(src, dst, dst);
    });
  });
}

// fn(std::bool_constant<a>, std::bool_constant<b>): two run-time switches as compile-time
// constants, so that a loop's optional input is a template flag, not a test inside the loop.
template <typename Fn>
TB_HOST void with_switches(bool a, bool b, Fn&& fn) {
  using T = std::true_type;
  using F = std::false_type;
  if (a) {
    b ? fn(T{}, T{}) : fn(T{}, F{});
  } else {
    b ? fn(F{}, T{}) : fn(F{}, F{});
  }
}

}  // namespace trainbench::kernels
