// A CUDA-graph run (gpu/cuda_graph.h) against the eager one; skips without a GPU.
#include <gtest/gtest.h>

#include <torch/cuda.h>

#include "test_util.h"
#include "trainbench/data/batch_loader.h"
#include "trainbench/train/trainer.h"

namespace trainbench {
namespace {

TEST(CudaGraph, CapturedRunMatchesTheEagerRunWithin1e3Over50Steps) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  for (const char* dtype : {"float32", "float16", "bfloat16"}) {
    RunConfig c = testing::tiny_config();
    c.device = DeviceChoice::kCuda;
    c.dtype = choice_of<Precision>("dtype", dtype);
    c.dropout = 0;
    c.fused_adam = 1;
    c.warmup_steps = 3;
    const auto eager = testing::train_losses(c, 50, torch::kCUDA);
    c.cuda_graph = 1;
    const auto graphed = testing::train_losses(c, 50, torch::kCUDA);
    ASSERT_EQ(graphed.size(), eager.size());
    for (size_t i = 0; i < eager.size(); ++i) {
      EXPECT_NEAR(graphed[i], eager[i], 1e-3) << dtype << " step " << i + 1;
    }
    EXPECT_LT(graphed.back(), graphed.front()) << dtype;  // it trained
  }
}

}  // namespace
}  // namespace trainbench
