// Version shims so one codebase builds on Debian's LibTorch 1.13 (CPU) and LibTorch 2.x (CUDA).
#pragma once

#include <torch/torch.h>
#include <torch/version.h>

#define TB_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) ||     \
   (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace trainbench {

// Fused scaled-dot-product attention on [batch, heads, seq, head_dim] tensors. 1.13 only has
// the private op (weights not requested); 2.x has the public one, which can pick flash kernels.
inline torch::Tensor tb_sdpa(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                             double dropout_p, bool is_causal) {
#if TB_TORCH_AT_LEAST(2, 0)
  return at::scaled_dot_product_attention(q, k, v, {}, dropout_p, is_causal);
#else
  return std::get<0>(at::_scaled_dot_product_attention(q, k, v, {}, dropout_p, false, is_causal));
#endif
}

}  // namespace trainbench
