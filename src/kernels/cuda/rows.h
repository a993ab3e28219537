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

}  // namespace trainbench::kernels::cuda
