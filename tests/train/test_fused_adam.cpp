// Fused Adam (train/fused_adam.h) against torch::optim::Adam, its loss-scale handling and its
// state's checkpoint round trip; on CUDA where a GPU is visible, else on the CPU.
#include <gtest/gtest.h>

#include <limits>
#include <sstream>

#include <torch/cuda.h>

#include "kernels/kernel_table.h"
#include "test_util.h"
#include "trainbench/kernels/fused_kernels.h"
#include "trainbench/train/fused_adam.h"

namespace trainbench {
namespace {

namespace k = kernels;

torch::Device kernel_device() {
  return torch::cuda::is_available() ? torch::Device(torch::kCUDA) : torch::Device(torch::kCPU);
}

// Two parameters on `device`, the same values for every call with the same seed.
std::vector<torch::Tensor> make_params(const torch::Device& device) {
  torch::manual_seed(7);
  return {torch::randn({5, 3}).to(device).requires_grad_(),
          torch::randn({7}).to(device).requires_grad_()};
}

TEST(FusedAdam, MatchesTorchAdamOverAFewSteps) {
  const torch::Device device = kernel_device();
  auto a = make_params(device), b = make_params(device);
  torch::optim::Adam reference(a, torch::optim::AdamOptions(1e-2));
  FusedAdamOptions o;
  o.lr = 1e-2;
  FusedAdam fused(b, o);
  torch::manual_seed(11);
  for (int step = 0; step < 5; ++step) {
    for (size_t i = 0; i < a.size(); ++i) {
      const torch::Tensor g = torch::randn(a[i].sizes()).to(device);
      a[i].mutable_grad() = g.clone();
      b[i].mutable_grad() = g.clone();
    }
    reference.step();
    fused.step();
  }
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_TRUE(torch::allclose(a[i], b[i], /*rtol=*/1e-5, /*atol=*/1e-6)) << "parameter " << i;
    EXPECT_FLOAT_EQ(fused.steps()[i].item<float>(), 5.0f);
  }
}

TEST(FusedAdam, UnscalesByGradScaleAndSkipsOnFoundInf) {
  const torch::Device device = kernel_device();
  auto a = make_params(device), b = make_params(device);
  FusedAdam plain(a), scaled(b);
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat).device(device);
  const torch::Tensor scale = torch::full(at::IntArrayRef{}, 8.0, f32),
                      no_inf = torch::zeros(at::IntArrayRef{}, f32),
                      inf = torch::ones(at::IntArrayRef{}, f32);
  for (size_t i = 0; i < a.size(); ++i) {
    a[i].mutable_grad() = torch::ones_like(a[i]);
    b[i].mutable_grad() = torch::full_like(b[i], 8.0);  // the same gradient, scaled by 8
  }
  plain.step();
  scaled.step(scale, no_inf);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(torch::allclose(a[i], b[i]));
  const torch::Tensor kept = b[0].detach().clone();
  scaled.step(scale, inf);  // an inf/nan step: nothing changes, the count is put back
  EXPECT_TRUE(torch::equal(b[0].detach(), kept));
  EXPECT_FLOAT_EQ(scaled.steps()[0].item<float>(), 1.0f);
}

