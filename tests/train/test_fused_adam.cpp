// Fused Adam (train/fused_adam.h) against torch::optim::Adam, its loss-scale handling and its
// state's checkpoint round trip; on CUDA where a GPU is visible, else on the CPU.
#include <gtest/gtest.h>

#include <limits>
#include <sstream>

#include <torch/cuda.h>

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
