// run(): the CPU rows over at::parallel_for (the build for the CPU's widest vectors, after
// checking the CPU runs its instructions), or the CUDA launch on LibTorch's current stream.
#include <ATen/Parallel.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "cpu/rows.h"
#include "trainbench/core/cpu_isa.h"
#include "trainbench/core/errors.h"
#include "trainbench/kernels/fused_kernels.h"

#ifdef TB_WITH_CUDA
#include <c10/cuda/CUDAStream.h>

#include "cuda/rows.h"
#endif

namespace trainbench::kernels {

std::string rows_isa_for(const CpuIsa& isa, const std::string& forced, std::string* why) {
  // The sets each build is compiled for (CMakeLists.txt's flags of src/kernels/cpu/rows.cpp).
  const bool avx2 = isa.avx2 && isa.fma && isa.f16c;
  const bool avx512 = avx2 && isa.avx512f && isa.avx512bw && isa.avx512vl && isa.avx512dq;
  if (!forced.empty() && forced != "avx2" && forced != "avx512") {
    *why = "TB_CPU_ROWS: '" + forced + "' is not allowed; use avx2 or avx512 (or leave it unset)";
    return "";
  }
  if (forced == "avx512" && !avx512) {
    *why = "TB_CPU_ROWS=avx512: this CPU lacks AVX-512 F/BW/VL/DQ; use avx2 or leave it unset";
    return "";
  }
  if (!avx2) {
    *why =
        "--compile fused: this CPU lacks AVX2, FMA or F16C, which the fused CPU kernels are "
        "built for; use --compile none";
    return "";
  }
  if (forced.empty()) return avx512 ? "avx512" : "avx2";
  return forced;
}

namespace {

// The rows build for this process, picked once (TB_CPU_ROWS, or the widest this CPU runs).
struct RowsIsa {
  std::string name, why;
  RowsIsa() {
    const char* forced = std::getenv("TB_CPU_ROWS");
    name = rows_isa_for(hardware_isa(), forced ? forced : "", &why);
  }
};
const RowsIsa& rows_isa_() {
  static const RowsIsa isa;
  return isa;
}

template <typename Args>
void run_(const Args& a, c10::DeviceType device) {
  if (device == c10::DeviceType::CUDA) {
#ifdef TB_WITH_CUDA
    const cudaError_t err = cuda::launch(a, c10::cuda::getCurrentCUDAStream().stream());
    if (err != cudaSuccess) {
      throw RunError(std::string("fused CUDA kernel failed to launch: ") + cudaGetErrorString(err));
    }
    return;
#else
    throw RunError("--compile fused on CUDA: this bench was built without CUDA");
#endif
  }
  const RowsIsa& isa = rows_isa_();
  if (!isa.why.empty()) throw RunError(isa.why);
  if (isa.name == "avx512") {
    at::parallel_for(0, num_chunks(a.rows), 1,
                     [&](int64_t c0, int64_t c1) { cpu::avx512::rows(a, c0, c1); });
  } else {
    at::parallel_for(0, num_chunks(a.rows), 1,
                     [&](int64_t c0, int64_t c1) { cpu::avx2::rows(a, c0, c1); });
  }
}

}  // namespace

StorageType storage_type_of(c10::ScalarType type) {
  switch (type) {
    case c10::ScalarType::Float:
      return StorageType::kF32;
    case c10::ScalarType::Double:
      return StorageType::kF64;
    case c10::ScalarType::BFloat16:
      return StorageType::kBF16;
    case c10::ScalarType::Half:
      return StorageType::kF16;
    default:
      throw RunError(std::string("fused kernels: dtype ") + c10::toString(type) +
                     " is not supported; use float32, float64, bfloat16 or float16");
  }
}

namespace {
const char* type_name_(StorageType t) {
  switch (t) {
    case StorageType::kF32:
      return "float32";
    case StorageType::kF64:
      return "float64";
    case StorageType::kBF16:
      return "bfloat16";
    case StorageType::kF16:
      return "float16";
  }
  return "?";
}
}  // namespace

std::string format_name(const Format& f) {
  if (f.values == f.storage) return type_name_(f.storage);
  return std::string(type_name_(f.storage)) + " storage of " + type_name_(f.values) + " values";
}

c10::ScalarType dtype_of(StorageType type) {
  constexpr c10::ScalarType kTypes[] = {c10::ScalarType::Float, c10::ScalarType::Double,
                                        c10::ScalarType::BFloat16, c10::ScalarType::Half};
  return kTypes[static_cast<int>(type)];
}

c10::ScalarType acc_dtype_of(c10::ScalarType type) {
  return type == c10::ScalarType::Double ? c10::ScalarType::Double : c10::ScalarType::Float;
}

Format format_of(c10::ScalarType storage_dtype, c10::ScalarType values_dtype,
                 c10::ScalarType acc_dtype) {
  constexpr auto kNone = c10::ScalarType::Undefined;
  const StorageType storage = storage_type_of(storage_dtype);
  const StorageType values = values_dtype != kNone ? storage_type_of(values_dtype) : storage;
  const StorageType acc =
      storage_type_of(acc_dtype != kNone ? acc_dtype : acc_dtype_of(storage_dtype));
  const bool half_values = values == StorageType::kBF16 || values == StorageType::kF16;
  if (values != storage && !(storage == StorageType::kF32 && half_values)) {
    throw RunError(std::string("fused kernels: ") + type_name_(values) + " values in " +
                   type_name_(storage) +
                   " storage: a tensor holds its own dtype's values, or float32 storage holds "
                   "bfloat16 or float16 values (the float32 GEMM route)");
  }
  if ((acc != StorageType::kF32 && acc != StorageType::kF64) ||
      (values != storage && acc != StorageType::kF32)) {
    throw RunError(std::string("fused kernels: ") + format_name({storage, values, acc}) +
                   " accumulated in " + type_name_(acc) +
                   ": the kernels accumulate in float32 or float64, float32 storage of 16-bit "
                   "values in float32");
  }
  return Format{storage, values, acc};
}

Format run_format(c10::ScalarType dtype, GemmRoute route) {
  if (route == GemmRoute::kAuto) {
    throw RunError(
        "fused kernels: a run's format needs a GEMM route (native or float32), not auto");
  }
  const bool half = dtype == c10::ScalarType::BFloat16 || dtype == c10::ScalarType::Half;
  return format_of(route == GemmRoute::kFloat32 && half ? c10::ScalarType::Float : dtype, dtype);
}

Format product_format(const Format& f) { return Format{f.storage, f.storage, f.acc}; }
Format values_format(const Format& f) { return Format{f.values, f.values, f.acc}; }

#define TB_DEFINE_RUN(Args) \
  void run(const Args& a, c10::DeviceType device) { run_(a, device); }
TB_FUSED_KERNELS(TB_DEFINE_RUN)
#undef TB_DEFINE_RUN

std::string cpu_kernels_unavailable() { return rows_isa_().why; }

bool arch_list_runs_on(const std::string& list, int major, int minor) {
  std::string entry;
  for (size_t i = 0; i <= list.size(); ++i) {
    if (i < list.size() && list[i] != ';' && list[i] != ' ') {
      entry += list[i];
      continue;
    }
    int emajor = 0, eminor = 0;
    char dot = 0;
    const bool ptx = entry.size() > 4 && entry.compare(entry.size() - 4, 4, "+PTX") == 0;
    if (std::sscanf(entry.c_str(), "%d%c%d", &emajor, &dot, &eminor) == 3 && dot == '.') {
      if (emajor == major && eminor <= minor) return true;
      if (ptx && (emajor < major || (emajor == major && eminor <= minor))) return true;
    }
    entry.clear();
  }
  return false;
}

std::string cuda_arch_list() {
#ifdef TB_WITH_CUDA
  return TB_CUDA_ARCHS;
#else
  return "";
#endif
}

std::string cuda_kernels_unavailable(int device) {
#ifdef TB_WITH_CUDA
  int major = 0, minor = 0;
  std::string name;
  // The driver's own answer: a kernel's attributes on the device (no image: an error).
  if (cuda::has_code_for(device, &major, &minor, &name) == cudaSuccess) return "";
  const std::string arch = std::to_string(major) + "." + std::to_string(minor);
  return "--compile fused / --fused_adam 1: bench's CUDA kernels were built for "
         "TORCH_CUDA_ARCH_LIST '" +
         cuda_arch_list() + "', which has no code for this GPU (" + name + ", sm_" +
         std::to_string(major) + std::to_string(minor) +
         "); rebuild with bash scripts/build.sh -DTORCH_CUDA_ARCH_LIST=\"" + arch +
         ";9.0+PTX\" (docs/GPU.md), or use --compile none --fused_adam 0";
#else
  (void)device;
  return "";
#endif
}

std::string cpu_rows_isa() { return rows_isa_().name; }

}  // namespace trainbench::kernels
