// Parallel counter-based dropout masks (see dropout.h for why).
#include "trainbench/model/dropout.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <mutex>

#include "trainbench/core/hash.h"
#include "trainbench/kernels/fused_math.h"

namespace trainbench {

uint64_t dropout_key() {
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get<at::CPUGeneratorImpl>()->random64();
}

uint64_t seed_key() {
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  return splitmix64(gen.current_seed());
}

torch::Tensor parallel_dropout_mask(const torch::Tensor& like, double p, uint64_t key) {
  TORCH_CHECK(p >= 0 && p < 1, "dropout probability ", p, " is outside [0, 1)");
  torch::Tensor mask = torch::empty(like.sizes(), like.options().requires_grad(false));
  // Keep an element when the top 32 bits of its hash reach p * 2^32 (the fused kernels' rule).
  const uint32_t threshold = kernels::math::dropout_threshold(p);
  const int64_t n = mask.numel();
  AT_DISPATCH_FLOATING_TYPES_AND2(
      at::kBFloat16, at::kHalf, mask.scalar_type(), "dropout_mask", [&] {
        scalar_t* out = mask.data_ptr<scalar_t>();
        const scalar_t keep = static_cast<scalar_t>(1.0 / (1.0 - p)),
                       drop = static_cast<scalar_t>(0);
        at::parallel_for(0, n, 1 << 15, [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i) {
            const uint64_t h = splitmix64(key + static_cast<uint64_t>(i) * kGoldenGamma);
            out[i] = (h >> 32) >= threshold ? keep : drop;
          }
        });
      });
  return mask;
}

torch::Tensor parallel_dropout(const torch::Tensor& x, double p, bool train) {
  if (!train || p == 0) return x;
  if (!x.device().is_cpu()) return torch::dropout(x, p, train);
  return x * parallel_dropout_mask(x, p, dropout_key());
}

}  // namespace trainbench
