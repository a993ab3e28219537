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

using torch::Tensor;

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

// --gpu_kernels v2 on CUDA trains v1's losses: the same math, other sums along the rows (and
// every column sum in the CPU's order). d_model 256, ff 1024, vocab 256, 128 keys: every v2
// kernel fits (gpu_rows_taken), with dropout.
TEST(FusedGpu, TheV2KernelsTrainTheV1LossesWithin1e3) {
  TB_NEED_GPU();
  RunConfig c = testing::tiny_config();
  c.compile = CompilePath::kFused;
  c.device = DeviceChoice::kCuda;
  c.dtype = Precision::kBFloat16;
  c.d_model = 256;
  c.ff_dim = 1024;
  c.num_heads = 4;
  c.seq_len = 128;
  const auto v1 = testing::train_losses(c, 12, torch::Device(torch::kCUDA));
  c.gpu_kernels = GpuRows::kV2;
  const auto v2 = testing::train_losses(c, 12, torch::Device(torch::kCUDA));
  for (size_t i = 0; i < v1.size(); ++i) EXPECT_NEAR(v2[i], v1[i], 1e-3) << "step " << i + 1;
}

// The process-wide switch: v1 until a scope sets another, each scope putting back the one
// before it (nested, as a trainer inside a test's scope).
TEST(GpuRows, AScopeSetsTheSetAndPutsBackTheOneBefore) {
  EXPECT_EQ(kernels::gpu_rows(), GpuRows::kV1);
  {
    const kernels::GpuRowsScope outer(GpuRows::kV2);
    EXPECT_EQ(kernels::gpu_rows(), GpuRows::kV2);
    {
      const kernels::GpuRowsScope inner(GpuRows::kV1);
      EXPECT_EQ(kernels::gpu_rows(), GpuRows::kV1);
    }
    EXPECT_EQ(kernels::gpu_rows(), GpuRows::kV2);
  }
  EXPECT_EQ(kernels::gpu_rows(), GpuRows::kV1);
}

