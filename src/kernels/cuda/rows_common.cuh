// What the two CUDA kernel files share (rows.cu: v1, rows_v2.cu: v2): the launch helpers and
// the rule of which formats each kernel holds. No LibTorch header.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "trainbench/kernels/fused_math.h"
#include "trainbench/kernels/storage.h"

namespace trainbench::kernels::cuda::detail {

constexpr int kThreads = 256;  // a v1 block; v2's grid-stride kernels too

// Float64 (the CPU tests' reference) has no CUDA code: cudaErrorNotSupported, which launch.cpp
// refuses in one line, as for any format no kernel holds.
template <typename... F>
constexpr bool kHeld = !kAnyF64<F...>;

// DropAddLn(Grad): y in the branch's storage, in float32 storage (of the out format's values),
// or, from a float32 branch, in any storage.
template <typename B, typename O>
constexpr bool kDropAddLnHeld = kHeld<B, O> && (std::is_same_v<typename O::S, typename B::S> ||
                                                (std::is_same_v<typename B::A, float> &&
                                                 (std::is_same_v<typename O::S, float> ||
                                                  std::is_same_v<typename B::S, float>)));

inline unsigned grid_(int64_t blocks) {
  return static_cast<unsigned>(blocks < 65535 ? blocks : 65535);
}
inline cudaError_t launched_(bool held) {
  return held ? cudaGetLastError() : cudaErrorNotSupported;
}

// Where element i of the rows layout [N, P*H*hd] (HeadsArgs) stands in the heads layout: its
// column, its part's tensor (picked by value: a runtime index into the arguments' array would
// copy them to local memory) and its offset there.
struct HeadsPlace {
  int64_t col;
  void* part;
  int64_t offset;
};
__device__ __forceinline__ HeadsPlace heads_place(const HeadsArgs& a, int64_t i) {
  const int64_t hd = a.hd, heads = a.heads, seq = a.seq, width = a.parts * heads * hd;
  const int64_t r = i / width, col = i % width, p = col / (heads * hd), h = (col / hd) % heads;
  const int64_t row =
      math::head_block_row((r / seq) * heads + h, r % seq, a.rows / seq * heads, seq, a.block).row;
  return {col,
          p == 0   ? a.head_data[0]
          : p == 1 ? a.head_data[1]
                   : a.head_data[2],
          row * hd + col % hd};
}

// Heads: fn(F, G) with the source's and the destination's FormatTypes where a kernel holds
// them; false where it does not.
template <typename Fn>
bool with_heads_formats(const HeadsArgs& a, Fn&& fn) {
  bool held = false;
  with_format(a.to_heads ? a.rows_format : a.heads_format, [&](auto src) {
    using F = decltype(src);
    with_format(a.to_heads ? a.heads_format : a.rows_format, [&](auto dst) {
      using G = decltype(dst);
      if constexpr (kHeld<F, G>) {
        fn(F{}, G{});
        held = true;
      }
    });
  });
  return held;
}

}  // namespace trainbench::kernels::cuda::detail

// The launch function `name` of Args: kernel's instantiation for the Args' formats on `grid`
// blocks of `threads`. DropAddLn(Grad): kernel<A, the branch's S, the output's S and R> where
// kDropAddLnHeld; one format: kernel<A, S, R> (R the 16-bit type float32 storage holds, else S).
#define TB_CUDA_DROP_ADD_LN_LAUNCH(name, Args, kernel, grid, threads)        \
  cudaError_t name(const Args& a, cudaStream_t stream) {                     \
    bool held = false;                                                       \
    with_format(a.branch_format, [&](auto b) {                               \
      using B = decltype(b);                                                 \
      with_format(a.out_format, [&](auto o) {                                \
        using O = decltype(o);                                               \
        if constexpr (kDropAddLnHeld<B, O>) {                                \
          kernel<typename B::A, typename B::S, typename O::S, typename O::R> \
              <<<(grid), (threads), 0, stream>>>(a);                         \
          held = true;                                                       \
        }                                                                    \
      });                                                                    \
    });                                                                      \
    return launched_(held);                                                  \
  }
#define TB_CUDA_ONE_FORMAT_LAUNCH(name, Args, kernel, grid, threads)                              \
  cudaError_t name(const Args& a, cudaStream_t stream) {                                          \
    bool held = false;                                                                            \
    with_format(a.format, [&](auto f) {                                                           \
      using F = decltype(f);                                                                      \
      if constexpr (kHeld<F>) {                                                                   \
        kernel<typename F::A, typename F::S, typename F::R><<<(grid), (threads), 0, stream>>>(a); \
        held = true;                                                                              \
      }                                                                                           \
    });                                                                                           \
    return launched_(held);                                                                       \
  }
