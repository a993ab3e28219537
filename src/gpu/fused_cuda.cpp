// The fused kernels' CUDA launchers on LibTorch's current stream (fused_kernels.cu holds the
// kernels); a build without CUDA refuses.
#include "trainbench/gpu/fused_cuda.h"

#include <string>

#include "trainbench/core/errors.h"

#ifdef TB_WITH_CUDA
#include <c10/cuda/CUDAStream.h>

#include "fused_kernels_cuda.h"
#endif

namespace trainbench::gpu {
namespace {

template <typename Args>
void launch_(const Args& a) {
#ifdef TB_WITH_CUDA
  const cudaError_t err = detail::launch(a, c10::cuda::getCurrentCUDAStream().stream());
  if (err != cudaSuccess) {
    throw RunError(std::string("fused CUDA kernel failed to launch: ") + cudaGetErrorString(err));
  }
#else
  (void)a;
  throw RunError("--compile fused on CUDA: this bench was built without CUDA");
#endif
}

}  // namespace

void run_cuda(const kernels::DropAddLnArgs& a) { launch_(a); }
void run_cuda(const kernels::DropAddLnGradArgs& a) { launch_(a); }
void run_cuda(const kernels::BiasReluDropoutArgs& a) { launch_(a); }
void run_cuda(const kernels::BiasReluDropoutGradArgs& a) { launch_(a); }
void run_cuda(const kernels::CausalSoftmaxArgs& a) { launch_(a); }
void run_cuda(const kernels::CausalSoftmaxGradArgs& a) { launch_(a); }
void run_cuda(const kernels::HeadCrossEntropyArgs& a) { launch_(a); }

}  // namespace trainbench::gpu
