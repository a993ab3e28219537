// The CUDA launches of the fused kernels (kernels/cuda/rows.cu; no LibTorch header): launch(a,
// stream) starts a kernel's grid on the caller's stream (launch.cpp passes the current one)
// and returns the launch's error code.
#pragma once

#include <cuda_runtime_api.h>

#include "trainbench/kernels/kernel_args.h"

namespace trainbench::kernels::cuda {

#define TB_DECLARE_CUDA_LAUNCH(Args) cudaError_t launch(const Args& a, cudaStream_t stream);
TB_FUSED_KERNELS(TB_DECLARE_CUDA_LAUNCH)
#undef TB_DECLARE_CUDA_LAUNCH

}  // namespace trainbench::kernels::cuda
