// What the two CUDA kernel files share (rows.cu: v1, rows_v2.cu: v2): the launch helpers and
// the rule of which formats each kernel holds. No LibTorch header.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

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

}  // namespace trainbench::kernels::cuda::detail
