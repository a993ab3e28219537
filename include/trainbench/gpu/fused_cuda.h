// CUDA launchers of the fused kernels: the same arguments and results as the CPU launchers of
// kernels/fused_kernels.h, the same per-element math (kernels/fused_math.h), run on the current
// CUDA stream (gpu/fused_kernels.cu). In a build without CUDA each throws RunError.
#pragma once

#include "trainbench/kernels/row_args.h"

namespace trainbench::gpu {

void run_cuda(const kernels::DropAddLnArgs& a);
void run_cuda(const kernels::DropAddLnGradArgs& a);
void run_cuda(const kernels::BiasReluDropoutArgs& a);
void run_cuda(const kernels::BiasReluDropoutGradArgs& a);
void run_cuda(const kernels::CausalSoftmaxArgs& a);
void run_cuda(const kernels::CausalSoftmaxGradArgs& a);
void run_cuda(const kernels::HeadCrossEntropyArgs& a);

}  // namespace trainbench::gpu
