// A CUDA-graph run (gpu/cuda_graph.h) against the eager one; skips without a GPU.
#include <gtest/gtest.h>

#include <torch/cuda.h>

#include "test_util.h"
#include "trainbench/data/batch_loader.h"
#include "trainbench/train/trainer.h"

namespace trainbench {
namespace {

// A tiny run on CUDA with fused Adam (a capture needs it) in `dtype`, three warm-up steps.
RunConfig graph_config_(const char* dtype, CompilePath compile, double dropout) {
  RunConfig c = testing::tiny_config();
  c.device = DeviceChoice::kCuda;
  c.dtype = choice_of<Precision>("dtype", dtype);
  c.compile = compile;
  c.dropout = dropout;
  c.fused_adam = 1;
  c.warmup_steps = 3;
  return c;
}
// {eager's losses, the captured run's} over `steps` steps of c.
std::pair<std::vector<double>, std::vector<double>> eager_and_graphed_(RunConfig c, int steps) {
  const auto eager = testing::train_losses(c, steps, torch::kCUDA);
  c.cuda_graph = 1;
  return {eager, testing::train_losses(c, steps, torch::kCUDA)};
}

TEST(CudaGraph, CapturedRunMatchesTheEagerRunWithin1e3Over50Steps) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  for (const char* dtype : {"float32", "float16", "bfloat16"}) {
    const auto [eager, graphed] =
        eager_and_graphed_(graph_config_(dtype, CompilePath::kNone, 0.0), 50);
    ASSERT_EQ(graphed.size(), eager.size());
    for (size_t i = 0; i < eager.size(); ++i) {
      EXPECT_NEAR(graphed[i], eager[i], 1e-3) << dtype << " step " << i + 1;
    }
    EXPECT_LT(graphed.back(), graphed.front()) << dtype;  // it trained
  }
}

// The fused path captured (--compile fused): its dropout keys follow a step count on the
// device (model/fused_model.cpp), so with dropout the replays draw eager's masks step for step
// (a graph that froze the first step's masks would leave eager's losses from the second step).
TEST(CudaGraph, TheFusedStepCapturedWithDropoutTrainsEagersLosses) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  for (const char* dtype : {"float32", "bfloat16", "float16"}) {
    const auto [eager, graphed] =
        eager_and_graphed_(graph_config_(dtype, CompilePath::kFused, 0.1), 30);
    ASSERT_EQ(graphed.size(), eager.size());
    for (size_t i = 0; i < eager.size(); ++i) {
      EXPECT_NEAR(graphed[i], eager[i], 1e-4 * std::max(1.0, eager[i]))
          << dtype << " step " << i + 1;
    }
  }
}

}  // namespace
}  // namespace trainbench