// A weight copy takes the gradient in its own dtype and ends each step holding the new
// parameter rounded (stored as bfloat16/float16, or as float32 on the float32 GEMM route); the
// parameter moves exactly as it would with that gradient given to it in float32. A skipped step
// leaves the copy.
TEST(FusedAdam, AWeightCopyTakesItsGradientAndHoldsTheRoundedParameter) {
  const torch::Device device = kernel_device();
  for (const c10::ScalarType dtype : {torch::kBFloat16, torch::kHalf}) {
    for (const bool stored_f32 : {false, true}) {
      SCOPED_TRACE(std::string(c10::toString(dtype)) + (stored_f32 ? " in float32" : ""));
      auto rounded = [&](const torch::Tensor& p) {
        const torch::Tensor low = p.detach().to(dtype);
        return stored_f32 ? low.to(torch::kFloat) : low;
      };
      auto a = make_params(device), b = make_params(device);
      torch::Tensor copy = rounded(b[0]).requires_grad_();
      FusedAdam plain(a),
          with_copy(b, {}, {copy, torch::Tensor()}, k::format_of(copy.scalar_type(), dtype));
      torch::manual_seed(12);
      for (int step = 0; step < 4; ++step) {
        const torch::Tensor g0 = torch::randn(a[0].sizes()).to(device) * (step == 2 ? 1e-4 : 1),
                            g1 = torch::randn(a[1].sizes()).to(device);
        copy.mutable_grad() = stored_f32 ? g0.clone() : g0.to(dtype);
        a[0].mutable_grad() = copy.grad().to(torch::kFloat);
        a[1].mutable_grad() = g1.clone();
        b[1].mutable_grad() = g1.clone();
        EXPECT_TRUE(with_copy.grads()[0].is_same(copy.grad()));
        plain.step();
        with_copy.step();
        for (size_t i = 0; i < a.size(); ++i) {
          EXPECT_TRUE(torch::equal(a[i], b[i])) << "parameter " << i << ", step " << step;
        }
        EXPECT_TRUE(torch::equal(copy.detach(), rounded(b[0]))) << "step " << step;
      }
      const auto f32 = torch::TensorOptions().dtype(torch::kFloat).device(device);
      const torch::Tensor kept = copy.detach().clone();
      copy.mutable_grad() = torch::full_like(copy, 3.0);
      with_copy.step(torch::ones({}, f32), torch::ones({}, f32));  // found_inf: skipped
      EXPECT_TRUE(torch::equal(copy.detach(), kept));
      with_copy.drop_grads();
      EXPECT_FALSE(copy.grad().defined());
      EXPECT_FALSE(b[1].grad().defined());
    }
  }
}

// --adam_kernel multi: one pass per gradient and copy format (AdamListArgs) moves every
// parameter, moment, count and weight copy to the bits of a pass per parameter, over 30
// parameters (more than a list holds) of two formats (with a 16-bit copy and without), with a
// loss scale and a skipped step. A list of two formats, or of more than kAdamListSize
// parameters, is refused in one line.
TEST(FusedAdam, AListStepIsThePerParameterSteps) {
  const torch::Device device = kernel_device();
  const auto make = [&] {
    torch::manual_seed(8);
    std::vector<torch::Tensor> params, copies;
    for (int i = 0; i < 30; ++i) {
      params.push_back(torch::randn({i % 4 + 1, 3 * i + 1}).to(device).requires_grad_());
      copies.push_back(i % 3 == 0 ? params.back().detach().to(torch::kBFloat16).requires_grad_()
                                  : torch::Tensor());
    }
    return std::pair{params, copies};
  };
  auto [pa, ca] = make();
  auto [pb, cb] = make();
  const k::Format bf16 = k::format_of(torch::kBFloat16);
  FusedAdam per_param(pa, {}, ca, bf16), list(pb, {}, cb, bf16, /*multi_tensor=*/true);
  const auto f32 = torch::TensorOptions().dtype(torch::kFloat).device(device);
  const torch::Tensor scale = torch::full({}, 4.0, f32);
  torch::manual_seed(13);
  for (int step = 0; step < 4; ++step) {
    for (size_t i = 0; i < pa.size(); ++i) {
      const torch::Tensor g = torch::randn(pa[i].sizes()).to(device) * 4;
      (ca[i].defined() ? ca[i] : pa[i]).mutable_grad() =
          ca[i].defined() ? g.to(torch::kBFloat16) : g;
      (cb[i].defined() ? cb[i] : pb[i]).mutable_grad() =
          ca[i].defined() ? g.to(torch::kBFloat16) : g;
    }
    const torch::Tensor inf = torch::full({}, step == 2 ? 1.0 : 0.0, f32);
    per_param.step(scale, inf);
    list.step(scale, inf);
  }
  for (size_t i = 0; i < pa.size(); ++i) {
    EXPECT_TRUE(torch::equal(pa[i], pb[i])) << "parameter " << i;
    EXPECT_TRUE(torch::equal(per_param.exp_avg_sqs()[i], list.exp_avg_sqs()[i])) << i;
    EXPECT_TRUE(torch::equal(per_param.steps()[i], list.steps()[i])) << i;
    if (ca[i].defined()) {
      EXPECT_TRUE(torch::equal(ca[i], cb[i])) << "copy " << i;
    }
  }
  EXPECT_FLOAT_EQ(list.steps()[0].item<float>(), 3.0f);  // the skipped step did not count
  const torch::Tensor p = torch::zeros({4}), g = torch::zeros({4}), one = torch::zeros({});
  const k::AdamArgs plain = k::adam_args(p, p, p, one, g, {}, {}),
                    half = k::adam_args(p, p, p, one, g.to(torch::kHalf), {}, {});
  const std::vector<k::AdamArgs> two{plain, half}, many(k::kAdamListSize + 1, plain);
  EXPECT_NE(testing::error_of([&] { k::adam_list_args(two); })
                .find("fused Adam: a pass takes parameters of one gradient and copy format "
                      "(float32, float32); got float16, float32"),
            std::string::npos);
  EXPECT_NE(testing::error_of([&] {
              k::adam_list_args(many);
            }).find("fused Adam: 1 to 24 parameters a pass, got 25"),
            std::string::npos);
}

