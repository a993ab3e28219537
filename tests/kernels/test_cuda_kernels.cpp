// The fused kernels' CUDA launchers against their CPU launchers (the same math, fused_math.h):
// each op's forward and input gradients on CUDA equal the CPU result within float tolerance,
// dropout masks are the same on both devices, and a fused CUDA model trains the CPU's losses.
// Every case skips without a GPU.
#include <gtest/gtest.h>

#include <torch/cuda.h>
#include <torch/torch.h>

#include "test_util.h"
#include "trainbench/model/fused_ops.h"

namespace trainbench {
namespace {

using torch::Tensor;

#define TB_NEED_GPU()               \
  if (!torch::cuda::is_available()) \
  GTEST_SKIP() << "no GPU visible: the CUDA kernels compile but do not run here"

// Runs f on CPU leaves and on their CUDA copies; compares outputs and input gradients.
void expect_same_on_both(const std::vector<Tensor>& cpu_inputs,
                         const std::function<Tensor(const std::vector<Tensor>&)>& f, double tol) {
  std::vector<Tensor> a, b;
  for (const auto& t : cpu_inputs) {
    a.push_back(t.detach().clone().requires_grad_(t.is_floating_point()));
    b.push_back(t.detach().to(torch::kCUDA).requires_grad_(t.is_floating_point()));
  }
  const Tensor ya = f(a), yb = f(b);
  EXPECT_TRUE(torch::allclose(yb.cpu(), ya, tol, tol));
  const Tensor up = torch::randn(ya.sizes());
  (ya * up).sum().backward();
  (yb * up.to(torch::kCUDA)).sum().backward();
  for (size_t i = 0; i < a.size(); ++i) {
    if (!a[i].grad().defined()) continue;
    EXPECT_TRUE(torch::allclose(b[i].grad().cpu(), a[i].grad(), tol, tol)) << "input " << i;
  }
}

TEST(FusedGpu, DropAddLayerNormMatchesTheCpuKernelIncludingItsMask) {
  TB_NEED_GPU();
  torch::manual_seed(1);
  expect_same_on_both(
      {torch::randn({67, 129}), torch::randn({67, 129}), torch::randn({129}),
       torch::rand({129}) + 0.5, torch::randn({129})},
      [](const std::vector<Tensor>& x) {
        auto o = drop_add_layer_norm(x[0], x[1], x[2], x[3], x[4], {0.1, 17}, torch::kFloat);
        return o[0] + o[1];
      },
      1e-5);
}

TEST(FusedGpu, LinearReluDropoutMatchesTheCpuKernel) {
  TB_NEED_GPU();
  torch::manual_seed(2);
  expect_same_on_both(
      {torch::randn({70, 24}), torch::randn({50, 24}), torch::randn({50})},
      [](const std::vector<Tensor>& x) {
        return linear_relu_dropout(x[0], x[1], x[2], {0.2, 5});
      },
      1e-4);
}

TEST(FusedGpu, CausalAttentionMatchesTheCpuKernel) {
  TB_NEED_GPU();
  torch::manual_seed(3);
  expect_same_on_both(
      {torch::randn({2, 3, 33, 8}), torch::randn({2, 3, 33, 8}), torch::randn({2, 3, 33, 8})},
      [](const std::vector<Tensor>& x) { return causal_attention(x[0], x[1], x[2]); }, 1e-4);
}

TEST(FusedGpu, HeadCrossEntropyMatchesTheCpuKernel) {
  TB_NEED_GPU();
  torch::manual_seed(4);
  const Tensor t = torch::randint(0, 256, {45}, torch::kLong);
  expect_same_on_both(
      {torch::randn({45, 16}), torch::randn({256, 16}), torch::randn({256})},
      [&](const std::vector<Tensor>& x) {
        return head_cross_entropy(x[0], x[1], x[2], t.to(x[0].device()));
      },
      1e-5);
}

TEST(FusedGpu, FusedModelTrainsTheCpuLossesWithin1e3) {
  TB_NEED_GPU();
  RunConfig c = testing::tiny_config();
  c.compile = "fused";
  c.dropout = 0.0;
  const auto cpu = testing::train_losses(c, 20);
  c.device = "cuda";
  const auto gpu = testing::train_losses(c, 20, torch::Device(torch::kCUDA));
  for (size_t i = 0; i < cpu.size(); ++i) EXPECT_NEAR(gpu[i], cpu[i], 1e-3) << "step " << i + 1;
}

}  // namespace
}  // namespace trainbench
