// CPU launchers: chunks of rows over at::parallel_for, each chunk handled by the row functions
// of cpu_rows.cpp (compiled for AVX2/FMA; checked here before the first call).
#include "trainbench/kernels/fused_kernels.h"

#include <string>

#include <ATen/Parallel.h>

#include "cpu_rows.h"
#include "trainbench/core/errors.h"

namespace trainbench::kernels {
namespace {

template <typename Args, typename Fn>
void over_chunks_(const Args& a, Fn fn) {
  static const std::string why = cpu_kernels_unavailable();
  if (!why.empty()) throw RunError(why);
  at::parallel_for(0, num_chunks(a.rows), 1, [&](int64_t c0, int64_t c1) { fn(a, c0, c1); });
}

}  // namespace

Dt dt_of(c10::ScalarType type) {
  switch (type) {
    case c10::ScalarType::Float:
      return Dt::kF32;
    case c10::ScalarType::Double:
      return Dt::kF64;
    case c10::ScalarType::BFloat16:
      return Dt::kBF16;
    case c10::ScalarType::Half:
      return Dt::kF16;
    default:
      throw RunError(std::string("fused kernels: dtype ") + c10::toString(type) +
                     " is not supported; use float32, float64, bfloat16 or float16");
  }
}

void run_cpu(const DropAddLnArgs& a) { over_chunks_(a, cpu::drop_add_ln_chunks); }
void run_cpu(const DropAddLnGradArgs& a) { over_chunks_(a, cpu::drop_add_ln_grad_chunks); }
void run_cpu(const BiasReluDropoutArgs& a) { over_chunks_(a, cpu::bias_relu_dropout_chunks); }
void run_cpu(const BiasReluDropoutGradArgs& a) {
  over_chunks_(a, cpu::bias_relu_dropout_grad_chunks);
}
void run_cpu(const CausalSoftmaxArgs& a) { over_chunks_(a, cpu::causal_softmax_chunks); }
void run_cpu(const CausalSoftmaxGradArgs& a) { over_chunks_(a, cpu::causal_softmax_grad_chunks); }
void run_cpu(const HeadCrossEntropyArgs& a) { over_chunks_(a, cpu::head_cross_entropy_chunks); }

std::string cpu_kernels_unavailable() {
  if (cpu::cpu_supported()) return "";
  return "--compile fused: this CPU lacks AVX2, FMA or F16C, which the fused CPU kernels are "
         "built for; use --compile none";
}

}  // namespace trainbench::kernels
