// The CPU's instruction sets and the GEMM path rules (core/cpu_isa.h) on the machine classes
// the project runs on (AVX2-only, AVX-512 with BF16, AMX), the ONEDNN_MAX_CPU_ISA cap, and the
// detection against the kernel's own /proc/cpuinfo flags.
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <sstream>

#include "trainbench/app/validate.h"
#include "trainbench/core/config.h"
#include "trainbench/core/cpu_isa.h"
#include "trainbench/core/plan.h"

namespace trainbench {
namespace {

CpuIsa avx2_only() {  // AMD Zen 2/3, Intel before Cooper Lake without AVX-512
  CpuIsa i;
  i.avx2 = i.fma = i.f16c = true;
  return i;
}
CpuIsa avx512_no_bf16() {  // Skylake-X, Ice Lake
  CpuIsa i = avx2_only();
  i.avx512f = i.avx512bw = i.avx512vl = i.avx512dq = true;
  return i;
}
CpuIsa zen4() {  // AVX512-BF16, no FP16, no AMX
  CpuIsa i = avx512_no_bf16();
  i.avx512_bf16 = true;
  return i;
}
CpuIsa sapphire_rapids() {  // AMX-BF16 and AVX512-FP16
  CpuIsa i = zen4();
  i.avx512_fp16 = i.amx_bf16 = true;
  return i;
}

std::string path(const CpuIsa& i, const char* dtype) {
  return name_of(libtorch_gemm_path(i, choice_of<Precision>("dtype", dtype)));
}

TEST(CpuIsa, LibTorchsGemmPathOnEachMachineClass) {
  for (const CpuIsa& i : {avx2_only(), avx512_no_bf16(), zen4(), sapphire_rapids()}) {
    EXPECT_EQ(path(i, "float32"), "mkl_float32");
  }
  EXPECT_EQ(path(avx2_only(), "bfloat16"), "reference");
  EXPECT_EQ(path(avx2_only(), "float16"), "reference");
  EXPECT_EQ(path(avx512_no_bf16(), "bfloat16"), "onednn_emulated");
  EXPECT_EQ(path(avx512_no_bf16(), "float16"), "reference");
  EXPECT_EQ(path(zen4(), "bfloat16"), "onednn_native");
  EXPECT_EQ(path(zen4(), "float16"), "reference");
  EXPECT_EQ(path(sapphire_rapids(), "bfloat16"), "onednn_native");
  EXPECT_EQ(path(sapphire_rapids(), "float16"), "onednn_native");
  CpuIsa ne = avx2_only();  // AVX-NE-CONVERT: oneDNN converts on AVX2
  ne.avx_ne_convert = true;
  EXPECT_EQ(path(ne, "bfloat16"), "onednn_emulated");
  EXPECT_EQ(path(ne, "float16"), "onednn_emulated");
  EXPECT_FALSE(has_native_gemm(avx512_no_bf16(), Precision::kBFloat16));
  EXPECT_TRUE(has_native_gemm(zen4(), Precision::kBFloat16));
  EXPECT_TRUE(has_native_gemm(avx2_only(), Precision::kFloat32));
  EXPECT_EQ(native_gemm_needs(Precision::kFloat16), "AVX512-FP16 or AMX-FP16");
}

TEST(CpuIsa, OnednnMaxCpuIsaTurnsOffEverySetAboveTheCap) {
  CpuIsa all = sapphire_rapids();
  all.amx_fp16 = all.avx_ne_convert = true;
  EXPECT_EQ(isa_names(capped_isa(all, "AVX2")), (std::vector<std::string>{"avx2", "fma", "f16c"}));
  EXPECT_EQ(isa_names(capped_isa(all, "avx2")), isa_names(capped_isa(all, "AVX2")));
  const CpuIsa core = capped_isa(all, "AVX512_CORE");
  EXPECT_TRUE(core.avx512bw);
  EXPECT_FALSE(core.avx512_bf16);
  EXPECT_EQ(path(core, "bfloat16"), "onednn_emulated");
  const CpuIsa bf16 = capped_isa(all, "AVX512_CORE_BF16");
  EXPECT_TRUE(bf16.avx512_bf16);
  EXPECT_FALSE(bf16.avx512_fp16 || bf16.amx_bf16);
  EXPECT_TRUE(capped_isa(all, "AVX512_CORE_AMX").amx_bf16);
  EXPECT_FALSE(capped_isa(all, "AVX512_CORE_AMX").amx_fp16);
  EXPECT_FALSE(capped_isa(all, "SSE41").avx2);
  for (const char* none : {"", "ALL", "DEFAULT", "no-such-isa"}) {
    EXPECT_EQ(isa_names(capped_isa(all, none)), isa_names(all)) << none;
  }
}

// What CPUID says is what the kernel lists in /proc/cpuinfo (for the sets every kernel since
// 5.x names); the test runs on whatever CPU the suite runs on.
TEST(CpuIsa, HardwareSetsAgreeWithTheKernelsCpuFlags) {
  EXPECT_EQ(cpuinfo_field("no such key"), "");
  std::set<std::string> flags;
  std::istringstream words(cpuinfo_field("flags"));
  for (std::string w; words >> w;) flags.insert(w);
  if (flags.empty()) GTEST_SKIP() << "no flags line in /proc/cpuinfo";
  // The value starts at its first word: no key, colon or blank before it.
  const std::string model = cpuinfo_field("model name");
  EXPECT_TRUE(model.empty() || (model[0] != ' ' && model.find(':') != 0)) << model;
  const std::vector<std::string> have = isa_names(hardware_isa());
  const std::set<std::string> ours(have.begin(), have.end());
  for (const char* f :
       {"avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512_bf16"}) {
    EXPECT_EQ(ours.count(f), flags.count(f)) << f;
  }
  // The newer sets: a kernel may list them and not enable their register state (AMX tiles
  // before 5.16), or be too old to name them; what bench finds is never more than listed.
  for (const char* f : {"avx512_fp16", "amx_bf16"}) EXPECT_LE(ours.count(f), flags.count(f)) << f;
}

// --lowp_gemm auto: float32 where the CPU (as capped) has no native GEMM for the dtype, native
// where it has; only fused bfloat16/float16 runs on the CPU take a route at all.
TEST(CpuIsa, AutoRouteFollowsTheCpuAndAppliesToFusedLowPrecisionCpuRunsOnly) {
  RunConfig c;
  c.device = DeviceChoice::kCpu;
  c.compile = CompilePath::kFused;
  c.dtype = Precision::kBFloat16;
  const char* saved = std::getenv("ONEDNN_MAX_CPU_ISA");
  const std::string keep = saved ? saved : "";
  setenv("ONEDNN_MAX_CPU_ISA", "AVX2", 1);
  EXPECT_EQ(make_plan(c).gemm_route, GemmRoute::kFloat32);
  c.dtype = Precision::kFloat16;
  EXPECT_EQ(make_plan(c).gemm_route, GemmRoute::kFloat32);
  c.lowp_gemm = GemmRoute::kNative;
  EXPECT_EQ(make_plan(c).gemm_route, GemmRoute::kNative);  // forced
  unsetenv("ONEDNN_MAX_CPU_ISA");
  c.lowp_gemm = GemmRoute::kAuto;
  c.dtype = Precision::kBFloat16;
  EXPECT_EQ(make_plan(c).gemm_route, has_native_gemm(hardware_isa(), Precision::kBFloat16)
                                         ? GemmRoute::kNative
                                         : GemmRoute::kFloat32);
  c.lowp_gemm = GemmRoute::kFloat32;
  EXPECT_EQ(make_plan(c).gemm_route, GemmRoute::kFloat32);  // forced
  c.dtype = Precision::kFloat32;
  EXPECT_EQ(make_plan(c).gemm_route, GemmRoute::kNative);
  c.dtype = Precision::kBFloat16;
  c.compile = CompilePath::kNone;
  EXPECT_EQ(make_plan(c).gemm_route, GemmRoute::kNative);  // eager runs measure LibTorch's own
  if (saved) setenv("ONEDNN_MAX_CPU_ISA", keep.c_str(), 1);
}

}  // namespace
}  // namespace trainbench
