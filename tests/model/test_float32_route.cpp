// The fused operations on the float32 GEMM route (`--lowp_gemm float32`, fused_ops.h), beyond
// the kernel table's both-route cases (kernels/test_op_table.cpp): a 16-bit GEMM as the float32
// product rounded once, the two routes against each other, what the route keeps in float32
// storage (the FF hidden, the LayerNorm output) against the 16-bit tensors it replaces, the
// dtype pairs a GEMM op refuses, and the conversions it runs.
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <string>

#include <ATen/record_function.h>
#include <torch/torch.h>

#include "kernels/kernel_table.h"
#include "trainbench/core/errors.h"
#include "trainbench/kernels/fused_kernels.h"
#include "trainbench/kernels/fused_math.h"
#include "trainbench/model/fused_helpers.h"
#include "trainbench/model/fused_ops.h"

namespace trainbench {
namespace {

using testing::attention_of;
using testing::error_of;
using testing::grads_of;
using testing::leaf;
using testing::rel_err;
using testing::run_format;
namespace k = kernels;
constexpr auto kF32Route = GemmRoute::kFloat32;
using torch::Tensor;
// --lowp_gemm float32: a bfloat16 GEMM is the float32 product of the same values, rounded once
// to bfloat16 (forward and backward), and the op's output and gradients stay bfloat16.
TEST(FusedOps, Float32RouteIsTheFloat32ProductOfTheSameOperandsRoundedOnce) {
  torch::manual_seed(3);
  const Tensor x = leaf(torch::randn({37, 33}).to(torch::kBFloat16));
  const Tensor w = leaf(torch::randn({20, 33}).to(torch::kBFloat16));
  const Tensor b = leaf(torch::randn({20}));
  const auto f = run_format(torch::kBFloat16, GemmRoute::kFloat32);
  const Tensor y = fused_linear(x, w, b, f, k::values_format(f));
  EXPECT_EQ(y.scalar_type(), torch::kBFloat16);
  const Tensor xf = x.detach().to(torch::kFloat), wf = w.detach().to(torch::kFloat);
  EXPECT_TRUE(torch::equal(y, torch::addmm(b.detach(), xf, wf.t()).to(torch::kBFloat16)));
  const Tensor dy = torch::randn({37, 20}).to(torch::kBFloat16);
  y.backward(dy);
  EXPECT_EQ(x.grad().scalar_type(), torch::kBFloat16);
  EXPECT_TRUE(torch::equal(x.grad(), torch::mm(dy.to(torch::kFloat), wf).to(torch::kBFloat16)));
  EXPECT_TRUE(torch::equal(w.grad(), torch::mm(dy.to(torch::kFloat).t(), xf).to(torch::kBFloat16)));
  EXPECT_NEAR(b.grad().sum().item<double>(), dy.to(torch::kFloat).sum().item<double>(), 1e-3);
  // float32 and float64 operands take their own GEMM on either route.
  const Tensor x32 = torch::randn({5, 4}), w32 = torch::randn({3, 4});
  const auto f32 = run_format(torch::kFloat, GemmRoute::kFloat32);
  EXPECT_EQ(f32, run_format(torch::kFloat));
  EXPECT_TRUE(torch::equal(fused_linear(x32, w32, {}, f32, f32), torch::mm(x32, w32.t())));
}

// Every op on the two GEMM routes in bfloat16: the same values within bfloat16's rounding
// (forward and every input gradient), and the forward close to the float32 result.
TEST(FusedOps, BothGemmRoutesAgreeInBfloat16ForEveryOp) {
  torch::manual_seed(5);
  const auto bf = torch::kBFloat16;
  using Op = std::function<Tensor(const std::vector<Tensor>&, GemmRoute)>;
  struct Case {
    const char* name;
    std::vector<Tensor> inputs;  // float32 values; the first `low` are cast to bfloat16
    size_t low;
    Op op;
  };
  const Tensor t = torch::randint(0, 256, {48}, torch::kLong);
  const std::vector<Case> cases = {
      {"linear",
       {torch::randn({48, 24}), torch::randn({40, 24}) * 0.2, torch::randn({40})},
       2,
       [](const std::vector<Tensor>& v, GemmRoute r) {
         const auto f = run_format(v[0].scalar_type(), r);
         return fused_linear(v[0], v[1], v[2], f, k::values_format(f));
       }},
      {"linear_relu_dropout",
       {torch::randn({48, 24}), torch::randn({40, 24}) * 0.2, torch::randn({40})},
       2,
       [](const std::vector<Tensor>& v, GemmRoute r) {
         return linear_relu_dropout(v[0], v[1], v[2], {0.2, 9}, run_format(v[0].scalar_type(), r));
       }},
      {"causal_attention",
       {torch::randn({2, 2, 24, 8}), torch::randn({2, 2, 24, 8}), torch::randn({2, 2, 24, 8})},
       3,
       [](const std::vector<Tensor>& v, GemmRoute r) { return attention_of(v[0], v[1], v[2], r); }},
      {"head_cross_entropy",
       {torch::randn({48, 24}), torch::randn({256, 24}) * 0.2, torch::zeros({256})},
       2,
       [&](const std::vector<Tensor>& v, GemmRoute r) {
         return head_cross_entropy(v[0], v[1], v[2], t, run_format(v[0].scalar_type(), r));
       }},
  };
  for (const Case& c : cases) {
    std::vector<Tensor> outs, grads;
    for (int variant = 0; variant < 3; ++variant) {  // float32, bf16 native, bf16 float32 route
      std::vector<Tensor> in;
      for (size_t i = 0; i < c.inputs.size(); ++i) {
        in.push_back(leaf(variant > 0 && i < c.low ? c.inputs[i].to(bf) : c.inputs[i]));
      }
      const Tensor out = c.op(in, variant == 2 ? GemmRoute::kFloat32 : GemmRoute::kNative);
      const std::string name = c.name;
      if (variant == 2 && (name == "linear_relu_dropout" || name == "causal_attention")) {
        // The route's hidden and attention output: float32 storage of bfloat16 values.
        EXPECT_EQ(out.scalar_type(), torch::kFloat);
        EXPECT_TRUE(torch::equal(out, out.to(bf).to(torch::kFloat)));
      } else if (variant > 0 && out.dim() > 0) {
        EXPECT_EQ(out.scalar_type(), bf) << c.name;
      }
      torch::manual_seed(11);  // the same upstream gradient for all three
      const Tensor up = torch::randn(out.sizes(), torch::TensorOptions().dtype(torch::kFloat))
                            .to(out.scalar_type());
      (out.dim() > 0 ? (out * up).sum() : out).backward();
      outs.push_back(out.detach());
      const auto g = grads_of(in);
      grads.insert(grads.end(), g.begin(), g.end());
    }
    EXPECT_LT(rel_err(outs[2], outs[1]), 2e-2) << c.name;
    EXPECT_LT(rel_err(outs[2], outs[0]), 3e-2) << c.name;
    const size_t n = c.inputs.size();
    for (size_t i = 0; i < n; ++i) {
      EXPECT_LT(rel_err(grads[2 * n + i], grads[n + i]), 5e-2) << c.name << " input " << i;
    }
  }
}

// The float32 route's FF hidden in float32 storage: the forward, and the gradients of x, w and
// b, have the bits of the 16-bit path it replaces (the GEMM's output rounded to the dtype, the
// kernels on 16-bit rows, the gradient rounded before its GEMMs), in bfloat16 and float16.
TEST(FusedOps, TheFloat32RoutesHiddenHasTheBitsOfA16BitHidden) {
  for (const auto dt : {torch::kBFloat16, torch::kHalf}) {
    SCOPED_TRACE(c10::toString(dt));
    torch::manual_seed(3);
    const int64_t n = 70, in = 24, f = 40;
    const Tensor x = leaf(torch::randn({n, in}).to(dt));
    const Tensor w = leaf(torch::randn({f, in}).mul(0.2).to(dt).to(torch::kFloat));  // a copy
    const Tensor b = leaf(torch::randn({f}));
    const FusedDropout drop{0.2, 9};
    const Tensor out = linear_relu_dropout(x, w, b, drop, run_format(dt, GemmRoute::kFloat32));
    const Tensor g = torch::randn({n, f});  // the FF-out GEMM's float32 input gradient
    out.backward(g);
    // The 16-bit path by hand: the GEMM rounded, the kernels on dt rows, da rounded.
    const k::Format format = k::format_of(dt, dt, torch::kFloat);
    const Tensor h = torch::mm(x.detach().to(torch::kFloat), w.detach().t()).to(dt);
    const auto fa =
        k::bias_relu_dropout_args(h, b.detach(), format, k::math::dropout_args(drop.p, drop.key));
    k::run(fa, h.device().type());
    EXPECT_TRUE(torch::equal(out.detach(), h.to(torch::kFloat)));
    const Tensor dout = g.to(dt), da = torch::empty_like(h);
    const Tensor partials = torch::empty({k::num_chunks(n), f});
    k::run(k::bias_relu_dropout_grad_args(dout, h, da, partials, format, fa.drop.scale),
           h.device().type());
    const Tensor da32 = da.to(torch::kFloat);
    EXPECT_TRUE(torch::equal(x.grad(), torch::mm(da32, w.detach()).to(dt)));
    EXPECT_TRUE(torch::equal(w.grad(), torch::mm(da32.t(), x.detach().to(torch::kFloat))));
    EXPECT_TRUE(torch::equal(b.grad(), partials.sum(0)));
  }
}

// The float32 route's logits in float32 storage (the GEMM's product, rounded by the kernel as it
// reads it, the gradient rounded as it stores it) against 16-bit logits, which the GEMM rounded
// and the backward converted to float32: the loss and every gradient bit for bit, for a loss
// gradient of 1 and of a loss scale (the bias's from the kernel's column partials, scaled). In
// bfloat16 the softmax's row sums vectorize differently over bfloat16 and float32 rows (as the
// LayerNorm's below): the same values added in another order, so there the loss agrees to
// float32 roundings, and a gradient element whose float32 value lies that close to a bfloat16
// rounding boundary rounds the other way (one row of dx here: 2.8e-6 of its largest value;
// float16 rows go through float buffers either way).
TEST(FusedOps, TheFloat32RoutesLogitsHaveTheBitsOf16BitLogits) {
  for (const auto dt : {torch::kBFloat16, torch::kHalf}) {
    for (const double scale : {1.0, 65536.0}) {
      SCOPED_TRACE(std::string(c10::toString(dt)) + " scale " + std::to_string(scale));
      torch::manual_seed(2);
      const int64_t n = 70, d = 24, v = 256;
      const Tensor x = leaf(torch::randn({n, d}).to(dt).to(torch::kFloat));  // a LayerNorm's y
      const Tensor w = leaf(torch::randn({v, d}).mul(0.3).to(dt).to(torch::kFloat));  // a copy
      const Tensor b = leaf(torch::randn({v}) * 0.1);
      const Tensor targets = torch::randint(0, v, {n}, torch::kLong);
      const Tensor loss = head_cross_entropy(x, w, b, targets, run_format(dt, GemmRoute::kFloat32));
      (loss * scale).backward();
      // The 16-bit logits by hand: the GEMM rounded, the kernel on dt rows, their column sums.
      const Tensor z = torch::mm(x.detach(), w.detach().t()).to(dt);
      const Tensor partials = torch::empty({k::num_chunks(n)});
      k::run(k::head_cross_entropy_args(z, b.detach(), targets, partials, {}, k::format_of(dt, dt)),
             z.device().type());
      // Bit for bit (float16), or to float32's roundings (bfloat16).
      const auto same = [&](const Tensor& got, const Tensor& want) {
        return dt == torch::kHalf ? torch::equal(got, want) : rel_err(got, want) <= 1e-5;
      };
      EXPECT_TRUE(same(loss.detach(), partials.sum() / static_cast<double>(n))) << "loss";
      const Tensor dl = z.to(torch::kFloat) * scale;                   // exact: a power of two
      const Tensor db = fused_detail::column_sums_(z, torch::kFloat);  // the column-sum kernel
      EXPECT_TRUE(same(x.grad(), torch::mm(dl, w.detach()))) << "dx";
      EXPECT_TRUE(same(w.grad(), torch::mm(dl.t(), x.detach()))) << "dw";
      EXPECT_TRUE(same(b.grad(), db * scale)) << "db";
    }
  }
}

// A float16 loss scale of 2^16 (the scaler's first) is not inf in the head's backward on either
// route: the scale multiplies the 16-bit gradient in float32, and the step is not skipped.
TEST(FusedOps, TheHeadTakesAFloat16LossScaleOf65536) {
  torch::manual_seed(2);
  for (const auto route : {GemmRoute::kNative, GemmRoute::kFloat32}) {
    const Tensor x = leaf(torch::randn({6, 8}).to(torch::kHalf));
    const Tensor w = leaf(torch::randn({256, 8}).to(torch::kHalf)), b = leaf(torch::zeros({256}));
    const Tensor targets = torch::randint(0, 256, {6}, torch::kLong);
    (head_cross_entropy(x, w, b, targets, run_format(torch::kHalf, route)) * 65536.0).backward();
    for (const Tensor& g : {x.grad(), w.grad(), b.grad()}) {
      EXPECT_TRUE(torch::isfinite(g).all().item<bool>()) << static_cast<int>(route);
    }
  }
}

// The float32 route's LayerNorm output in float32 storage (drop_add_layer_norm on the route, the
// GEMM ops in the route's format) against a 16-bit LayerNorm output, which each GEMM op converted
// to float32 and whose gradient it rounded; here the LayerNorm rounds y as it stores it and its
// gradient as it reads it. The same bits, but for one thing: the compiler vectorizes the
// backward's row sums (omp simd reductions) differently over bfloat16 and float32 rows, so they
// add in another order and in bfloat16 the gradients through the LayerNorm (resid, branch,
// bias) agree to float32 roundings, not to the bit (float16 rows go through float buffers
// either way: bit for bit).
TEST(FusedOps, TheFloat32RoutesLayerNormOutputHasTheBitsOfA16BitOutput) {
  for (const auto dt : {torch::kBFloat16, torch::kHalf}) {
    SCOPED_TRACE(c10::toString(dt));
    torch::manual_seed(6);
    const int64_t n = 70, d = 24, f = 40;
    const Tensor resid = leaf(torch::randn({n, d})), branch = leaf(torch::randn({n, d}));
    const Tensor bias = leaf(torch::randn({d})), gamma = leaf(torch::rand({d}) + 0.5);
    const Tensor beta = leaf(torch::randn({d})), b = leaf(torch::randn({f}) * 0.1);
    const Tensor w = leaf(torch::randn({f, d}).mul(0.2).to(dt).to(torch::kFloat));  // a copy
    const Tensor head_w = leaf(torch::randn({256, d}).mul(0.2).to(dt).to(torch::kFloat));
    const Tensor head_b = leaf(torch::randn({256}) * 0.1);
    const Tensor targets = torch::randint(0, 256, {n}, torch::kLong);
    const Tensor up_r = torch::randn({n, d}), up_y = torch::randn({n, f});
    const std::vector<Tensor> leaves{resid, branch, bias, gamma, beta, w, b, head_w, head_b};
    constexpr auto kRoute = GemmRoute::kFloat32;
    const auto fmt = run_format(dt, kRoute);  // the GEMM ops' either way
    // consumer(y): a GEMM op on the LayerNorm output, reduced to a scalar.
    const std::vector<std::pair<const char*, std::function<Tensor(const Tensor&)>>> consumers = {
        {"linear",
         [&](const Tensor& y) {
           return (fused_linear(y, w, b, fmt, k::values_format(fmt)).to(torch::kFloat) * up_y)
               .sum();
         }},
        {"linear, its product unrounded",
         [&](const Tensor& y) {
           return (fused_linear(y, w, b, fmt, k::product_format(fmt)) * up_y).sum();
         }},
        {"linear_relu_dropout",
         [&](const Tensor& y) {
           return (linear_relu_dropout(y, w, b, {0.2, 9}, fmt) * up_y).sum();
         }},
        {"head_cross_entropy",
         [&](const Tensor& y) { return head_cross_entropy(y, head_w, head_b, targets, fmt); }},
    };
    for (const auto& [name, consumer] : consumers) {
      SCOPED_TRACE(name);
      // {loss, y, the leaves' gradients} with y in dt (route: native) or float32 storage.
      const auto run = [&, &consumer = consumer](GemmRoute ln_route) {
        const auto h = drop_add_layer_norm(resid, branch, bias, gamma, beta, {0.1, 5},
                                           run_format(dt, ln_route));
        const Tensor loss = consumer(h[1]) + (h[0] * up_r).sum();
        loss.backward();
        std::vector<Tensor> out{loss.detach(), h[1].detach()};
        for (const Tensor& g : grads_of(leaves)) out.push_back(g);
        return out;
      };
      const auto want = run(GemmRoute::kNative), got = run(kRoute);
      EXPECT_EQ(got[1].scalar_type(), torch::kFloat);
      EXPECT_TRUE(torch::equal(got[1], want[1].to(torch::kFloat))) << "y";
      EXPECT_TRUE(torch::equal(got[0], want[0])) << "loss";
      for (size_t i = 2; i < got.size(); ++i) {
        ASSERT_EQ(got[i].defined(), want[i].defined()) << "gradient " << i - 2;
        if (!got[i].defined()) continue;
        const bool summed = dt == torch::kBFloat16 && i - 2 < 3;  // resid, branch, bias
        if (summed) {
          EXPECT_LE(rel_err(got[i], want[i]), 1e-6) << "gradient " << i - 2;
        } else {
          EXPECT_TRUE(torch::equal(got[i], want[i])) << "gradient " << i - 2;
        }
      }
    }
  }
}

// A GEMM op given x in a dtype its run's format does not hold (float32 in a native bfloat16
// run, float16 or float64 in a float32-route bfloat16 run), or asked for an output format other
// than the run's values or the GEMM's product, refuses it in one line naming what it got; a
// run's format needs a resolved route.
TEST(FusedOps, AGemmOpRefusesAnInputDtypeItCannotHold) {
  const Tensor x = torch::randn({4, 8}), w = torch::randn({6, 8});
  const auto bf = run_format(torch::kBFloat16), bf_route = run_format(torch::kBFloat16, kF32Route);
  EXPECT_NE(error_of([&] {
              fused_linear(x, w, {}, bf, bf);
            }).find("fused_linear: x in Float for a run in bfloat16 (BFloat16 only)"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              linear_relu_dropout(x.to(torch::kHalf), w.to(torch::kHalf), torch::zeros({6}), {},
                                  bf_route);
            })
                .find("linear_relu_dropout: x in Half for a run in float32 storage of bfloat16 "
                      "values (Float or BFloat16)"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              head_cross_entropy(x.to(torch::kDouble), torch::randn({256, 8}, torch::kDouble),
                                 torch::zeros({256}, torch::kDouble),
                                 torch::zeros({4}, torch::kLong), bf_route);
            }).find("head_cross_entropy: x in Double for a run in"),
            std::string::npos);
  EXPECT_NE(error_of([&] { fused_linear(x, w, {}, run_format(torch::kFloat), bf); })
                .find("fused_linear: an output in bfloat16 for a run in float32; it is the run's "
                      "values or the GEMM's product"),
            std::string::npos);
  EXPECT_THROW(k::run_format(torch::kBFloat16, GemmRoute::kAuto), RunError);
}

