// The raw CUDA launchers of gpu/fused_kernels.cu (no LibTorch header; called by fused_cuda.cpp
// with the current stream). Each returns the launch's error code.
#pragma once

#include <cuda_runtime_api.h>

#include "trainbench/kernels/row_args.h"

namespace trainbench::gpu::detail {

cudaError_t launch(const kernels::DropAddLnArgs& a, cudaStream_t s);
cudaError_t launch(const kernels::DropAddLnGradArgs& a, cudaStream_t s);
cudaError_t launch(const kernels::BiasReluDropoutArgs& a, cudaStream_t s);
cudaError_t launch(const kernels::BiasReluDropoutGradArgs& a, cudaStream_t s);
cudaError_t launch(const kernels::CausalSoftmaxArgs& a, cudaStream_t s);
cudaError_t launch(const kernels::CausalSoftmaxGradArgs& a, cudaStream_t s);
cudaError_t launch(const kernels::HeadCrossEntropyArgs& a, cudaStream_t s);

}  // namespace trainbench::gpu::detail