// Which CUDA kernels a launch takes (host logic: checked here on CPU tensors, whose allocations
// are aligned as CUDA's). v2: LayerNorm and logits rows of whole 256-column groups up to 1024
// columns, ReLU rows and column sums of whole 8-column packs (up to 512 packs where a block
// takes a chunk), heads of a multiple of 8 columns, softmax rows up to 512 keys, every pointer on
// 16 bytes; v1 for the rest, for Adam (no v2), and always under v1.
TEST(GpuRows, V2TakesTheRowsItFitsAndV1TheRest) {
  namespace k = kernels;
  const auto f = k::format_of(torch::kBFloat16, torch::kBFloat16, torch::kFloat);
  const auto ln = [&](int64_t n, int64_t d, int64_t offset = 0) {
    const Tensor branch = torch::zeros({n * d + offset}, torch::kBFloat16).narrow(0, offset, n * d);
    const Tensor acc = torch::zeros({n, d}), vec = torch::zeros({d}), row = torch::zeros({n});
    return k::drop_add_ln_args(acc, branch.view({n, d}), vec, vec, vec, acc, branch.view({n, d}),
                               row, row, f, f, {});
  };
  const auto taken = [](const auto& a) { return k::gpu_rows_taken(a); };
  EXPECT_EQ(taken(ln(64, 512)), GpuRows::kV1);  // the default: v1
  const k::GpuRowsScope v2(GpuRows::kV2);
  for (int64_t d : {256, 512, 768, 1024}) EXPECT_EQ(taken(ln(64, d)), GpuRows::kV2) << d;
  for (int64_t d : {32, 264, 1280, 2048}) EXPECT_EQ(taken(ln(64, d)), GpuRows::kV1) << d;
  EXPECT_EQ(taken(ln(64, 512, 1)), GpuRows::kV1);  // a bfloat16 pointer 2 bytes off
  EXPECT_EQ(taken(ln(64, 512, 8)), GpuRows::kV2);  // 16 bytes off: aligned

  const Tensor grad = torch::zeros({40, 512}), dy = torch::zeros({40, 512}, torch::kBFloat16);
  const Tensor parts = torch::zeros({k::num_chunks(40), 3, 512}), stats = torch::zeros({40});
  EXPECT_EQ(taken(k::drop_add_ln_grad_args(dy, grad, grad, stats, stats, torch::ones({512}), grad,
                                           dy, parts, f, f, {})),
            GpuRows::kV2);

  const auto relu = [&](int64_t cols) {
    return k::bias_relu_dropout_args(torch::zeros({16, cols}, torch::kBFloat16),
                                     torch::zeros({cols}), f, {});
  };
  EXPECT_EQ(taken(relu(2048)), GpuRows::kV2);
  EXPECT_EQ(taken(relu(36)), GpuRows::kV1);

  const auto softmax = [&](int64_t seq) {
    return k::causal_softmax_args(torch::zeros({2 * seq, seq}, torch::kBFloat16), 2 * seq, seq, seq,
                                  f, 1.0);
  };
  EXPECT_EQ(taken(softmax(512)), GpuRows::kV2);
  EXPECT_EQ(taken(softmax(513)), GpuRows::kV1);

  const Tensor logits = torch::zeros({45, 256}, torch::kBFloat16);
  const Tensor targets = torch::zeros({45}, torch::kLong);
  EXPECT_EQ(taken(k::head_cross_entropy_args(logits, torch::zeros({256}), targets,
                                             torch::zeros({k::num_chunks(45)}), {}, f)),
            GpuRows::kV2);
  // A block per chunk, a thread per 8 columns: up to 4096 columns.
  const auto sums = [&](int64_t cols) {
    return k::column_sums_args(torch::zeros({64, cols}, torch::kBFloat16),
                               torch::zeros({k::num_chunks(64), cols}), f);
  };
  EXPECT_EQ(taken(sums(4096)), GpuRows::kV2);
  EXPECT_EQ(taken(sums(4104)), GpuRows::kV1);
  EXPECT_EQ(taken(sums(36)), GpuRows::kV1);
  const Tensor hidden = torch::zeros({64, 2048}, torch::kBFloat16);
  EXPECT_EQ(taken(k::bias_relu_dropout_grad_args(hidden, hidden, hidden,
                                                 torch::zeros({k::num_chunks(64), 2048}), f, 1.0)),
            GpuRows::kV2);
  // The heads: a head's width a multiple of 8.
  const auto heads = [&](int64_t hd) {
    const std::vector<Tensor> parts(3, torch::zeros({2, 8, hd}, torch::kBFloat16));
    return k::heads_args(torch::zeros({8, 3 * 2 * hd}, torch::kBFloat16), parts, 8, 2, true, f);
  };
  EXPECT_EQ(taken(heads(32)), GpuRows::kV2);
  EXPECT_EQ(taken(heads(12)), GpuRows::kV1);
  // Merged into rows with their column sums (a thread per 8 of them): up to 4096 columns.
  const auto merged = [&](int64_t hd) {
    const std::vector<Tensor> parts(3, torch::zeros({2, 8, hd}, torch::kBFloat16));
    return k::heads_args(torch::zeros({8, 3 * 2 * hd}, torch::kBFloat16), parts, 8, 2, false, f, 0,
                         {}, torch::zeros({1, 3 * 2 * hd}));
  };
  EXPECT_EQ(taken(merged(680)), GpuRows::kV2);  // 4080 columns
  EXPECT_EQ(taken(merged(688)), GpuRows::kV1);  // 4128
  // No v2: Adam.
  const Tensor w = torch::zeros({64, 64}), step = torch::zeros({1});
  EXPECT_EQ(taken(k::adam_args(w, w, w, step, w)), GpuRows::kV1);
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
