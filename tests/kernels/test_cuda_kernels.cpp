// The fused model on CUDA against the CPU: a fused CUDA model trains the CPU's losses. Each op
// and kernel on CUDA is a case of the kernel table (test_op_table.cpp: against the op's
// LibTorch reference and, in float32, the CPU op; test_kernel_bits.cpp: the kernels against the
// CPU's bits). Every case skips without a GPU.
#include <gtest/gtest.h>

#include <torch/cuda.h>
#include <torch/torch.h>

#ifdef TB_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

#include "test_util.h"
#include "trainbench/kernels/fused_kernels.h"

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

// Which GPUs code built for a TORCH_CUDA_ARCH_LIST runs on (the rule behind the refusal of a
// GPU the kernels have no code for): a native entry within its major version from its minor
// up, a +PTX entry on every later architecture, nothing older.
TEST(CudaArch, AnArchListRunsOnItsOwnAndLaterGpusOnly) {
  using kernels::arch_list_runs_on;
  EXPECT_TRUE(arch_list_runs_on("9.0+PTX", 9, 0));      // H100, H200
  EXPECT_TRUE(arch_list_runs_on("9.0+PTX", 10, 0));     // B200: the PTX, compiled by the driver
  EXPECT_FALSE(arch_list_runs_on("9.0+PTX", 8, 0));     // A100
  EXPECT_FALSE(arch_list_runs_on("9.0+PTX", 8, 9));     // RTX 4090
  EXPECT_FALSE(arch_list_runs_on("9.0", 10, 0));        // no PTX: no later GPU
  EXPECT_TRUE(arch_list_runs_on("8.0;9.0+PTX", 8, 6));  // sm_80 code on an RTX A5000
  EXPECT_TRUE(arch_list_runs_on("8.9 9.0+PTX", 8, 9));  // the build's own spelling
  EXPECT_FALSE(arch_list_runs_on("8.6;9.0+PTX", 8, 0));
  EXPECT_FALSE(arch_list_runs_on("", 9, 0));
  EXPECT_FALSE(arch_list_runs_on("garbage", 9, 0));
}

// On a GPU the build's own list agrees with the driver: the kernels have code for the device
// exactly where the rule says so (here, on a GPU the project's build targets, they do).
TEST(CudaArch, TheDriverAgreesWithTheBuildsArchList) {
  TB_NEED_GPU();
#ifdef TB_WITH_CUDA
  int major = 0, minor = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0), cudaSuccess);
  const bool runs = kernels::arch_list_runs_on(kernels::cuda_arch_list(), major, minor);
  const std::string why = kernels::cuda_kernels_unavailable(0);
  EXPECT_EQ(why.empty(), runs) << kernels::cuda_arch_list() << " on " << major << "." << minor
                               << ": " << why;
#endif
}

}  // namespace
}  // namespace trainbench
