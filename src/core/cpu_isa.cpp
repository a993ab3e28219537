// CPUID/XGETBV reading and the GEMM path rules of cpu_isa.h.
#include "trainbench/core/cpu_isa.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace trainbench {
namespace {

#if defined(__x86_64__) || defined(__i386__)
struct Regs {
  uint32_t a = 0, b = 0, c = 0, d = 0;
};
Regs cpuid_(uint32_t leaf, uint32_t sub) {
  Regs r;
  if (__get_cpuid_max(0, nullptr) < leaf) return r;
  __cpuid_count(leaf, sub, r.a, r.b, r.c, r.d);
  return r;
}
bool bit_(uint32_t reg, int i) { return (reg >> i) & 1u; }
// XCR0: which register states the operating system saves (0 without OSXSAVE).
uint64_t xcr0_(bool osxsave) {
  if (!osxsave) return 0;
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}
#endif

// oneDNN's ISA levels, lowest first; each name maps to its place in this order.
int isa_level_(std::string cap) {
  std::transform(cap.begin(), cap.end(), cap.begin(),
                 [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
  static const std::pair<const char*, int> kLevels[] = {
      {"sse41", 0},
      {"avx", 1},
      {"avx2", 2},
      {"avx2_vnni", 3},
      {"avx2_vnni_2", 4},
      {"avx512_core", 5},
      {"avx512_core_vnni", 6},
      {"avx512_core_bf16", 7},
      {"avx512_core_fp16", 8},
      {"avx10_1_512", 8},
      {"avx512_core_amx", 9},
      {"avx10_1_512_amx", 9},
      {"avx512_core_amx_fp16", 10},
      {"avx10_1_512_amx_fp16", 10},
  };
  for (const auto& [name, level] : kLevels) {
    if (cap == name) return level;
  }
  return 99;  // "all", "default", empty or unknown: no cap
}

}  // namespace

CpuIsa hardware_isa() {
  CpuIsa isa;
#if defined(__x86_64__) || defined(__i386__)
  const Regs l1 = cpuid_(1, 0), l7 = cpuid_(7, 0), l71 = cpuid_(7, 1);
  const uint64_t xcr0 = xcr0_(bit_(l1.c, 27));
  const bool ymm = (xcr0 & 0x6) == 0x6;            // SSE + AVX state
  const bool zmm = ymm && (xcr0 & 0xe0) == 0xe0;   // opmask + ZMM state
  const bool tiles = (xcr0 & 0x60000) == 0x60000;  // AMX tile config + data
  isa.sse4_2 = bit_(l1.c, 20);
  isa.avx2 = ymm && bit_(l7.b, 5);
  isa.fma = ymm && bit_(l1.c, 12);
  isa.f16c = ymm && bit_(l1.c, 29);
  isa.avx512f = zmm && bit_(l7.b, 16);
  isa.avx512dq = zmm && bit_(l7.b, 17);
  isa.avx512bw = zmm && bit_(l7.b, 30);
  isa.avx512vl = zmm && bit_(l7.b, 31);
  isa.avx512_bf16 = zmm && bit_(l71.a, 5);
  isa.avx512_fp16 = zmm && bit_(l7.d, 23);
  isa.amx_bf16 = tiles && bit_(l7.d, 24) && bit_(l7.d, 22);
  isa.amx_fp16 = tiles && bit_(l7.d, 24) && bit_(l71.a, 21);
  isa.avx_ne_convert = ymm && bit_(l71.d, 5);
#endif
  return isa;
}

CpuIsa capped_isa(CpuIsa isa, const std::string& cap) {
  const int level = isa_level_(cap);
  if (level < 2) isa.avx2 = isa.fma = false;
  if (level < 4) isa.avx_ne_convert = false;
  if (level < 5) isa.avx512f = isa.avx512bw = isa.avx512vl = isa.avx512dq = false;
  if (level < 7) isa.avx512_bf16 = false;
  if (level < 8) isa.avx512_fp16 = false;
  if (level < 9) isa.amx_bf16 = false;
  if (level < 10) isa.amx_fp16 = false;
  return isa;
}

CpuIsa effective_isa(std::string* cap) {
  const char* env = std::getenv("ONEDNN_MAX_CPU_ISA");
  const std::string value = env ? env : "";
  if (cap) *cap = value;
  return capped_isa(hardware_isa(), value);
}

std::vector<std::string> isa_names(const CpuIsa& isa) {
  const std::pair<const char*, bool> sets[] = {
      {"avx2", isa.avx2},
      {"fma", isa.fma},
      {"f16c", isa.f16c},
      {"avx512f", isa.avx512f},
      {"avx512bw", isa.avx512bw},
      {"avx512vl", isa.avx512vl},
      {"avx512dq", isa.avx512dq},
      {"avx512_bf16", isa.avx512_bf16},
      {"avx512_fp16", isa.avx512_fp16},
      {"amx_bf16", isa.amx_bf16},
      {"amx_fp16", isa.amx_fp16},
      {"avx_ne_convert", isa.avx_ne_convert},
  };
  std::vector<std::string> out;
  for (const auto& [name, on] : sets) {
    if (on) out.emplace_back(name);
  }
  return out;
}

GemmPath gemm_path_of(GemmRoute route, Precision dtype, const CpuIsa& isa, bool cuda) {
  if (route == GemmRoute::kFloat32 && dtype != Precision::kFloat32)
    return GemmPath::kFloat32Rounded;
  return cuda ? GemmPath::kCuda : libtorch_gemm_path(isa, dtype);
}

bool has_native_gemm(const CpuIsa& isa, Precision dtype) {
  if (dtype == Precision::kBFloat16) return isa.avx512_bf16 || isa.amx_bf16;
  if (dtype == Precision::kFloat16) return isa.avx512_fp16 || isa.amx_fp16;
  return true;
}

GemmPath libtorch_gemm_path(const CpuIsa& isa, Precision dtype) {
  if (dtype == Precision::kFloat32) return GemmPath::kMklFloat32;
  // LibTorch's mkldnn_bf16_device_check / mkldnn_fp16_device_check (ideep's type support).
  const bool onednn = dtype == Precision::kBFloat16
                          ? (isa.avx512bw && isa.avx512vl && isa.avx512dq) || isa.avx_ne_convert
                          : isa.avx512_fp16 || isa.avx_ne_convert;
  if (!onednn) return GemmPath::kReference;
  return has_native_gemm(isa, dtype) ? GemmPath::kOnednnNative : GemmPath::kOnednnEmulated;
}

std::string native_gemm_needs(Precision dtype) {
  if (dtype == Precision::kBFloat16) return "AVX512-BF16 or AMX-BF16";
  if (dtype == Precision::kFloat16) return "AVX512-FP16 or AMX-FP16";
  return "";
}

std::string cpuinfo_field(const std::string& key) {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key, 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const auto begin = line.find_first_not_of(' ', colon + 1);
    return begin == std::string::npos ? "" : line.substr(begin);
  }
  return "";
}

}  // namespace trainbench
