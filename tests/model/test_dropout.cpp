// The parallel dropout kernel: mask values and rate, independence from the thread count,
// determinism under torch::manual_seed, gradients, and how --dropout_impl resolves.
#include <gtest/gtest.h>

#include <ATen/Parallel.h>

#include "test_util.h"
#include "trainbench/app/validate.h"
#include "trainbench/model/dropout.h"

namespace trainbench {
namespace {

TEST(Dropout, MaskHoldsZeroOrTheScaleAtTheRequestedRate) {
  const torch::Tensor like = torch::empty({1000, 1000});
  const torch::Tensor mask = parallel_dropout_mask(like, 0.1, 42);
  const float scale = static_cast<float>(1.0 / 0.9);
  EXPECT_TRUE(((mask == 0) | (mask == scale)).all().item<bool>());
  const double kept = (mask > 0).to(torch::kDouble).mean().item<double>();
  EXPECT_NEAR(kept, 0.9, 0.003);
  EXPECT_EQ(parallel_dropout_mask(torch::empty({64}, torch::kBFloat16), 0.5, 1).scalar_type(),
            torch::kBFloat16);
  EXPECT_THROW(parallel_dropout_mask(like, 1.0, 1), c10::Error);
}

TEST(Dropout, MaskDependsOnTheKeyOnlyNotOnTheThreadCount) {
  const int threads = at::get_num_threads();
  const torch::Tensor like = torch::empty({300'000});
  at::set_num_threads(1);
  const torch::Tensor one = parallel_dropout_mask(like, 0.3, 7);
  at::set_num_threads(2);
  const torch::Tensor two = parallel_dropout_mask(like, 0.3, 7);
  at::set_num_threads(threads);
  EXPECT_TRUE(torch::equal(one, two));
  EXPECT_FALSE(torch::equal(one, parallel_dropout_mask(like, 0.3, 8)));
}

TEST(Dropout, TrainingFollowsTheSeedEvaluationIsIdentity) {
  const torch::Tensor x = torch::randn({4096});
  EXPECT_TRUE(parallel_dropout(x, 0.5, false).is_same(x));
  EXPECT_TRUE(parallel_dropout(x, 0.0, true).is_same(x));
  torch::manual_seed(3);
  const torch::Tensor a = parallel_dropout(x, 0.5, true);
  const torch::Tensor b = parallel_dropout(x, 0.5, true);
  torch::manual_seed(3);
  EXPECT_TRUE(torch::equal(a, parallel_dropout(x, 0.5, true)));
  EXPECT_FALSE(torch::equal(a, b));  // each call draws a new key
}

TEST(Dropout, GradientIsTheMask) {
  const torch::Tensor x = torch::randn({2048}, torch::requires_grad());
  torch::manual_seed(9);
  const torch::Tensor y = parallel_dropout(x, 0.25, true);
  y.sum().backward();
  // y = x * mask, so dy/dx = mask = y / x wherever x != 0.
  EXPECT_TRUE(torch::allclose(x.grad(), (y / x).detach(), 1e-5, 1e-6));
  EXPECT_NEAR((x.grad() == 0).to(torch::kDouble).mean().item<double>(), 0.25, 0.04);
}

// --dropout_impl auto (core/plan.h): the fused kernels' own masks with --compile fused, the
// parallel mask for eager handcraft models on the CPU, else torch::dropout.
// auto: LibTorch's own torch::dropout (and allocator) wherever a run is LibTorch as shipped;
// the fused path's own masks (and bench's caching allocator) with --compile fused; bench's
// parallel mask and allocator elsewhere only where asked for.
TEST(Dropout, ImplAndAllocatorResolveToLibTorchsOwnOutsideTheFusedPath) {
  RunConfig c = testing::tiny_config();
  EXPECT_EQ(make_plan(c).dropout, DropoutImpl::kNative);
  EXPECT_FALSE(make_plan(c).keep_memory);
  c.device = DeviceChoice::kCuda;  // planning touches no GPU
  EXPECT_EQ(make_plan(c).dropout, DropoutImpl::kNative);
  c.device = DeviceChoice::kCpu;
  c.compile = CompilePath::kFused;
  EXPECT_EQ(make_plan(c).dropout, DropoutImpl::kFused);
  EXPECT_TRUE(make_plan(c).keep_memory);
  c.keep_memory = KeepMemory::kOff;
  EXPECT_FALSE(make_plan(c).keep_memory);
  c.compile = CompilePath::kTorchScript;
  EXPECT_EQ(make_plan(c).dropout, DropoutImpl::kNative);
  c.keep_memory = KeepMemory::kOn;
  EXPECT_TRUE(make_plan(c).keep_memory);
  c.keep_memory = KeepMemory::kAuto;
  EXPECT_FALSE(make_plan(c).keep_memory);
  c.compile = CompilePath::kNone;
  c.model = ModelKind::kTorch;
  EXPECT_EQ(make_plan(c).dropout, DropoutImpl::kNative);
  c.dropout_impl = DropoutImpl::kParallel;
  EXPECT_THROW(validate(c), ConfigError);
  c.model = ModelKind::kHandcraft;
  EXPECT_EQ(make_plan(c).dropout, DropoutImpl::kParallel);  // asked for: bench's mask
  c.dropout_impl = DropoutImpl::kNative;
  EXPECT_EQ(make_plan(c).dropout, DropoutImpl::kNative);
}

}  // namespace
}  // namespace trainbench
