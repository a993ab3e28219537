// The fused model on CUDA against the CPU: a fused CUDA model trains the CPU's losses. Each op
// and kernel on CUDA is a case of the kernel table (test_op_table.cpp: against the op's
// LibTorch reference and, in float32, the CPU op; test_kernel_bits.cpp: the kernels against the
// CPU's bits). Every case skips without a GPU.
#include <gtest/gtest.h>

#include <torch/cuda.h>
#include <torch/torch.h>

#include "test_util.h"

namespace trainbench {
namespace {

#define TB_NEED_GPU()               \
  if (!torch::cuda::is_available()) \
  GTEST_SKIP() << "no GPU visible: the CUDA kernels compile but do not run here"

TEST(FusedGpu, FusedModelTrainsTheCpuLossesWithin1e3) {
  TB_NEED_GPU();
  RunConfig c = testing::tiny_config();
  c.compile = CompilePath::kFused;
  c.dropout = 0.0;
  const auto cpu = testing::train_losses(c, 20);
  c.device = DeviceChoice::kCuda;
  const auto gpu = testing::train_losses(c, 20, torch::Device(torch::kCUDA));
  for (size_t i = 0; i < cpu.size(); ++i) EXPECT_NEAR(gpu[i], cpu[i], 1e-3) << "step " << i + 1;
}

}  // namespace
}  // namespace trainbench
