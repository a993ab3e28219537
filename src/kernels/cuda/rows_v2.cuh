// What the v2 CUDA kernels (--gpu_kernels v2: rows_v2.cu, rows_v2_columns.cu) share: the
// 16-byte packs they move kV2Vec columns in, a warp's sums, which row or columns a thread holds,
// and their launches' two shapes. Laid out for the memory system, as the v1 kernels of rows.cu
// with the same math (fused_math.h) and loads and stores (storage.h): each value read once into
// registers, kV2Vec consecutive columns a load (one 16-byte word of 16-bit values, two of
// float32). A chunk's rows go in order and its column sums stay in registers until written once:
// each column's is added as the CPU's (the same bits). Sums along a row are a warp's butterfly
// (every lane gets the same total). Rows wider than the registers hold, and pointers off 16
// bytes, take v1 (launch.cpp's v2_fits_). No LibTorch header.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "rows.h"
#include "rows_common.cuh"
#include "trainbench/kernels/fused_math.h"
#include "trainbench/kernels/storage.h"

namespace trainbench::kernels::cuda {
namespace {  // each .cu its own copy

namespace m = trainbench::kernels::math;
using namespace detail;  // NOLINT(google-build-using-namespace): rows_common.cuh

constexpr int kWarp = 32, kWarps = 4;  // a block: 4 warps, each its own row or chunk
constexpr int kVec = static_cast<int>(kV2Vec), kGroups = static_cast<int>(kV2Groups);
constexpr int kKeys = static_cast<int>(kV2Keys / kWarp);  // a softmax row's keys per lane
static_assert(kV2Cols == kWarp * kV2Vec, "a group: a warp's loads of kVec columns");

template <typename A>
__device__ A warp_sum(A v) {
  for (int o = kWarp / 2; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
template <typename A>
__device__ A warp_max(A v) {
  for (int o = kWarp / 2; o > 0; o >>= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// kVec consecutive elements of S as the 16-byte words they move in.
template <typename S>
union Pack {
  uint4 w[kVec * sizeof(S) / 16];
  S v[kVec];
};
// p + i on 16 bytes (v2_fits_ checks the bases; i is a multiple of kVec).
template <typename A, typename S>
__device__ void load_(const S* p, int64_t i, A (&out)[kVec]) {
  Pack<S> k;
  const uint4* src = reinterpret_cast<const uint4*>(p + i);
#pragma unroll
  for (int w = 0; w < static_cast<int>(sizeof(k.w) / 16); ++w) k.w[w] = src[w];
#pragma unroll
  for (int j = 0; j < kVec; ++j) out[j] = ld<A>(k.v, j);
}
// Stores in[] as S; *as_stored (if given): the values as stored (a column sum of them).
template <typename S, typename A>
__device__ void store_(S* p, int64_t i, const A (&in)[kVec], A (*as_stored)[kVec] = nullptr) {
  Pack<S> k;
#pragma unroll
  for (int j = 0; j < kVec; ++j) st(k.v, j, in[j]);
  uint4* dst = reinterpret_cast<uint4*>(p + i);
#pragma unroll
  for (int w = 0; w < static_cast<int>(sizeof(k.w) / 16); ++w) dst[w] = k.w[w];
  if (as_stored != nullptr) {
#pragma unroll
    for (int j = 0; j < kVec; ++j) (*as_stored)[j] = ld<A>(k.v, j);
  }
}

__device__ __forceinline__ int lane_() { return static_cast<int>(threadIdx.x) % kWarp; }
// This warp's row (or chunk): kWarps a block.
__device__ __forceinline__ int64_t warp_item_() {
  return static_cast<int64_t>(blockIdx.x) * kWarps + static_cast<int64_t>(threadIdx.x) / kWarp;
}
// The first column of group g of this lane.
__device__ __forceinline__ int64_t col_(int g) {
  return (static_cast<int64_t>(g) * kWarp + lane_()) * kVec;
}

inline unsigned warps_grid_(int64_t items) {
  return static_cast<unsigned>((items + kWarps - 1) / kWarps);
}

}  // namespace

}  // namespace trainbench::kernels::cuda