// A run with --adam_kernel multi trains the per-parameter run's losses bit for bit (the fused
// model in bfloat16: parameters with weight copies and without).
TEST(FusedAdam, AMultiTensorRunTrainsThePerParameterRunsLosses) {
  RunConfig c = testing::tiny_config();
  c.compile = CompilePath::kFused;
  c.dtype = Precision::kBFloat16;
  c.fused_adam = true;
  const std::vector<double> per_param = testing::train_losses(c, 6);
  c.adam_kernel = AdamKernel::kMulti;
  EXPECT_EQ(testing::train_losses(c, 6), per_param);
}

TEST(FusedAdam, RefusesAWeightCopyOfAnotherTypeOrShape) {
  const std::vector<torch::Tensor> params = make_params(torch::kCPU);
  // The copy against the model's format (storage, values).
  auto refused = [&](const torch::Tensor& copy, c10::ScalarType storage, c10::ScalarType values) {
    try {
      FusedAdam adam(params, {}, {copy, torch::Tensor()}, k::format_of(storage, values));
    } catch (const RunError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  const torch::Tensor p0 = params[0].detach();
  EXPECT_EQ(refused(p0.to(torch::kBFloat16), torch::kBFloat16, torch::kBFloat16), "");
  EXPECT_EQ(refused(p0.clone(), torch::kFloat, torch::kHalf), "");  // the float32 route's copy
  const std::string wrong =
      "fused Adam: a weight copy holds bfloat16 or float16 values, stored as such or in float32 "
      "as its format says";
  EXPECT_EQ(refused(p0.to(torch::kHalf), torch::kBFloat16, torch::kBFloat16), wrong);
  EXPECT_EQ(refused(p0.clone(), torch::kBFloat16, torch::kBFloat16), wrong);
  EXPECT_EQ(refused(p0.clone(), torch::kFloat, torch::kFloat), wrong);  // float32 values
  EXPECT_NE(refused(p0.t().to(torch::kBFloat16), torch::kBFloat16, torch::kBFloat16)
                .find("parameter's shape"),
            std::string::npos);
  // The builder itself: a copy stored otherwise than its format is one line (c10::Error).
  try {
    k::adam_args(p0, p0, p0, torch::zeros({}), p0, p0.to(torch::kHalf),
                 k::format_of(torch::kBFloat16));
    ADD_FAILURE() << "accepted";
  } catch (const c10::Error& e) {
    EXPECT_EQ(e.msg(),
              "fused Adam: a Half weight copy for bfloat16; the copy is stored as its format says");
  }
}

TEST(FusedAdam, StateRoundTripsThroughACheckpointArchive) {
  auto params = make_params(torch::kCPU);
  FusedAdam saved(params);
  for (size_t i = 0; i < params.size(); ++i) {
    saved.exp_avgs()[i].fill_(0.5 + static_cast<double>(i));
    saved.exp_avg_sqs()[i].fill_(2.0);
    saved.steps()[i].fill_(17.0);
  }
  torch::serialize::OutputArchive out;
  saved.save(out);
  std::ostringstream bytes;
  out.save_to(bytes);
  FusedAdam loaded(make_params(torch::kCPU));
  const void* address = loaded.exp_avgs()[0].data_ptr();
  torch::serialize::InputArchive in;
  std::istringstream stream(bytes.str());
  in.load_from(stream);
  loaded.load(in);
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_TRUE(torch::equal(loaded.exp_avgs()[i], saved.exp_avgs()[i]));
    EXPECT_TRUE(torch::equal(loaded.exp_avg_sqs()[i], saved.exp_avg_sqs()[i]));
    EXPECT_EQ(loaded.steps()[i].item<float>(), 17.0f);
  }
  EXPECT_EQ(loaded.exp_avgs()[0].data_ptr(), address);  // copied in place: a graph keeps it
  torch::serialize::InputArchive empty;
  EXPECT_THROW(loaded.load(empty), RunError);
}

}  // namespace
}  // namespace trainbench
