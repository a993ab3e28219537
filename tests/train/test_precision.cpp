// Autocast guard state handling, the dynamic loss-scaling rules (GradScaler's) and the
// sync-free scaler on CUDA (skips without a GPU).
#include <gtest/gtest.h>

#include <ATen/autocast_mode.h>

#include <limits>
#include <vector>

#include <torch/cuda.h>

#include "trainbench/train/precision.h"

namespace trainbench {
namespace {

TEST(Precision, AutocastGuardEnablesBfloat16AndRestoresOnExit) {
  ASSERT_FALSE(at::autocast::is_autocast_enabled(at::kCPU));
  const torch::Tensor a = torch::randn({8, 8}), b = torch::randn({8, 8});
  {
    AutocastGuard guard(torch::kCPU, Precision::kBFloat16);
    EXPECT_TRUE(at::autocast::is_autocast_enabled(at::kCPU));
    EXPECT_EQ(torch::matmul(a, b).scalar_type(), torch::kBFloat16);
  }
  EXPECT_FALSE(at::autocast::is_autocast_enabled(at::kCPU));
  EXPECT_EQ(torch::matmul(a, b).scalar_type(), torch::kFloat);
  {
    AutocastGuard guard(torch::kCPU, Precision::kFloat32);  // a no-op
    EXPECT_FALSE(at::autocast::is_autocast_enabled(at::kCPU));
  }
}

TEST(Precision, DisabledScalerIsAPassThrough) {
  LossScaler s(false);
  const torch::Tensor loss = torch::tensor(2.0f);
  EXPECT_TRUE(torch::equal(s.scale_loss(loss), loss));
  torch::Tensor g = torch::full({3}, std::numeric_limits<float>::infinity());
  EXPECT_FALSE(s.unscale_({g}));
  EXPECT_DOUBLE_EQ(s.scale(), 1.0);
}

TEST(Precision, ScalerUnscalesAndFlagsNonFiniteGradients) {
  LossScaler s(true, {/*init_scale=*/8.0, 2.0, 0.5, 3});
  EXPECT_FLOAT_EQ(s.scale_loss(torch::tensor(1.5f)).item<float>(), 12.0f);
  torch::Tensor g1 = torch::full({4}, 16.0f), g2 = torch::full({2}, 8.0f);
  EXPECT_FALSE(s.unscale_({g1, g2, torch::Tensor()}));  // undefined grads are ignored
  EXPECT_TRUE(torch::allclose(g1, torch::full({4}, 2.0f)));
  EXPECT_TRUE(torch::allclose(g2, torch::full({2}, 1.0f)));
  torch::Tensor bad = torch::ones({3});
  bad[1] = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(s.unscale_({torch::ones({2}), bad}));
  bad[1] = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(s.unscale_({bad}));
}

// The CPU path is LibTorch's multi-tensor kernel: every gradient multiplied by the float32
// 1/scale (the bits of a plain multiply), whatever its length (vector remainders), and a
// non-finite value anywhere, in any gradient, flags the step.
TEST(Precision, ScalerUnscalesLargeGradientsByTheFloat32InverseBitForBit) {
  LossScaler s(true, {/*init_scale=*/3.0, 2.0, 0.5, 3});
  torch::manual_seed(5);
  std::vector<torch::Tensor> grads = {torch::randn({1000, 37}) * 1e4, torch::randn({13}),
                                      torch::randn({4097}) * 1e-3};
  std::vector<torch::Tensor> before;
  for (const auto& g : grads) before.push_back(g.clone());
  EXPECT_FALSE(s.unscale_(grads));
  const torch::Tensor inv = torch::full({1}, 1.0 / 3.0);  // float32, as the scaler makes it
  for (size_t i = 0; i < grads.size(); ++i) EXPECT_TRUE(torch::equal(grads[i], before[i] * inv));
  grads[2][4096] = -std::numeric_limits<float>::infinity();
  EXPECT_TRUE(s.unscale_(grads));
}

TEST(Precision, ScalerBacksOffOnInfAndGrowsAfterAnIntervalOfGoodSteps) {
  LossScaler s(true, {/*init_scale=*/1024.0, /*growth=*/2.0, /*backoff=*/0.5, /*interval=*/3});
  s.update(true);  // inf: skip, halve, reset the run of good steps
  EXPECT_DOUBLE_EQ(s.scale(), 512.0);
  EXPECT_EQ(s.skipped_steps(), 1);
  s.update(false);
  s.update(false);
  EXPECT_DOUBLE_EQ(s.scale(), 512.0);
  EXPECT_EQ(s.growth_tracker(), 2);
  s.update(true);  // an inf in the middle of a run restarts the count
  EXPECT_DOUBLE_EQ(s.scale(), 256.0);
  EXPECT_EQ(s.growth_tracker(), 0);
  for (int i = 0; i < 3; ++i) s.update(false);
  EXPECT_DOUBLE_EQ(s.scale(), 512.0);  // grown after 3 good steps in a row
  EXPECT_EQ(s.growth_tracker(), 0);
  EXPECT_EQ(s.skipped_steps(), 2);
}

TEST(LossScalerOnDevice, ChecksBacksOffAndGrowsWithoutHostReads) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  LossScaler s(true, {/*init_scale=*/8.0, /*growth=*/2.0, /*backoff=*/0.5, /*interval=*/2},
               torch::kCUDA);
  ASSERT_TRUE(s.on_device());
  torch::Tensor g = torch::full({4}, 16.0f, torch::kCUDA);
  s.check_({g});
  EXPECT_EQ(s.found_inf().item<float>(), 0.0f);
  EXPECT_TRUE(torch::equal(g, torch::full({4}, 16.0f, torch::kCUDA)));  // checked, not unscaled
  s.update_on_device();
  s.check_({g});
  s.update_on_device();
  EXPECT_DOUBLE_EQ(s.scale(), 16.0);  // grown after 2 good steps
  g[1] = std::numeric_limits<float>::infinity();
  s.check_({g});
  EXPECT_EQ(s.found_inf().item<float>(), 1.0f);
  s.update_on_device();
  EXPECT_DOUBLE_EQ(s.scale(), 8.0);
  EXPECT_EQ(s.skipped_steps(), 1);
  EXPECT_EQ(s.growth_tracker(), 0);
  torch::Tensor h = torch::full({2}, 16.0f, torch::kCUDA);
  EXPECT_FALSE(s.unscale_({h}));  // the host-decision path: unscaled by 8
  EXPECT_TRUE(torch::allclose(h, torch::full({2}, 2.0f, torch::kCUDA)));
}

}  // namespace
}  // namespace trainbench
