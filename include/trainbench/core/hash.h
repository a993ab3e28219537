// The project's hashes, one each: splitmix64 (Steele, Lea and Flood 2014), the 64-bit mixer the
// parallel dropout masks (key + index * golden gamma) and the ranks' per-step dropout seeds
// use, and FNV-1a over bytes, the replicas' parameter fingerprint. (The fused kernels' masks
// have their own 32-bit hash, kernels/fused_math.h, which vectorizes and runs on the GPU.)
#pragma once

#include <cstddef>
#include <cstdint>

namespace trainbench {

// The golden-ratio increment splitmix64 steps its state by.
inline constexpr uint64_t kGoldenGamma = 0x9e3779b97f4a7c15ULL;

// splitmix64's finalizer: a bijection of 64-bit words whose every output bit depends on every
// input bit.
inline constexpr uint64_t splitmix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// FNV-1a, 64 bits, over n bytes, continuing from h (kFnv1aBasis to start).
inline constexpr uint64_t kFnv1aBasis = 14695981039346656037ULL;  // 0xcbf29ce484222325
inline uint64_t fnv1a64(const void* data, size_t n, uint64_t h = kFnv1aBasis) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ULL;
  return h;
}

}  // namespace trainbench
