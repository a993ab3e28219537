// The CUDA launches of the fused kernels (kernels/cuda/rows.cu; no LibTorch header): launch(a,
// stream) starts a kernel's grid on the caller's stream (launch.cpp passes the current one)
// and returns the launch's error code.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "trainbench/kernels/kernel_args.h"

namespace trainbench::kernels::cuda {

// cudaSuccess when the kernels have code device `device` runs (cudaFuncGetAttributes of one of
// them there: cudaErrorNoKernelImageForDevice or cudaErrorInvalidDeviceFunction without it);
// its compute capability and name in *major, *minor, *name either way. The current device is
// left as it was.
cudaError_t has_code_for(int device, int* major, int* minor, std::string* name);

#define TB_DECLARE_CUDA_LAUNCH(Args) cudaError_t launch(const Args& a, cudaStream_t stream);
TB_FUSED_KERNELS(TB_DECLARE_CUDA_LAUNCH)
#undef TB_DECLARE_CUDA_LAUNCH

// The v2 kernels (--gpu_kernels v2, rows_v2.cu) of the Args that have one: launch.cpp calls them
// where the arguments fit v2 (fused_kernels.h gpu_rows_taken), v1's launch above elsewhere.
#define TB_CUDA_V2_KERNELS(X) \
  X(DropAddLnArgs)            \
  X(DropAddLnGradArgs)        \
  X(BiasReluDropoutArgs)      \
  X(BiasReluDropoutGradArgs)  \
  X(ColumnSumsArgs)           \
  X(HeadsArgs)                \
  X(CausalSoftmaxArgs)        \
  X(CausalSoftmaxGradArgs)    \
  X(HeadCrossEntropyArgs)
#define TB_DECLARE_CUDA_LAUNCH_V2(Args) cudaError_t launch_v2(const Args& a, cudaStream_t stream);
TB_CUDA_V2_KERNELS(TB_DECLARE_CUDA_LAUNCH_V2)
#undef TB_DECLARE_CUDA_LAUNCH_V2

}  // namespace trainbench::kernels::cuda