// LibTorch's conversions of a tensor of one shape and dtype, counted by a RecordFunction
// callback (a plain function: what it counts is in these globals).
std::atomic<int> g_conversions{0};
c10::ScalarType g_counted_dtype = torch::kFloat;
std::vector<int64_t> g_counted_shape;
std::unique_ptr<at::ObserverContext> count_conversion(const at::RecordFunction& fn) {
  const auto inputs = fn.inputs();
  if (std::string(fn.name()) == "aten::_to_copy" && !inputs.empty() && inputs[0].isTensor() &&
      inputs[0].toTensor().scalar_type() == g_counted_dtype &&
      inputs[0].toTensor().sizes() == c10::IntArrayRef(g_counted_shape)) {
    ++g_conversions;
  }
  return nullptr;
}

// The float32 route converts each GEMM op's 16-bit input to float32 once: backward keeps the
// copy its forward made (fused_ops.h); and an input in float32 storage of the 16-bit values (the
// run's format) not at all, either way. Counted over a forward and backward of each op.
TEST(FusedOps, TheFloat32RouteConvertsEachGemmInputOnce) {
  const int64_t n = 6, in = 8, out = 12;
  for (const auto dt : {torch::kBFloat16, torch::kHalf}) {
    for (const bool stored32 : {false, true}) {
      SCOPED_TRACE(std::string(c10::toString(dt)) + (stored32 ? ", x float32" : ""));
      torch::manual_seed(4);
      const auto x_dtype = stored32 ? torch::kFloat : dt;
      const auto f = run_format(dt, GemmRoute::kFloat32);
      const Tensor x = leaf(torch::randn({n, in}).to(dt).to(x_dtype));
      const Tensor w = leaf(torch::randn({out, in}).to(dt).to(torch::kFloat));
      const Tensor head_w = leaf(torch::randn({256, in}).to(dt).to(torch::kFloat));
      const Tensor b = leaf(torch::randn({out})), head_b = leaf(torch::randn({256}));
      const Tensor targets = torch::randint(0, 256, {n}, torch::kLong);
      const std::vector<std::pair<const char*, std::function<Tensor()>>> ops = {
          {"linear", [&] { return fused_linear(x, w, b, f, k::values_format(f)).sum(); }},
          {"linear_relu_dropout",
           [&] {
             return linear_relu_dropout(x, w, b, {0.1, 3}, f).sum();
           }},
          {"head_cross_entropy", [&] { return head_cross_entropy(x, head_w, head_b, targets, f); }},
      };
      g_counted_dtype = x_dtype;
      g_counted_shape = {n, in};
      for (const auto& [name, loss] : ops) {
        g_conversions = 0;
        const auto handle = at::addThreadLocalCallback(
            at::RecordFunctionCallback(count_conversion).needsInputs(true));
        loss().backward();
        at::removeCallback(handle);
        EXPECT_EQ(g_conversions.load(), stored32 ? 0 : 1) << name;
        EXPECT_TRUE(x.grad().defined() && x.grad().scalar_type() == x_dtype) << name;
        grads_of({x, w, b, head_w, head_b});
      }
    }
  }
}

}  // namespace
}  // namespace trainbench
