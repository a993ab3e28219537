// The CPU's instruction sets, read once here for all of bench (CPUID): those that decide how fast
// a GEMM in each dtype can run and the GEMM path LibTorch and bench's fused model take for that
// dtype on this CPU; those the fused CPU rows are built for (kernels/launch.cpp); SSE4.2's
// CRC-32C (the TensorBoard writer).
// LibTorch 2.11 on x86: float32 GEMMs go to MKL; bfloat16 ones to oneDNN when the CPU has
// AVX-512 (BW+VL+DQ) or AVX-NE-CONVERT (native with AVX512-BF16 or AMX-BF16, emulated through
// float32 FMAs without them), else to LibTorch's reference GEMM (scalar loops, one thread:
// pytorch#151934); float16 likewise with AVX512-FP16 / AMX-FP16 / AVX-NE-CONVERT.
// ONEDNN_MAX_CPU_ISA caps what oneDNN (and so LibTorch's bfloat16 check) sees: bench applies
// the same cap, so `ONEDNN_MAX_CPU_ISA=AVX2` reproduces an AVX2-only machine's routes on any
// CPU (the tests use it to force them).
#pragma once

#include <string>
#include <vector>

#include "trainbench/core/choices.h"

namespace trainbench {

struct CpuIsa {
  bool sse4_2 = false;  // CRC32 (CRC-32C)
  bool avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false;
  bool avx512_bf16 = false;     // VDPBF16PS: bfloat16 dot products
  bool avx512_fp16 = false;     // float16 arithmetic
  bool amx_bf16 = false;        // AMX tiles with bfloat16 (implies AMX-TILE)
  bool amx_fp16 = false;        // AMX tiles with float16
  bool avx_ne_convert = false;  // bfloat16/float16 conversions on AVX2 (oneDNN's avx2_vnni_2)
};

// What the CPU and the operating system offer (CPUID, with XGETBV for the AVX/AVX-512/AMX
// register state), before any cap.
CpuIsa hardware_isa();
// `isa` as oneDNN sees it under ONEDNN_MAX_CPU_ISA=`cap` (SSE41, AVX, AVX2, AVX2_VNNI,
// AVX2_VNNI_2, AVX512_CORE, AVX512_CORE_VNNI, AVX512_CORE_BF16, AVX512_CORE_FP16,
// AVX512_CORE_AMX, AVX512_CORE_AMX_FP16, the AVX10_1_512* names, ALL; case-insensitive; empty
// or unknown: no cap): every set above the cap is off.
CpuIsa capped_isa(CpuIsa isa, const std::string& cap);
// The first processor's value of a /proc/cpuinfo key ("model name", "vendor_id", "cpu family",
// "model\t" for the model number alone); "" where the file or the key is missing.
std::string cpuinfo_field(const std::string& key);
// hardware_isa() capped by the ONEDNN_MAX_CPU_ISA environment variable: what the run's GEMMs
// see. The value of the variable (or "") in *cap when cap is given.
CpuIsa effective_isa(std::string* cap = nullptr);

// The names of the sets that are on, in a fixed order ("avx2", "fma", ..., "amx_fp16"); SSE4.2,
// which every x86-64 CPU bench met has and no GEMM path depends on, is not among them.
std::vector<std::string> isa_names(const CpuIsa& isa);

// How a GEMM in a dtype runs: the names env.json, summary.json and the report give a path.
enum class GemmPath {
  kMklFloat32,
  kOnednnNative,
  kOnednnEmulated,
  kReference,
  kFloat32Rounded,
  kCuda,
  kLast = kCuda
};
template <>
struct ChoiceTable<GemmPath> {
  static constexpr std::array<ChoiceRow<GemmPath>, 6> rows = {{
      {GemmPath::kMklFloat32, "mkl_float32", "float32 in MKL"},
      {GemmPath::kOnednnNative, "onednn_native",
       "oneDNN with the dtype's dot-product instructions (AVX512-BF16/AMX, ...)"},
      {GemmPath::kOnednnEmulated, "onednn_emulated",
       "oneDNN converting to float32 on AVX-512 or AVX-NE-CONVERT"},
      {GemmPath::kReference, "reference", "LibTorch's reference GEMM: scalar loops on one thread"},
      {GemmPath::kFloat32Rounded, "float32_rounded",
       "the float32 GEMM route: MKL float32 on operands rounded to the dtype"},
      {GemmPath::kCuda, "cuda", "cuBLAS / cuDNN on a GPU"},
  }};
};
static_assert(choices_in_order<GemmPath>(), "one row per GemmPath, in order");

// The path of LibTorch's own GEMM for `dtype` (float32 | bfloat16 | float16) on this CPU.
GemmPath libtorch_gemm_path(const CpuIsa& isa, Precision dtype);
// The path a GEMM route takes for `dtype`: the float32 route of a bfloat16/float16 run is
// float32_rounded; the native route is LibTorch's own path (cuda on a GPU).
GemmPath gemm_path_of(GemmRoute route, Precision dtype, const CpuIsa& isa, bool cuda);
// True when the CPU has dot-product instructions for `dtype` (float32 always; bfloat16:
// AVX512-BF16 or AMX-BF16; float16: AVX512-FP16 or AMX-FP16).
bool has_native_gemm(const CpuIsa& isa, Precision dtype);
// The instructions a native GEMM in `dtype` needs, in words: "AVX512-BF16 or AMX-BF16".
std::string native_gemm_needs(Precision dtype);

}  // namespace trainbench
