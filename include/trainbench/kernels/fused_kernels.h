// CPU launchers of the fused kernels: each fills the outputs named in its arguments (already
// allocated by the caller, model/fused_ops.cpp) with the math of kernels/fused_math.h, rows
// split over LibTorch's intra-op threads in chunks of kChunkRows. The CUDA launchers with the
// same arguments are in gpu/fused_cuda.h.
#pragma once

#include <string>

#include <c10/core/ScalarType.h>

#include "trainbench/kernels/row_args.h"

namespace trainbench::kernels {

// The kernels' name for a tensor dtype; throws RunError for one they do not take.
Dt dt_of(c10::ScalarType type);

void run_cpu(const DropAddLnArgs& a);
void run_cpu(const DropAddLnGradArgs& a);
void run_cpu(const BiasReluDropoutArgs& a);
void run_cpu(const BiasReluDropoutGradArgs& a);
void run_cpu(const CausalSoftmaxArgs& a);
void run_cpu(const CausalSoftmaxGradArgs& a);
void run_cpu(const HeadCrossEntropyArgs& a);

// "" when this CPU can run the fused kernels, else why not (they are built for AVX2 + FMA).
std::string cpu_kernels_unavailable();

}  // namespace trainbench::kernels
