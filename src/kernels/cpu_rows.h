// The CPU row functions behind kernels/fused_kernels.h: each runs the fused math over the
// chunks [c0, c1) of kChunkRows rows. Compiled with AVX2/FMA flags in a file that includes no
// LibTorch header (see cpu_rows.cpp); the launchers call them from at::parallel_for.
#pragma once

#include <cstdint>

#include "trainbench/kernels/row_args.h"

namespace trainbench::kernels::cpu {

void drop_add_ln_chunks(const DropAddLnArgs& a, int64_t c0, int64_t c1);
void drop_add_ln_grad_chunks(const DropAddLnGradArgs& a, int64_t c0, int64_t c1);
void bias_relu_dropout_chunks(const BiasReluDropoutArgs& a, int64_t c0, int64_t c1);
void bias_relu_dropout_grad_chunks(const BiasReluDropoutGradArgs& a, int64_t c0, int64_t c1);
void causal_softmax_chunks(const CausalSoftmaxArgs& a, int64_t c0, int64_t c1);
void causal_softmax_grad_chunks(const CausalSoftmaxGradArgs& a, int64_t c0, int64_t c1);
void head_cross_entropy_chunks(const HeadCrossEntropyArgs& a, int64_t c0, int64_t c1);

// True when this CPU runs the instructions cpu_rows.cpp was compiled for.
bool cpu_supported();

}  // namespace trainbench::kernels::cpu
