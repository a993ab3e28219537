// Block-lower-triangular score GEMMs of causal attention (see causal_gemm.h).
#include "trainbench/model/causal_gemm.h"

#include "trainbench/core/cpu_isa.h"

#include <algorithm>

#include <ATen/ops/bmm.h>

namespace trainbench {

int64_t causal_block_for(c10::ScalarType dtype, int64_t seq, bool cuda) {
  // Measured faster only where MKL's float32 GEMMs are AVX2 ones (docs/BENCHMARKS.md).
  static const bool avx2_class = !effective_isa().avx512f;
  const bool wide = dtype == torch::kFloat || dtype == torch::kDouble;
  return !cuda && wide && avx2_class ? kCausalBlock : seq;
}

torch::Tensor causal_scores(const torch::Tensor& a, const torch::Tensor& b, c10::ScalarType dtype,
                            int64_t block) {
  const int64_t s = a.size(1);
  if (block >= s) {
    const torch::Tensor whole = at::bmm(a, b.transpose(1, 2));
    return whole.scalar_type() == dtype ? whole : whole.to(dtype);
  }
  torch::Tensor out = torch::empty({a.size(0), s, s}, a.options().dtype(dtype));
  for (int64_t r0 = 0; r0 < s; r0 += block) {
    const int64_t rows = std::min(block, s - r0), keys = r0 + rows;
    // Into a contiguous block, then copied: measured faster than a product into the strided
    // view of `out`.
    out.narrow(1, r0, rows)
        .narrow(2, 0, keys)
        .copy_(at::bmm(a.narrow(1, r0, rows), b.narrow(1, 0, keys).transpose(1, 2)));
  }
  return out;
}

}  // namespace trainbench
