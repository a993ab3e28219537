// Both models: the reference parameter count, causality, and naive vs flash attention.
#include <gtest/gtest.h>

#include "test_util.h"
#include "trainbench/core/cpu_isa.h"
#include "trainbench/measure/flops.h"
#include "trainbench/model/model.h"

namespace trainbench {
namespace {

RunConfig reference_8_layers(const std::string& model) {
  RunConfig c;
  c.model = choice_of<ModelKind>("model", model);
  c.num_layer = 8;
  return c;
}

TEST(Model, ReferenceSizeHasExactly25612544ParametersInBothModels) {
  for (const char* name : {"handcraft", "torch"}) {
    const auto m = make_model(make_plan(reference_8_layers(name)));
    EXPECT_EQ(count_parameters(*m), 25'612'544) << name;
  }
}

TEST(Model, FlopsPerTokenFollowTheStatedFormula) {
  const RunConfig c = reference_8_layers("handcraft");
  EXPECT_EQ(matmul_weight_count(c), 25'296'896);
  EXPECT_DOUBLE_EQ(flops_per_token(c), 164'364'288.0);
  EXPECT_NEAR(flops_per_token(c) * 256 / 1e9, 42.08, 0.005);  // GFLOP per sequence
}

// The memory estimate counts the parameters the models really have, from the flags alone, and
// grows the way the tensors do.
TEST(Model, MemoryEstimateCountsTheModelsParametersAndScalesWithTheShape) {
  EXPECT_EQ(parameter_count(reference_8_layers("handcraft")), 25'612'544);
  RunConfig odd;
  odd.num_layer = 3;
  odd.d_model = 40;
  odd.num_heads = 5;
  odd.ff_dim = 72;
  odd.seq_len = 33;
  for (const char* name : {"handcraft", "torch"}) {
    odd.model = choice_of<ModelKind>("model", name);
    EXPECT_EQ(parameter_count(odd), count_parameters(*make_model(make_plan(odd)))) << name;
  }
  RunConfig c = reference_8_layers("handcraft");
  c.batch_size = 8;
  const MemoryEstimate base = estimate_memory(make_plan(c), parameter_count(c));
  EXPECT_DOUBLE_EQ(base.state_bytes, 16.0 * 25'612'544);
  // per sequence and layer: 10 S d + 3 S ff + 3 H S^2 floats
  EXPECT_DOUBLE_EQ(base.activation_bytes,
                   8 * 8 * 4.0 * (10 * 256 * 512 + 3 * 256 * 2048 + 3 * 8 * 256 * 256));
  c.batch_size = 16;
  EXPECT_DOUBLE_EQ(estimate_memory(make_plan(c), 1).activation_bytes, 2 * base.activation_bytes);
  c.batch_size = 8;
  c.flash = 1;
  EXPECT_LT(estimate_memory(make_plan(c), 1).activation_bytes, base.activation_bytes);
  c.flash = 0;
  c.dtype = Precision::kBFloat16;
  EXPECT_DOUBLE_EQ(estimate_memory(make_plan(c), 1).activation_bytes, base.activation_bytes / 2);
}

// Changing byte t must leave logits at positions <= t unchanged and change some later logit.
void expect_causal(const RunConfig& cfg) {
  torch::manual_seed(0);
  auto model = make_model(make_plan(cfg));
  model->eval();
  torch::NoGradGuard no_grad;
  const int64_t S = cfg.seq_len, B = 2, t = S / 2;
  torch::Tensor x = torch::randint(0, 256, {S, B}, torch::kInt64);
  torch::Tensor y = x.clone();
  y[t] = (x[t] + 1) % 256;
  const torch::Tensor lx = model->forward(x), ly = model->forward(y);
  ASSERT_EQ(lx.sizes(), (std::vector<int64_t>{S, B, 256}));
  EXPECT_TRUE(torch::allclose(lx.narrow(0, 0, t + 1), ly.narrow(0, 0, t + 1), 0, 0))
      << name_of(cfg.model) << " flash=" << cfg.flash << ": a logit at or before t changed";
  EXPECT_GT(
      (lx.narrow(0, t + 1, S - t - 1) - ly.narrow(0, t + 1, S - t - 1)).abs().max().item<float>(),
      1e-4)
      << name_of(cfg.model) << " flash=" << cfg.flash << ": no logit after t changed";
}

TEST(Model, BothModelsAndAttentionPathsAreCausal) {
  RunConfig c = testing::tiny_config();
  c.num_layer = 2;
  c.model = ModelKind::kHandcraft;
  expect_causal(c);
  c.flash = 1;
  expect_causal(c);
  c.flash = 0;
  c.model = ModelKind::kTorch;
  expect_causal(c);
}

TEST(Model, NaiveAndFusedAttentionAgree) {
  RunConfig c = testing::tiny_config();
  c.num_layer = 2;
  c.dropout = 0;
  for (int trial = 0; trial < 3; ++trial) {
    torch::manual_seed(100 + trial);
    auto naive = make_model(make_plan(c));
    c.flash = 1;
    auto fused = make_model(make_plan(c));
    c.flash = 0;
    torch::NoGradGuard no_grad;
    // Same parameters in both (same names by construction).
    auto src = naive->named_parameters();
    for (auto& p : fused->named_parameters()) p.value().copy_(src[p.key()]);
    const torch::Tensor x = torch::randint(0, 256, {c.seq_len, 3}, torch::kInt64);
    const torch::Tensor a = naive->forward(x), b = fused->forward(x);
    const double rel = ((a - b).norm() / a.norm()).item<double>();
    EXPECT_LT(rel, 1e-5) << "trial " << trial;
  }
}

TEST(Model, DropoutIsOffInEvaluationAndOnInTraining) {
  RunConfig c = testing::tiny_config();
  c.dropout = 0.5;
  for (const char* name : {"handcraft", "torch"}) {
    c.model = choice_of<ModelKind>("model", name);
    torch::manual_seed(1);
    auto m = make_model(make_plan(c));
    torch::NoGradGuard no_grad;
    const torch::Tensor x = torch::randint(0, 256, {c.seq_len, 2}, torch::kInt64);
    m->eval();
    EXPECT_TRUE(torch::equal(m->forward(x), m->forward(x))) << name;
    m->train();
    EXPECT_FALSE(torch::equal(m->forward(x), m->forward(x))) << name;
  }
}

TEST(Model, ShorterSequencesWorkAndLongerAreRefused) {
  RunConfig c = testing::tiny_config();
  auto m = make_model(make_plan(c));
  torch::NoGradGuard no_grad;
  EXPECT_EQ(m->forward(torch::zeros({c.seq_len / 2, 2}, torch::kInt64)).size(0), c.seq_len / 2);
  EXPECT_THROW(m->forward(torch::zeros({c.seq_len + 1, 2}, torch::kInt64)), c10::Error);
}

}  // namespace
}  // namespace trainbench
