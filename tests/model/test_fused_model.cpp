// --compile fused: the fused model is the handcraft network (same parameters and initial
// values), computes eager's logits and gradients, and trains eager's losses with dropout 0.
#include <gtest/gtest.h>

#include <torch/torch.h>

#include "test_util.h"
#include "trainbench/kernels/fused_kernels.h"
#include "trainbench/model/model.h"

namespace trainbench {
namespace {

RunConfig small_(bool flash, double dropout = 0.0) {
  RunConfig c = testing::tiny_config();
  c.num_layer = 2;
  c.d_model = 48;  // not a multiple of 16: the kernels' row loops have a remainder
  c.num_heads = 3;
  c.ff_dim = 80;
  c.flash = flash;
  c.dropout = dropout;
  return c;
}

std::shared_ptr<LanguageModel> seeded_(RunConfig c, const std::string& compile) {
  c.compile = choice_of<CompilePath>("compile", compile);
  torch::manual_seed(9);
  return make_model(make_plan(c));
}

TEST(FusedModel, HasTheHandcraftParametersWithTheSameInitialValues) {
  const RunConfig c = small_(false);
  const auto eager = seeded_(c, "none"), fused = seeded_(c, "fused");
  const auto a = eager->named_parameters(), b = fused->named_parameters();
  ASSERT_EQ(a.size(), b.size());
  for (const auto& p : a) {
    ASSERT_TRUE(b.contains(p.key())) << p.key();
    EXPECT_TRUE(torch::equal(p.value(), b[p.key()])) << p.key();
  }
  RunConfig ref;  // the reference shape with 8 layers
  ref.num_layer = 8;
  ref.compile = CompilePath::kFused;
  EXPECT_EQ(count_parameters(*make_model(make_plan(ref))), 25'612'544);
}

TEST(FusedModel, LogitsLossAndGradientsMatchEagerInFloat32) {
  for (bool flash : {false, true}) {
    const RunConfig c = small_(flash);
    const auto eager = seeded_(c, "none"), fused = seeded_(c, "fused");
    torch::manual_seed(3);
    const torch::Tensor bytes = torch::randint(0, 256, {c.seq_len, 3}, torch::kLong);
    const torch::Tensor le = eager->forward(bytes), lf = fused->forward(bytes);
    ASSERT_EQ(lf.sizes(), le.sizes());
    EXPECT_TRUE(torch::allclose(lf, le, 1e-5, 1e-5)) << "flash " << flash;
    const torch::Tensor loss_e = eager->loss(bytes), loss_f = fused->loss(bytes);
    EXPECT_NEAR(loss_f.item<double>(), loss_e.item<double>(), 1e-5);
    loss_e.backward();
    loss_f.backward();
    auto ge = eager->named_parameters(), gf = fused->named_parameters();
    for (const auto& p : ge) {
      const torch::Tensor a = p.value().grad(), b = gf[p.key()].grad();
      ASSERT_TRUE(b.defined()) << p.key();
      const double scale = a.abs().max().item<double>() + 1e-12;
      EXPECT_LT((a - b).abs().max().item<double>() / scale, 1e-4) << p.key() << " flash " << flash;
    }
  }
}

TEST(FusedModel, FortyStepsWithoutDropoutTrainEagersLossesWithin1e4) {
  for (bool flash : {false, true}) {
    RunConfig c = small_(flash);
    c.compile = CompilePath::kNone;
    const auto eager = testing::train_losses(c, 40);
    c.compile = CompilePath::kFused;
    const auto fused = testing::train_losses(c, 40);
    ASSERT_EQ(fused.size(), 40u);
    for (size_t i = 0; i < fused.size(); ++i) {
      EXPECT_NEAR(fused[i], eager[i], 1e-4) << "step " << i + 1 << " flash " << flash;
    }
    EXPECT_LT(fused.back(), fused.front() - 0.5);  // and it learns
  }
}

// bfloat16 step by step; float16 at the end (its loss scaler skips the first steps whose
// gradients overflow at the initial scale of 2^16, so its curve starts a few steps late).
TEST(FusedModel, Bfloat16AndFloat16TrackFloat32Within0p1Nats) {
  RunConfig c = small_(false, 0.1);
  c.compile = CompilePath::kFused;
  const auto f32 = testing::train_losses(c, 40);
  c.dtype = Precision::kBFloat16;
  const auto bf16 = testing::train_losses(c, 40);
  for (size_t i = 0; i < bf16.size(); ++i) EXPECT_NEAR(bf16[i], f32[i], 0.1) << "step " << i + 1;
  c.dtype = Precision::kFloat16;
  const auto f16 = testing::train_losses(c, 40);
  auto tail = [](const std::vector<double>& v) { return (v[37] + v[38] + v[39]) / 3; };
  EXPECT_NEAR(tail(f16), tail(f32), 0.1);
}

// --lowp_gemm float32 (the route for CPUs without bfloat16 instructions): bfloat16 training
// tracks float32 and eager bfloat16 step by step, as the native route does.
TEST(FusedModel, Float32GemmRouteInBfloat16TracksFloat32AndEagerBfloat16) {
  RunConfig c = small_(false, 0.1);
  c.compile = CompilePath::kFused;
  const auto f32 = testing::train_losses(c, 40);
  c.dtype = Precision::kBFloat16;
  c.lowp_gemm = GemmRoute::kFloat32;
  ASSERT_EQ(make_plan(c).gemm_route, GemmRoute::kFloat32);
  // The run's format, built once: float32 storage of bfloat16 values.
  const kernels::Format f = ModelOptions::from_plan(make_plan(c)).format;
  ASSERT_EQ(kernels::format_name(f), "float32 storage of bfloat16 values");
  c.lowp_gemm = GemmRoute::kNative;
  ASSERT_EQ(kernels::format_name(ModelOptions::from_plan(make_plan(c)).format), "bfloat16");
  c.lowp_gemm = GemmRoute::kFloat32;
  const auto routed = testing::train_losses(c, 40);
  for (size_t i = 0; i < routed.size(); ++i) {
    EXPECT_NEAR(routed[i], f32[i], 0.1) << "step " << i + 1;  // the same dropout masks
  }
  // Against eager (whose dropout masks differ) without dropout.
  c.dropout = 0;
  const auto routed0 = testing::train_losses(c, 40);
  c.compile = CompilePath::kNone;
  c.lowp_gemm = GemmRoute::kAuto;
  const auto eager0 = testing::train_losses(c, 40);
  for (size_t i = 0; i < routed0.size(); ++i) {
    EXPECT_NEAR(routed0[i], eager0[i], 0.1) << "step " << i + 1;
  }
}

TEST(FusedModel, DropoutIsDeterministicPerSeedAndOffInEvaluation) {
  RunConfig c = small_(false, 0.1);
  c.compile = CompilePath::kFused;
  EXPECT_EQ(testing::train_losses(c, 5), testing::train_losses(c, 5));
  auto m = seeded_(c, "fused");
  const torch::Tensor bytes = torch::randint(0, 256, {c.seq_len, 2}, torch::kLong);
  m->eval();
  EXPECT_TRUE(torch::equal(m->forward(bytes), m->forward(bytes)));
  m->train();
  EXPECT_FALSE(torch::equal(m->forward(bytes), m->forward(bytes)));
  // The masks follow the pass count (fused_model.cpp StepKeys), not the generator's draws: the
  // same seed draws the same masks pass for pass, and a model told it resumes after one pass
  // draws the second pass's.
  auto fresh = seeded_(c, "fused"), resumed = seeded_(c, "fused");
  const torch::Tensor first = fresh->forward(bytes), second = fresh->forward(bytes);
  torch::randn({7});  // a draw from the generator moves no mask
  resumed->resume_at(1);
  EXPECT_TRUE(torch::equal(resumed->forward(bytes), second));
  EXPECT_FALSE(torch::equal(first, second));
}

}  // namespace
}  // namespace trainbench
