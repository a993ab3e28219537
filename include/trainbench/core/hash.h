// splitmix64 (Steele, Lea and Flood 2014), the one 64-bit mixer of the project: the parallel
// dropout masks hash (key + index * golden gamma) with it, and the ranks of a multi-process run
// derive their per-step dropout seeds with it.
#pragma once

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

}  // namespace trainbench
