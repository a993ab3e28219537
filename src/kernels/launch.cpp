// run(): the CPU rows over at::parallel_for (after checking the CPU runs the instructions they
// were built for), or the CUDA launch on LibTorch's current stream.
#include <ATen/Parallel.h>

#include <string>

#include "cpu/rows.h"
#include "trainbench/core/errors.h"
#include "trainbench/kernels/fused_kernels.h"

#ifdef TB_WITH_CUDA
#include <c10/cuda/CUDAStream.h>

#include "cuda/rows.h"
#endif

namespace trainbench::kernels {
namespace {

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
  static const std::string why = cpu_kernels_unavailable();
  if (!why.empty()) throw RunError(why);
  at::parallel_for(0, num_chunks(a.rows), 1, [&](int64_t c0, int64_t c1) { cpu::rows(a, c0, c1); });
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

#define TB_DEFINE_RUN(Args) \
  void run(const Args& a, c10::DeviceType device) { run_(a, device); }
TB_FUSED_KERNELS(TB_DEFINE_RUN)
#undef TB_DEFINE_RUN

std::string cpu_kernels_unavailable() {
  if (cpu::cpu_supported()) return "";
  return "--compile fused: this CPU lacks AVX2, FMA or F16C, which the fused CPU kernels are "
         "built for; use --compile none";
}

}  // namespace trainbench::kernels
