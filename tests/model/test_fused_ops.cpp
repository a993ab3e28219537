// The fused operations (model/fused_ops.h) beyond the kernel table (kernels/test_op_table.cpp,
// which checks every op's values and gradients against its eager composition in every dtype,
// shape and null variant): the ops with nothing to add, dropout masks (statistics,
// determinism per key, forward/backward agreement), bfloat16 against float32 values, the causal
// score blocks against the whole product, and a float64 finite-difference gradient check on tiny
// sizes. The attention's own: test_fused_attention.cpp; the float32 GEMM route's:
// test_float32_route.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>

#include <torch/torch.h>

#include "kernels/kernel_table.h"
#include "trainbench/model/fused_ops.h"

namespace trainbench {
namespace {

using testing::attention_of;
using testing::grads_of;
using testing::leaf;
using testing::rel_err;
using testing::run_format;
using torch::Tensor;

TEST(FusedOps, DropAddWithoutLayerNormOrResidualIsTheDroppedBranch) {
  torch::manual_seed(2);
  const Tensor b = leaf(torch::randn({5, 9}));
  auto out = drop_add_layer_norm({}, b, {}, {}, {}, {}, run_format(torch::kFloat));
  EXPECT_TRUE(torch::equal(out[0], b.detach()));
  EXPECT_TRUE(torch::equal(out[1], b.detach()));
  out[1].sum().backward();
  EXPECT_TRUE(torch::equal(b.grad(), torch::ones_like(b)));
}

TEST(FusedOps, DropoutMasksKeepTheRateAreFixedByTheKeyAndAgreeWithBackward) {
  const double p = 0.1;
  const Tensor r = torch::zeros({256, 512}), b = leaf(torch::ones({256, 512}));
  const auto a1 = drop_add_layer_norm(r, b, {}, {}, {}, {p, 42}, run_format(torch::kFloat));
  const auto a2 = drop_add_layer_norm(r, b, {}, {}, {}, {p, 42}, run_format(torch::kFloat));
  const auto a3 = drop_add_layer_norm(r, b, {}, {}, {}, {p, 43}, run_format(torch::kFloat));
  EXPECT_TRUE(torch::equal(a1[0], a2[0]));
  EXPECT_FALSE(torch::equal(a1[0], a3[0]));
  const Tensor kept = a1[0] != 0;
  const double drop_rate = 1.0 - kept.to(torch::kDouble).mean().item<double>();
  EXPECT_NEAR(drop_rate, p, 0.005);  // 131072 draws: the standard error is 0.0008
  // Kept elements are scaled by 1/(1-p) exactly.
  EXPECT_TRUE(torch::allclose(a1[0].masked_select(kept),
                              torch::full({kept.sum().item<int64_t>()}, 1.0 / (1 - p)), 0, 1e-6));
  a1[0].sum().backward();  // the gradient passes exactly where the forward kept
  EXPECT_TRUE(torch::equal(b.grad() != 0, kept));
}

// Values against the eager composition: kernels/test_op_table.cpp (LINEAR_RELU_DROPOUT).
TEST(FusedOps, LinearReluDropoutDropsAtItsRateAndIsFixedByTheKey) {
  const Tensor x = torch::randn({512, 64}), w = torch::eye(64);
  const Tensor big = torch::full({64}, 10.0);  // every unit active: zeros are dropped ones
  const Tensor out = linear_relu_dropout(x, w, big, {0.25, 7}, run_format(torch::kFloat));
  EXPECT_NEAR((out == 0).to(torch::kDouble).mean().item<double>(), 0.25, 0.01);
  EXPECT_TRUE(
      torch::equal(out, linear_relu_dropout(x, w, big, {0.25, 7}, run_format(torch::kFloat))));
}

TEST(FusedOps, Bfloat16OpsTrackTheirFloat32ValuesWithinBfloat16Tolerance) {
  torch::manual_seed(6);
  const Tensor r = torch::randn({64, 96}), b = torch::randn({64, 96}), g = torch::ones({96}),
               be = torch::zeros({96});
  const Tensor y32 = drop_add_layer_norm(r, b, {}, g, be, {}, run_format(torch::kFloat))[1];
  const Tensor y16 = drop_add_layer_norm(r, b.to(torch::kBFloat16), {}, g, be, {},
                                         run_format(torch::kBFloat16))[1];
  EXPECT_EQ(y16.scalar_type(), torch::kBFloat16);
  EXPECT_LT(rel_err(y16, y32), 2e-2);
  const Tensor x = torch::randn({64, 32}), w = torch::randn({256, 32}) * 0.2,
               hb = torch::zeros({256});
  const Tensor t = torch::randint(0, 256, {64}, torch::kLong);
  const double l32 = head_cross_entropy(x, w, hb, t, run_format(torch::kFloat)).item<double>();
  const double l16 = head_cross_entropy(x.to(torch::kBFloat16), w.to(torch::kBFloat16), hb, t,
                                        run_format(torch::kBFloat16))
                         .item<double>();
  EXPECT_NEAR(l16, l32, 2e-2 * l32);
  const Tensor q = torch::randn({1, 2, 40, 16});
  const Tensor a32 = attention_of(q, q, q);
  const Tensor qb = q.to(torch::kBFloat16);
  EXPECT_LT(rel_err(attention_of(qb, qb, qb), a32), 3e-2);
}

// The score products in blocks below the diagonal (causal_gemm.h) give what the whole products
// give: forward and every input gradient, at block sizes that do and do not divide the length.
TEST(FusedOps, CausalBlocksGiveTheWholeProductsValuesAndGradients) {
  torch::manual_seed(13);
  for (int64_t seq : {1, 3, 7, 130}) {
    auto make = [&] { return leaf(torch::randn({2, 2, seq, 8})); };
    const Tensor q = make(), k = make(), v = make(), up = torch::randn({2, 2, seq, 8});
    (attention_of(q, k, v, GemmRoute::kNative, seq) * up).sum().backward();
    const auto whole = grads_of({q, k, v});
    const Tensor out_whole = attention_of(q, k, v, GemmRoute::kNative, seq).detach();
    for (int64_t block : {1, 2, 64, 128}) {
      const Tensor out = attention_of(q, k, v, GemmRoute::kNative, block);
      EXPECT_LT(rel_err(out, out_whole), 1e-6) << "seq " << seq << " block " << block;
      (out * up).sum().backward();
      const auto g = grads_of({q, k, v});
      for (int i = 0; i < 3; ++i) {
        EXPECT_LT(rel_err(g[i], whole[i]), 1e-5) << "seq " << seq << " block " << block;
      }
    }
  }
}

// Central differences of a scalar function of `x` (float64) against x's analytic gradient.
double max_fd_error(const std::function<Tensor()>& f, const Tensor& x) {
  x.mutable_grad() = Tensor();
  f().backward();
  const Tensor analytic = x.grad().clone();
  double worst = 0;
  torch::NoGradGuard no_grad;
  auto flat = x.view({-1});
  for (int64_t i = 0; i < flat.numel(); ++i) {
    const double v = flat[i].item<double>(), h = 1e-6;
    flat[i] = v + h;
    const double up = f().item<double>();
    flat[i] = v - h;
    const double down = f().item<double>();
    flat[i] = v;
    worst =
        std::max(worst, std::abs((up - down) / (2 * h) - analytic.view({-1})[i].item<double>()));
  }
  return worst;
}

TEST(FusedOps, Float64GradientsMatchFiniteDifferences) {
  torch::manual_seed(7);
  const auto o = torch::TensorOptions().dtype(torch::kDouble);
  const Tensor r = leaf(torch::randn({3, 5}, o)), b = leaf(torch::randn({3, 5}, o)),
               bias = leaf(torch::randn({5}, o)), g = leaf(torch::rand({5}, o) + 0.5),
               be = leaf(torch::randn({5}, o)), up = torch::randn({3, 5}, o);
  auto ln = [&] {
    auto out = drop_add_layer_norm(r, b, bias, g, be, {0.3, 11}, run_format(torch::kDouble));
    return (out[1] * up).sum() + (out[0] * up).sum() * 0.5;
  };
  for (const Tensor& t : {r, b, bias, g, be}) EXPECT_LT(max_fd_error(ln, t), 1e-6);
  const Tensor x = leaf(torch::randn({4, 3}, o)), w = leaf(torch::randn({6, 3}, o)),
               fb = leaf(torch::randn({6}, o)), up2 = torch::randn({4, 6}, o);
  auto ff = [&] {
    return (linear_relu_dropout(x, w, fb, {0.2, 5}, run_format(torch::kDouble)) * up2).sum();
  };
  for (const Tensor& t : {x, w, fb}) EXPECT_LT(max_fd_error(ff, t), 1e-6);
  const Tensor q = leaf(torch::randn({1, 2, 4, 3}, o)), k = leaf(torch::randn({1, 2, 4, 3}, o)),
               v = leaf(torch::randn({1, 2, 4, 3}, o)), up3 = torch::randn({1, 2, 4, 3}, o);
  auto at = [&] { return (attention_of(q, k, v) * up3).sum(); };
  for (const Tensor& t : {q, k, v}) EXPECT_LT(max_fd_error(at, t), 1e-6);
  auto at_blocks = [&] { return (attention_of(q, k, v, GemmRoute::kNative, 3) * up3).sum(); };
  for (const Tensor& t : {q, k, v}) EXPECT_LT(max_fd_error(at_blocks, t), 1e-6);
  const Tensor hx = leaf(torch::randn({5, 4}, o)), hw = leaf(torch::randn({256, 4}, o)),
               hb = leaf(torch::randn({256}, o));
  const Tensor tg = torch::randint(0, 256, {5}, torch::kLong);
  auto ce = [&] { return head_cross_entropy(hx, hw, hb, tg, run_format(torch::kDouble)); };
  for (const Tensor& t : {hx, hw, hb}) EXPECT_LT(max_fd_error(ce, t), 1e-6);
  const Tensor lx = leaf(torch::randn({4, 3}, o)), lw = leaf(torch::randn({5, 3}, o)),
               lb = leaf(torch::randn({5}, o)), up4 = torch::randn({4, 5}, o);
  const auto f64 = run_format(torch::kDouble);
  auto lin = [&] { return (fused_linear(lx, lw, lb, f64, f64) * up4).sum(); };
  for (const Tensor& t : {lx, lw, lb}) EXPECT_LT(max_fd_error(lin, t), 1e-6);
}

}  // namespace
}  // namespace trainbench
