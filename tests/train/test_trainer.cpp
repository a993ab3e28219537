// Training (train/trainer.h): learning, determinism, bfloat16 and float16 against float32.
#include <gtest/gtest.h>

#include <cmath>

#include "test_util.h"
#include "trainbench/train/trainer.h"

namespace trainbench {
namespace {

double mean(const std::vector<double>& v, size_t begin, size_t end) {
  double s = 0;
  for (size_t i = begin; i < end; ++i) s += v[i];
  return s / static_cast<double>(end - begin);
}

TEST(Trainer, AHandfulOfStepsLowersTheLoss) {
  RunConfig c = testing::tiny_config();
  c.lr = 3e-3;
  const auto losses = testing::train_losses(c, 30);
  EXPECT_NEAR(losses[0], std::log(256.0), 1.5);  // starts near uniform over bytes
  EXPECT_LT(mean(losses, 25, 30), mean(losses, 0, 5) - 1.0);
}

TEST(Trainer, SameSeedGivesIdenticalLosses) {
  RunConfig c = testing::tiny_config();
  const auto a = testing::train_losses(c, 8), b = testing::train_losses(c, 8);
  EXPECT_EQ(a, b);
  c.seed = 99;
  EXPECT_NE(testing::train_losses(c, 8), a);
}

TEST(Trainer, Bfloat16TracksFloat32Within0p1NatsOver50Steps) {
  RunConfig c = testing::tiny_config();
  c.dropout = 0;
  c.lr = 3e-3;
  const auto f32 = testing::train_losses(c, 50);
  c.dtype = Precision::kBFloat16;
  const auto bf16 = testing::train_losses(c, 50);
  for (size_t i = 0; i < f32.size(); ++i) {
    EXPECT_NEAR(bf16[i], f32[i], 0.1) << "step " << i + 1;
  }
  EXPECT_NE(bf16, f32);  // it really ran in lower precision
}

// CPU float16 (autocast with dynamic loss scaling, LibTorch 2.x) follows float32 like bfloat16.
TEST(Trainer, Float16OnTheCpuTracksFloat32Within0p1NatsOver20Steps) {
  RunConfig c = testing::tiny_config();
  c.dropout = 0;
  c.lr = 3e-3;
  const auto f32 = testing::train_losses(c, 20);
  c.dtype = Precision::kFloat16;
  const auto f16 = testing::train_losses(c, 20);
  for (size_t i = 0; i < f32.size(); ++i) {
    EXPECT_NEAR(f16[i], f32[i], 0.1) << "step " << i + 1;
  }
  EXPECT_NE(f16, f32);
}

}  // namespace
}  // namespace trainbench
